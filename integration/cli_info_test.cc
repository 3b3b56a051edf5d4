// `goref info` end to end: the real executable against real Go programs of every supported
// version, and the one-line errors and exit codes for bad input.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

// "key   value" lines of the text output.
std::map<std::string, std::string> fields(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  std::string l;
  while (std::getline(in, l)) {
    auto sp = l.find(' ');
    if (sp == 0 || sp == std::string::npos) continue;
    auto v = l.find_first_not_of(' ', sp);
    m[l.substr(0, sp)] = v == std::string::npos ? "" : l.substr(v);
  }
  return m;
}

size_t count_lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

class InfoByVersion : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(InfoByVersion, LiveProcess) {
  auto exe = build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();

  auto r = run_command({GOREF_BINARY, "info", std::to_string((*fx)->pid())});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto f = fields(r.out);
  EXPECT_EQ(f["process"], std::to_string((*fx)->pid()));
  EXPECT_EQ(f["executable"], *exe);
  EXPECT_EQ(f["go"], (*fx)->fact("version"));
  EXPECT_EQ(f["pie"], GetParam().mode == BuildMode::kPie ? "yes" : "no");
  EXPECT_EQ(f["arch"], "amd64");
  EXPECT_EQ(f["supported"], "yes");
  EXPECT_EQ(f["symbols"], "yes");
  EXPECT_EQ(f["dwarf"].rfind("yes (DWARF ", 0), 0u) << f["dwarf"];
  EXPECT_EQ(f["verdict"], "goref can analyse this program");
  // The fixture runs its main thread plus three locked threads, at least.
  EXPECT_GE(std::stoul(f["threads"]), 4u);
  EXPECT_EQ(f["ptrace"].rfind("ok (all threads stopped for ", 0), 0u) << f["ptrace"];
  EXPECT_TRUE((*fx)->running_untraced());
}

TEST_P(InfoByVersion, CoreFile) {
  auto exe = build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  auto core = gcore((*fx)->pid(), scratch_dir("info-core") + "/core");
  ASSERT_TRUE(core.ok()) << core.error().message();
  auto r = run_command({GOREF_BINARY, "info", "--core", *core, "--exe", *exe});
  std::filesystem::remove(*core);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto f = fields(r.out);
  EXPECT_EQ(f["process"], std::to_string((*fx)->pid()));
  EXPECT_EQ(f["go"], (*fx)->fact("version"));
  EXPECT_EQ(f["pie"], GetParam().mode == BuildMode::kPie ? "yes" : "no");
  EXPECT_EQ(f.count("warning"), 0u) << f["warning"];
  // The fixture's three locked threads are in the core, and its main thread.
  EXPECT_GE(std::stoul(f["threads"]), 4u);
  EXPECT_EQ(f["verdict"], "goref can analyse this program");
}

INSTANTIATE_TEST_SUITE_P(
    Go, InfoByVersion,
    ::testing::ValuesIn(versions_and_modes({BuildMode::kDefault, BuildMode::kPie})), param_name);

class InfoStripped : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(InfoStripped, StrippedExecutableHasNoDwarf) {
  auto spec = GetParam().spec("basic");
  spec.mode = BuildMode::kStripped;
  auto exe = build_fixture(spec);
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto r = run_command({GOREF_BINARY, "info", "--exe", *exe});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // partial: stacks yes, heap no
  auto f = fields(r.out);
  EXPECT_EQ(f["go"], "go" + GetParam().version);
  EXPECT_EQ(f["dwarf"].rfind("no: ", 0), 0u) << f["dwarf"];
  EXPECT_EQ(f["symbols"], "no");
  EXPECT_EQ(f["verdict"], "goroutine dumps only: the heap profile needs DWARF");
}

INSTANTIATE_TEST_SUITE_P(Go, InfoStripped, ::testing::ValuesIn(all_versions()), param_name);

TEST(InfoErrors, NonexistentPid) {
  // pid_max is at most 4194304; this pid cannot exist.
  auto r = run_command({GOREF_BINARY, "info", "4194305"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("process 4194305 does not exist"), std::string::npos) << r.err;
}

TEST(InfoErrors, NotAGoProcess) {
  pid_t child = fork();
  if (child == 0) {
    execl("/bin/sleep", "sleep", "600", nullptr);
    _exit(127);
  }
  auto r = run_command({GOREF_BINARY, "info", std::to_string(child)});
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("is not a Go program"), std::string::npos) << r.err;
}

TEST(InfoErrors, NotAnElfFile) {
  std::string dir = scratch_dir("info-errors");
  std::string path = dir + "/notes.txt";
  std::ofstream(path) << "just some text\n";
  auto r = run_command({GOREF_BINARY, "info", "--exe", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("not an ELF file"), std::string::npos) << r.err;
}

TEST(InfoErrors, ExecutableGivenAsCore) {
  auto exe = build_fixture({"basic", go_versions().back(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto r = run_command({GOREF_BINARY, "info", "--core", *exe, "--exe", *exe});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("not a core file"), std::string::npos) << r.err;
}

TEST(InfoErrors, MissingFile) {
  auto r = run_command({GOREF_BINARY, "info", "--exe", "/nonexistent/goref-test"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/goref-test"), std::string::npos) << r.err;
}

TEST(InfoErrors, UsageErrorsExit64) {
  EXPECT_EQ(run_command({GOREF_BINARY}).exit_code, 64);
  EXPECT_EQ(run_command({GOREF_BINARY, "info"}).exit_code, 64);
  EXPECT_EQ(run_command({GOREF_BINARY, "info", "--no-such-flag"}).exit_code, 64);
  EXPECT_EQ(run_command({GOREF_BINARY, "--version"}).exit_code, 0);
}

}  // namespace
}  // namespace goref::testing
