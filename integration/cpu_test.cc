// goref cpu on the checks fixture's hot loop, for every Go version, default and PIE: a second at
// 10 kHz gives thousands of samples (the runtime's own profiler gives 100 a second), `go tool
// pprof` reads the profile with goref's sample count as its total, the frame-pointer call chains
// reach main.main from nearly every sample, --annotate charges bound checks, and the target runs
// on untraced. Bad input: a pid that does not exist, a process that is not Go, a bad duration.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "harness/fixture.h"
#include "harness/matrix.h"
#include "harness/pprof_top.h"
#include "harness/text.h"

namespace goref::testing {
namespace {

class CpuByVersion : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(CpuByVersion, SamplesTheHotLoopAt10kHz) {
  auto exe = build_fixture(GetParam().spec("checks"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe, {"-serve"});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  std::string out = scratch_dir("cpu-" + param_name({GetParam(), 0})) + "/cpu.pb.gz";
  auto r = run_command({GOREF_BINARY, "cpu", std::to_string((*fx)->pid()), "-d", "1s", "--hz",
                        "10000", "--annotate", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE((*fx)->running_untraced());

  long samples = number_before(r.out, " samples in");
  ASSERT_GT(samples, 0) << r.out;
  // One busy thread for a second at 10 kHz: about 10,000 samples, fewer only if the machine is
  // busy with other tests; 2,000 is already twenty times the runtime's own profiler.
  EXPECT_GE(samples, 2000) << r.out;

  auto top = pprof_top(out);
  ASSERT_TRUE(top.ok()) << top.error().message();
  EXPECT_EQ(top->total, samples) << top->text;
  EXPECT_GE(top->row("main.main").cum, samples * 9 / 10) << "call chains stop short of main.main\n"
                                                         << top->text;
  EXPECT_GE(top->row("main.hot").cum, samples * 9 / 10) << top->text;
  PprofRow checks = top->row("runtime.boundcheck (inline)");
  EXPECT_GT(checks.flat, 0) << top->text;
  EXPECT_EQ(number_after(r.out, "in bound checks"), checks.flat) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Go, CpuByVersion,
    ::testing::ValuesIn(versions_and_modes({BuildMode::kDefault, BuildMode::kPie})), param_name);

TEST(CpuBadInput, MissingProcessNotGoAndBadDuration) {
  auto none = run_command({GOREF_BINARY, "cpu", "4194305", "-d", "1s"});
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("4194305"), std::string::npos) << none.err;

  pid_t child = fork();
  if (child == 0) {
    execl("/bin/sleep", "sleep", "30", nullptr);
    _exit(127);
  }
  auto notgo = run_command({GOREF_BINARY, "cpu", std::to_string(child), "-d", "100ms"});
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(notgo.exit_code, 2) << notgo.err;
  EXPECT_NE(notgo.err.find("Go"), std::string::npos) << notgo.err;

  auto bad = run_command({GOREF_BINARY, "cpu", "1", "-d", "soon"});
  EXPECT_EQ(bad.exit_code, 64) << bad.err;
  EXPECT_NE(bad.err.find("--duration"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace goref::testing
