// goref must never leave its target stopped: when goref is interrupted (SIGINT), terminated
// (SIGTERM) or killed (SIGKILL, which cannot be caught) while it holds every thread of a Go
// program in tracing stop, the program must run on, untraced. `goref debug-hold PID` attaches,
// installs the detach-on-signal handlers, prints STOPPED and waits to be signalled.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "goref/target/procfs.h"
#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

// A child goref process whose stdout we read; killed and reaped if the test bails out early.
class GorefChild {
 public:
  explicit GorefChild(const std::vector<std::string>& args) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(p[1], STDOUT_FILENO);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(p[1]);
    out_ = p[0];
  }
  ~GorefChild() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
    if (out_ >= 0) ::close(out_);
  }
  [[nodiscard]] pid_t pid() const { return pid_; }

  // Reads stdout until a line equal to `line`; false on EOF or after timeout_s without output.
  bool wait_for_line(const std::string& line, int timeout_s, std::string* seen) {
    std::string buf;
    for (;;) {
      size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        std::string l = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        *seen += l + "\n";
        if (l == line) return true;
      }
      struct pollfd pfd = {out_, POLLIN, 0};
      int r = ::poll(&pfd, 1, timeout_s * 1000);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      char tmp[4096];
      ssize_t n = ::read(out_, tmp, sizeof tmp);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buf.append(tmp, static_cast<size_t>(n));
    }
  }

  // Waits for the process to end; the raw wait status.
  int wait() {
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return st;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  bool reaped_ = false;
};

class SignalTest : public ::testing::TestWithParam<int> {};

TEST_P(SignalTest, TargetRunsOnUntracedWhenGorefDies) {
  const int sig = GetParam();
  auto exe = build_fixture({"basic", go_versions().back(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  const pid_t pid = (*fx)->pid();

  GorefChild goref({GOREF_BINARY, "debug-hold", std::to_string(pid)});
  ASSERT_GT(goref.pid(), 0);
  std::string out;
  ASSERT_TRUE(goref.wait_for_line("STOPPED", 60, &out))
      << "goref debug-hold did not print STOPPED; stdout so far:\n"
      << out;

  // Held: every thread in tracing stop, traced by goref.
  auto tids = target::list_threads(Pid(pid));
  ASSERT_TRUE(tids.ok()) << tids.error().message();
  ASSERT_GE(tids->size(), 4u);
  for (Tid t : *tids) {
    auto st = target::thread_state(Pid(pid), t);
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(*st, 't') << "thread " << t.value();
  }
  auto tracers = (*fx)->tracers();
  EXPECT_EQ(tracers.size(), tids->size());
  for (pid_t tr : tracers) EXPECT_EQ(tr, goref.pid());
  EXPECT_FALSE((*fx)->running_untraced());

  ASSERT_EQ(::kill(goref.pid(), sig), 0);
  int status = goref.wait();
  // goref ends by the signal itself (the handler re-raises it with the default action).
  ASSERT_TRUE(WIFSIGNALED(status)) << "wait status " << status;
  EXPECT_EQ(WTERMSIG(status), sig);

  EXPECT_TRUE((*fx)->running_untraced());
  EXPECT_TRUE((*fx)->tracers().empty());
  for (Tid t : *tids) {
    auto st = target::thread_state(Pid(pid), t);
    ASSERT_TRUE(st.has_value()) << "thread " << t.value() << " vanished";
    EXPECT_NE(*st, 't') << "thread " << t.value();
    EXPECT_NE(*st, 'T') << "thread " << t.value();
  }
}

std::string signal_name(const ::testing::TestParamInfo<int>& info) {
  switch (info.param) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGKILL:
      return "SIGKILL";
    case SIGHUP:
      return "SIGHUP";
  }
  return "sig" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Goref, SignalTest, ::testing::Values(SIGINT, SIGTERM, SIGHUP, SIGKILL),
                         signal_name);

}  // namespace
}  // namespace goref::testing
