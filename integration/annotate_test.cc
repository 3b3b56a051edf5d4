// goref annotate on the checks fixture, for every Go version, default and PIE:
// - static recall and precision: the check sites `--list-checks` finds in the fixture's source
//   are, line for line, the ones the compiler itself reports (-d=ssa/check_bce/debug=1 for bound
//   checks, -d=nil "generated nil check" for explicit nil checks), and every call of a
//   bounds-panic function anywhere in the binary is the failure side of a listed check;
// - a profile round trip: a CPU profile the fixture's own runtime wrote of its bound-check-heavy
//   loop, annotated, opens in `go tool pprof` with runtime.boundcheck (inline) holding exactly
//   the samples goref reports, the same total, and a caller use of a check location untouched;
// - bad input: a profile of another build, a file that is not a profile, a non-Go executable.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "goref/binary/elf_file.h"
#include "goref/profile/pprof.h"
#include "harness/fixture.h"
#include "harness/matrix.h"
#include "harness/pprof_top.h"
#include "harness/text.h"

namespace goref::testing {
namespace {

constexpr const char* kCompilerReports = "-d=ssa/check_bce/debug=1 -d=nil";

struct Line {
  std::string kind;  // bounds / nil
  int line = 0;
  bool operator<(const Line& o) const { return std::tie(kind, line) < std::tie(o.kind, o.line); }
  bool operator==(const Line& o) const { return kind == o.kind && line == o.line; }
};

std::string str(const std::set<Line>& s) {
  std::string out;
  for (const auto& l : s) out += l.kind + ":" + std::to_string(l.line) + " ";
  return out;
}

// The compiler's reports for the fixture's own file: "./main.go:46:47: Found IsInBounds",
// "./main.go:110:10: generated nil check".
std::set<Line> compiler_checks(const std::string& log) {
  std::set<Line> out;
  const std::string prefix = "./main.go:";
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind(prefix, 0) != 0) continue;
    size_t line_end = l.find(':', prefix.size());
    if (line_end == std::string::npos || line_end == prefix.size()) continue;
    int line = std::stoi(l.substr(prefix.size(), line_end - prefix.size()));
    if (l.ends_with(": Found IsInBounds") || l.ends_with(": Found IsSliceInBounds"))
      out.insert({"bounds", line});
    else if (l.ends_with(": generated nil check"))
      out.insert({"nil", line});
  }
  return out;
}

// goref's list, for the fixture's main.go: "bounds<TAB>0x…<TAB>FUNC<TAB>FILE:LINE[<TAB>inlined…]".
std::set<Line> goref_checks(const std::string& out, size_t* total) {
  std::set<Line> s;
  std::istringstream in(out);
  *total = 0;
  for (std::string l; std::getline(in, l);) {
    ++*total;
    std::vector<std::string> f;
    std::istringstream ls(l);
    for (std::string x; std::getline(ls, x, '\t');) f.push_back(x);
    EXPECT_GE(f.size(), 4u) << l;
    if (f.size() < 4) continue;
    EXPECT_TRUE(f[0] == "bounds" || f[0] == "nil") << l;
    EXPECT_EQ(f[1].rfind("0x", 0), 0u) << l;
    std::string suffix = "/integration/fixtures/checks/main.go:";
    auto at = f[3].find(suffix);
    if (at == std::string::npos) continue;
    s.insert({f[0], std::stoi(f[3].substr(at + suffix.size()))});
  }
  return s;
}

class AnnotateByVersion : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(AnnotateByVersion, ListChecksMatchesTheCompiler) {
  auto exe = build_fixture(GetParam().spec("checks"), kCompilerReports);
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto log = fixture_build_output(*exe);
  ASSERT_TRUE(log.ok());
  std::set<Line> want = compiler_checks(*log);
  // The fixture has over twenty bound checks and five explicit nil checks; far fewer means the
  // compiler's report format changed, not that goref is right.
  ASSERT_GE(want.size(), 25u) << *log;
  ASSERT_GE(std::count_if(want.begin(), want.end(), [](auto& l) { return l.kind == "nil"; }), 4);

  auto r = run_command({GOREF_BINARY, "annotate", "-v", "--exe", *exe, "--list-checks"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t total = 0;
  std::set<Line> got = goref_checks(r.out, &total);
  std::set<Line> missed, extra;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                      std::inserter(missed, missed.end()));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(),
                      std::inserter(extra, extra.end()));
  EXPECT_TRUE(missed.empty()) << "the compiler reports checks goref does not find: " << str(missed);
  EXPECT_TRUE(extra.empty()) << "goref lists checks the compiler does not report: " << str(extra);
  EXPECT_GT(total, 500u) << "the runtime and standard library have hundreds of checks";

  // Every bounds-panic call in the whole binary is reached from a listed check.
  const std::string marker = " calls of bounds-panic";
  size_t at = r.err.find(marker);
  ASSERT_NE(at, std::string::npos) << r.err;
  long reached = number_before(r.err, " of ", r.err.rfind(" of ", at));
  long calls = number_before(r.err, marker);
  EXPECT_EQ(reached, calls) << r.err;
  EXPECT_GT(calls, 500) << r.err;
}

// A CPU profile of the hot loop, written by the fixture's runtime at 1000 Hz.
Result<std::string> cpu_profile(const std::string& exe, const std::string& dir) {
  std::string out = dir + "/cpu.pprof";
  auto r = run_command({exe, "-cpuprofile", out, "-hz", "1000", "-seconds", "1"});
  if (r.exit_code != 0) return Error(Errc::kIo, "fixture failed: " + r.err);
  return out;
}

long summary_count(const std::string& out, const std::string& what) {
  return number_after(out, "in " + what + " checks");
}

TEST_P(AnnotateByVersion, ProfileRoundTrip) {
  auto exe = build_fixture(GetParam().spec("checks"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  std::string dir = scratch_dir("annotate-" + param_name({GetParam(), 0}));
  auto in = cpu_profile(*exe, dir);
  ASSERT_TRUE(in.ok()) << in.error().message();

  std::string out = dir + "/annotated.pb.gz";
  auto r = run_command({GOREF_BINARY, "annotate", "--exe", *exe, "-o", out, *in});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  long bounds = summary_count(r.out, "bound");
  EXPECT_GT(bounds, 0) << r.out;  // about 40% of the loop's samples sit on its checks
  EXPECT_EQ(summary_count(r.out, "nil"), 0) << r.out;
  EXPECT_NE(r.out.find("main.hot"), std::string::npos) << r.out;

  auto before = pprof_top(*in);
  auto after = pprof_top(out);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_GT(before->total, 0) << before->text;
  EXPECT_EQ(after->total, before->total) << after->text;
  EXPECT_EQ(after->row("runtime.boundcheck (inline)").flat, bounds) << after->text;

  // Idempotent: annotating the annotated profile changes nothing.
  std::string twice = dir + "/twice.pb.gz";
  auto r2 = run_command({GOREF_BINARY, "annotate", "--exe", *exe, "-o", twice, out});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(summary_count(r2.out, "bound"), bounds);
  auto p1 = profile::read_profile_file(out);
  auto p2 = profile::read_profile_file(twice);
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(p1->SerializeAsString(), p2->SerializeAsString());
}

// Go's profiler never uses one location as both leaf and caller, other writers may: the caller
// use must keep the location's own lines, so goref clones the location for its leaf uses.
TEST_P(AnnotateByVersion, CallerUseOfACheckLocationIsCloned) {
  auto exe = build_fixture(GetParam().spec("checks"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  std::string dir = scratch_dir("annotate-clone-" + param_name({GetParam(), 0}));
  auto in = cpu_profile(*exe, dir);
  ASSERT_TRUE(in.ok()) << in.error().message();
  auto prof = profile::read_profile_file(*in);
  ASSERT_TRUE(prof.ok());
  // Annotate once to learn which leaf locations are checks, then build the input again with
  // each such location also used as the caller of a new sample.
  std::string probe = dir + "/probe.pb.gz";
  ASSERT_EQ(run_command({GOREF_BINARY, "annotate", "--exe", *exe, "-o", probe, *in}).exit_code, 0);
  auto annotated = profile::read_profile_file(probe);
  ASSERT_TRUE(annotated.ok());
  std::set<uint64_t> check_locs;
  std::set<uint64_t> pseudo;
  for (const auto& f : annotated->function())
    if (annotated->string_table(int(f.name())).rfind("runtime.", 0) == 0 &&
        annotated->string_table(int(f.name())).find("check") != std::string::npos)
      pseudo.insert(f.id());
  for (const auto& l : annotated->location())
    if (l.line_size() > 0 && pseudo.count(l.line(0).function_id())) check_locs.insert(l.id());
  ASSERT_FALSE(check_locs.empty());
  uint64_t loc = *check_locs.begin();
  auto* s = prof->add_sample();
  s->add_location_id(prof->location(0).id() == loc ? prof->location(1).id()
                                                   : prof->location(0).id());
  s->add_location_id(loc);
  s->add_value(1);
  s->add_value(1000000);
  std::string edited = dir + "/edited.pb.gz";
  ASSERT_TRUE(profile::write_profile_file(*prof, edited).ok());

  std::string out = dir + "/out.pb.gz";
  auto r = run_command({GOREF_BINARY, "annotate", "--exe", *exe, "-o", out, edited});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto res = profile::read_profile_file(out);
  ASSERT_TRUE(res.ok());
  // The caller use still points at the original location, whose lines are the original ones.
  const auto& last = res->sample(res->sample_size() - 1);
  ASSERT_EQ(last.location_id(1), loc);
  for (const auto& l : res->location())
    if (l.id() == loc) {
      ASSERT_GT(l.line_size(), 0);
      for (const auto& f : res->function()) {
        if (f.id() != l.line(0).function_id()) continue;
        EXPECT_EQ(res->string_table(int(f.name())).find("check"), std::string::npos)
            << "the caller use of a check location was edited";
      }
    }
  EXPECT_NE(r.out.find("in bound checks"), std::string::npos);
}

std::vector<FixtureParam> annotate_params() {
  return versions_and_modes({BuildMode::kDefault, BuildMode::kPie});
}

INSTANTIATE_TEST_SUITE_P(Go, AnnotateByVersion, ::testing::ValuesIn(annotate_params()), param_name);

// Names come from gopclntab, not .symtab: a binary built with -ldflags='-s -w' has the same
// check sites, functions and lines as the unstripped build.
TEST(AnnotateStripped, SameSitesWithoutSymbolTable) {
  for (const char* minor : {"1.21", "1.27"}) {
    auto full = build_fixture({"checks", version_of(minor), BuildMode::kDefault, {}});
    auto stripped = build_fixture({"checks", version_of(minor), BuildMode::kStripped, {}});
    ASSERT_TRUE(full.ok() && stripped.ok());
    auto elf = binary::ElfFile::open(*stripped);
    ASSERT_TRUE(elf.ok());
    EXPECT_FALSE((*elf)->has_symtab());
    // pc is column 2; the rest must match exactly.
    auto sites = [](const std::string& exe) {
      auto r = run_command({GOREF_BINARY, "annotate", "--exe", exe, "--list-checks"});
      EXPECT_EQ(r.exit_code, 0) << r.err;
      std::multiset<std::string> out;
      std::istringstream in(r.out);
      for (std::string l; std::getline(in, l);) {
        auto a = l.find('\t'), b = l.find('\t', a + 1);
        out.insert(l.substr(0, a) + l.substr(b));
      }
      return out;
    };
    auto want = sites(*full);
    EXPECT_GT(want.size(), 500u);
    EXPECT_EQ(sites(*stripped), want) << minor;
  }
}

TEST(AnnotateBadInput, ProfileOfAnotherBuild) {
  auto a = build_fixture(BuildSpec{"checks", version_of("1.27"), BuildMode::kDefault, {}});
  auto b = build_fixture(BuildSpec{"checks", version_of("1.21"), BuildMode::kDefault, {}});
  ASSERT_TRUE(a.ok() && b.ok());
  std::string dir = scratch_dir("annotate-bad");
  auto in = cpu_profile(*a, dir);
  ASSERT_TRUE(in.ok()) << in.error().message();
  auto r = run_command({GOREF_BINARY, "annotate", "--exe", *b, "-o", dir + "/x.pb.gz", *in});
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_NE(r.err.find("another build"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(dir + "/x.pb.gz").good()) << "nothing is written on error";
}

TEST(AnnotateBadInput, NotAProfileAndNotGo) {
  auto exe = build_fixture(BuildSpec{"checks", version_of("1.27"), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok());
  std::string dir = scratch_dir("annotate-bad2");
  std::string junk = dir + "/junk.pprof";
  std::ofstream(junk) << "this is not a profile\n";
  auto r = run_command({GOREF_BINARY, "annotate", "--exe", *exe, junk});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("junk.pprof"), std::string::npos) << r.err;

  auto missing = run_command({GOREF_BINARY, "annotate", "--exe", *exe, dir + "/none.pprof"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("none.pprof"), std::string::npos) << missing.err;

  auto notgo = run_command({GOREF_BINARY, "annotate", "--exe", "/bin/true", "--list-checks"});
  EXPECT_EQ(notgo.exit_code, 2) << notgo.err;
  EXPECT_NE(notgo.err.find("Go"), std::string::npos) << notgo.err;
}

}  // namespace
}  // namespace goref::testing
