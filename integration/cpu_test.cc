// goref cpu on the checks fixture's hot loop, for every Go version, default and PIE: a second at
// 10 kHz gives thousands of samples (the runtime's own profiler gives 100 a second), `go tool
// pprof` reads the profile with goref's sample count as its total, the frame-pointer call chains
// reach main.main from nearly every sample, --annotate charges bound checks, and the target runs
// on untraced. Bad input: a pid that does not exist, a process that is not Go, a bad duration;
// and perf_event_open refused by a seccomp filter (as container runtimes' default profiles do),
// which must be one error that names the settings to change.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// How a command is confined: a seccomp filter that fails perf_event_open with deny_errno (and
// allows everything else) unless it is 0; run as user and group uid unless it is 0.
struct Confinement {
  int deny_errno = 0;
  uid_t uid = 0;
};

// Runs argv confined; stdout and stderr are collected through files in dir.
CommandResult run_confined(const std::vector<std::string>& argv, Confinement c,
                           const std::string& dir) {
  const int err = c.deny_errno;
  const std::string out = dir + "/stdout", errf = dir + "/stderr";
  pid_t child = fork();
  if (child == 0) {
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(errf.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(126);
    if (c.uid != 0 && (setgroups(0, nullptr) != 0 || setresgid(c.uid, c.uid, c.uid) != 0 ||
                       setresuid(c.uid, c.uid, c.uid) != 0))
      _exit(124);
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (static_cast<unsigned>(err) & 0xffff)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {static_cast<unsigned short>(std::size(filter)), filter};
    if (err != 0 && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
                     prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0))
      _exit(125);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  CommandResult r;
  int st = 0;
  while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(out);
  r.err = slurp(errf);
  return r;
}

TEST(CpuNotAllowed, SeccompRefusalNamesTheSettings) {
  auto exe = build_fixture({"checks", go_versions().back(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe, {"-serve"});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  const std::string pid = std::to_string((*fx)->pid());
  const std::string dir = scratch_dir("cpu-not-allowed");
  const std::string out = dir + "/cpu.pb.gz";

  // EPERM: what Docker's and containerd's default profiles return for perf_event_open.
  auto denied = run_confined({GOREF_BINARY, "cpu", pid, "-d", "2s", "-o", out}, {EPERM, 0}, dir);
  EXPECT_EQ(denied.exit_code, 2) << denied.err;
  for (const char* name : {"perf_event_open", "perf_event_paranoid", "CAP_PERFMON", "seccomp"})
    EXPECT_NE(denied.err.find(name), std::string::npos) << name << " not named in: " << denied.err;
  EXPECT_EQ(std::count(denied.err.begin(), denied.err.end(), '\n'), 1) << denied.err;

  // ENOSYS: a filter (or a kernel) without the system call at all.
  auto missing = run_confined({GOREF_BINARY, "cpu", pid, "-d", "2s", "-o", out}, {ENOSYS, 0}, dir);
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("seccomp filter does not offer perf_event_open"), std::string::npos)
      << missing.err;

  EXPECT_FALSE(std::filesystem::exists(out)) << "a profile was written";
  EXPECT_TRUE((*fx)->running_untraced());
}

// An unprivileged user may not sample another user's process (perf_event_open checks ptrace
// access): the error says how to get that access.
TEST(CpuNotAllowed, AnotherUsersProcessNamesTheAccessNeeded) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run goref as another user";
  auto exe = build_fixture({"checks", go_versions().back(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe, {"-serve"});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  const std::string dir = scratch_dir("cpu-other-user");
  // The build tree may sit below a directory only root can enter (mktemp -d makes them 0700):
  // run a copy from a directory everyone can.
  char tmpl[] = "/tmp/goref-cpu-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string bin = std::string(tmpl) + "/goref";
  std::filesystem::copy_file(GOREF_BINARY, bin);
  namespace fs = std::filesystem;
  fs::permissions(tmpl, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  auto r =
      run_confined({bin, "cpu", std::to_string((*fx)->pid()), "-d", "2s", "-o", dir + "/cpu.pb.gz"},
                   {0, 65534}, dir);
  fs::remove_all(tmpl);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot read the executable of process " + std::to_string((*fx)->pid())),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("CAP_SYS_PTRACE"), std::string::npos) << r.err;
  EXPECT_TRUE((*fx)->running_untraced());
}

}  // namespace
}  // namespace goref::testing
