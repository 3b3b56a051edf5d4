// Whatever moment `goref attach` is interrupted, terminated or killed at — attaching, with the
// target stopped while its heap is copied, or analysing after letting it go — the target must
// run on, untraced. The kill times are spread over the whole run (attach to exit takes a few
// hundred milliseconds on this fixture) so that each phase is hit; the property checked does not
// depend on which one was.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

class HeapSignalTest : public ::testing::TestWithParam<int> {};

TEST_P(HeapSignalTest, TargetRunsOnUntracedWhateverThePhase) {
  const int sig = GetParam();
  auto exe = build_fixture({"bigheap", go_versions().back(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe, {"-mb", "96"});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  const std::string pid = std::to_string((*fx)->pid());
  for (int delay_ms : {0, 1, 3, 10, 25, 50, 100, 200, 400}) {
    SCOPED_TRACE("signal after " + std::to_string(delay_ms) + " ms");
    pid_t g = spawn_command({GOREF_BINARY, "attach", pid, "-o", "-"});
    ASSERT_GT(g, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(g, sig);
    int st = 0;
    while (::waitpid(g, &st, 0) < 0 && errno == EINTR) {
    }
    EXPECT_TRUE((*fx)->running_untraced()) << "wait status " << st;
    EXPECT_TRUE((*fx)->tracers().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Goref, HeapSignalTest, ::testing::Values(SIGINT, SIGTERM, SIGKILL),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param == SIGINT    ? std::string("SIGINT")
                                  : i.param == SIGTERM ? std::string("SIGTERM")
                                                       : std::string("SIGKILL");
                         });

}  // namespace
}  // namespace goref::testing
