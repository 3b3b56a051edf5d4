// A target that exits while goref reads it. The test starts `goref stacks` (100,000 goroutines to
// copy) or `goref attach` (a large heap to copy) and kills the target with SIGKILL as soon as
// /proc shows goref tracing it, so the kill lands while goref attaches or copies. goref must end
// promptly (never wait for a stop that cannot come), say that the process exited, write no
// dump or profile (what it read is incomplete), and exit with status 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Outcome {
  bool killed_while_traced = false;
  int exit_code = -1;  // or 128+signal; -2 when goref did not end within the time limit
  std::string out, err;
};

// Runs argv (a goref command reading fx), SIGKILLs the target once some thread of it is traced,
// and waits for goref, for at most 60 s.
Outcome run_and_kill(RunningFixture& fx, const std::vector<std::string>& argv,
                     const std::string& dir) {
  Outcome o;
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  pid_t g = spawn_command(argv, out, err);
  if (g <= 0) return o;
  int st = 0;
  bool ended = false;
  // Polling /proc is the synchronisation here: there is no other signal that goref attached.
  while (!o.killed_while_traced && !ended) {
    if (!fx.tracers().empty()) {
      ::kill(fx.pid(), SIGKILL);
      o.killed_while_traced = true;
    } else {
      ended = ::waitpid(g, &st, WNOHANG) == g;
    }
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!ended) {
    ended = ::waitpid(g, &st, WNOHANG) == g;
    if (ended) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(g, SIGKILL);
      ::waitpid(g, &st, 0);
      o.exit_code = -2;
      return o;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  o.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  o.out = slurp(out);
  o.err = slurp(err);
  return o;
}

// Up to a few tries: the kill must land while goref reads (on these fixtures the copy takes
// hundreds of milliseconds, so the first try almost always does).
void expect_clear_exit(const BuildSpec& spec, const std::vector<std::string>& fixture_args,
                       const std::vector<std::string>& goref_args, const std::string& name,
                       const std::string& output_file) {
  auto exe = build_fixture(spec);
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto fx = RunningFixture::start(*exe, fixture_args);
    ASSERT_TRUE(fx.ok()) << fx.error().message();
    std::vector<std::string> argv = {GOREF_BINARY};
    argv.insert(argv.end(), goref_args.begin(), goref_args.end());
    argv.push_back(std::to_string((*fx)->pid()));
    std::string dir = scratch_dir(name + "-" + std::to_string(attempt));
    if (!output_file.empty()) {
      argv.push_back("-o");
      argv.push_back(dir + "/" + output_file);
    }
    Outcome o = run_and_kill(**fx, argv, dir);
    ASSERT_NE(o.exit_code, -2) << "goref did not end within 60 s after its target was killed";
    ASSERT_TRUE(o.killed_while_traced) << "goref ended before it was seen attached: " << o.err;
    if (o.exit_code == 0) continue;  // it had finished reading just before the kill
    EXPECT_EQ(o.exit_code, 2) << o.err;
    std::string pid = std::to_string((*fx)->pid());
    EXPECT_NE(o.err.find("process " + pid + " exited"), std::string::npos) << o.err;
    // One clear line, not a warning per unreadable goroutine or span.
    EXPECT_LE(std::count(o.err.begin(), o.err.end(), '\n'), 3) << o.err.substr(0, 2000);
    EXPECT_EQ(o.out.find("goroutine "), std::string::npos) << o.out.substr(0, 2000);
    if (!output_file.empty()) {
      EXPECT_FALSE(std::filesystem::exists(dir + "/" + output_file)) << "a profile was written";
    }
    return;
  }
  FAIL() << "goref finished reading before the kill in every attempt";
}

TEST(TargetExit, StacksSaysTheProcessExited) {
  expect_clear_exit({"manystacks", go_versions().back(), BuildMode::kDefault, {}},
                    {"-n", "100000", "-depth", "20"}, {"stacks"}, "exit-stacks", "");
}

TEST(TargetExit, AttachSaysTheProcessExited) {
  expect_clear_exit({"bigheap", go_versions().back(), BuildMode::kDefault, {}}, {"-mb", "256"},
                    {"attach"}, "exit-attach", "profile.pb.gz");
}

}  // namespace
}  // namespace goref::testing
