// goref attach / goref core against the retain fixture, over every supported Go version,
// optimized and not, with Green Tea on and off and Swiss maps off where the version allows it.
// The fixture states the runtime's live heap right after a full GC and, for each of its roots,
// the bytes it keeps reachable; goref must find the same, live and from a core.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness/fixture.h"
#include "harness/json.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

constexpr int kUsageExit = 64;

std::vector<FixtureParam> heap_params() {
  auto out = versions_and_modes({BuildMode::kDefault, BuildMode::kNoOpt});
  auto add = [&](const std::string& minor, const std::string& exp) {
    if (auto v = version_of(minor); !v.empty()) out.push_back({v, BuildMode::kDefault, exp});
  };
  add("1.24", "noswissmap");
  add("1.25", "noswissmap");
  add("1.25", "greenteagc");
  add("1.26", "nogreenteagc");
  add("1.27", "nogreenteagc");
  return out;
}

struct HeapResult {
  double reachable = 0;
  std::map<std::string, double> roots;
  std::vector<std::string> warnings;
};

// Runs goref with args (attach PID or core EXE CORE) and reads its JSON summary.
HeapResult run_goref(std::vector<std::string> args, const std::string& profile) {
  std::vector<std::string> argv = {GOREF_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--format", "json", "-o", profile});
  auto r = run_command(argv);
  HeapResult h;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Json root;
  if (!JsonReader(r.out).parse(root)) {
    ADD_FAILURE() << "not JSON:\n" << r.out.substr(0, 2000) << "\n" << r.err;
    return h;
  }
  if (const Json* re = root.get("reachable")) h.reachable = re->get("bytes")->num(-1);
  if (const Json* rs = root.get("roots"); rs && rs->array())
    for (const Json& j : *rs->array()) h.roots[j.get("name")->str()] = j.get("bytes")->num(-1);
  if (const Json* ws = root.get("warnings"); ws && ws->array())
    for (const Json& j : *ws->array()) h.warnings.push_back(j.str());
  return h;
}

// Every stated root within ±5% of what the fixture says it retains; the total within ±3% of the
// runtime's live heap.
void check(const RunningFixture& f, const HeapResult& h, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_TRUE(h.warnings.empty()) << h.warnings.front();
  double live = static_cast<double>(f.fact_u64("heap.live"));
  ASSERT_GT(live, 0);
  EXPECT_NEAR(h.reachable, live, live * 0.03) << "reachable vs runtime/metrics /gc/heap/live";
  auto roots = f.facts_with_prefix("root.");
  ASSERT_GE(roots.size(), 10u);
  for (const auto& [name, bytes] : roots) {
    double want = std::stod(bytes);
    // A goroutine frame's root is its function, or "Func.var" for what DWARF places in it.
    double got = 0;
    bool found = false;
    for (const auto& [root, b] : h.roots)
      if (root == name || root.starts_with(name + ".")) {
        got += b;
        found = true;
      }
    if (!found) {
      ADD_FAILURE() << "no root " << name << " (wants " << want << " bytes)";
      continue;
    }
    EXPECT_NEAR(got, want, want * 0.05) << name;
  }
  // The parked goroutine's local slice is found by its DWARF name.
  auto local = h.roots.find("main.holdLocal.local");
  ASSERT_NE(local, h.roots.end()) << "main.holdLocal.local not found by its DWARF location";
  EXPECT_EQ(local->second, 1 << 20);
}

// `go tool pprof` reads the profile, and its total is what goref reported.
void check_pprof(const std::string& profile, double reachable) {
  auto tc = go_toolchain(version_of("1.26"));
  if (!tc.ok()) tc = go_toolchain(go_versions().back());
  ASSERT_TRUE(tc.ok()) << tc.error().message();
  auto r = run_command({tc->go(), "tool", "pprof", "-raw", profile});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // -raw lists every sample as "objects bytes: locations"; sum the bytes.
  double total = 0;
  size_t samples = 0;
  std::istringstream in(r.out);
  std::string line;
  bool in_samples = false;
  while (std::getline(in, line)) {
    if (line.starts_with("Samples:")) {
      in_samples = true;
      std::getline(in, line);  // the column header
      continue;
    }
    if (line.starts_with("Locations")) break;
    if (!in_samples) continue;
    std::istringstream ls(line);
    double objects = 0, bytes = 0;
    std::string colon;
    if (ls >> objects >> bytes) {
      total += bytes;
      ++samples;
    }
  }
  EXPECT_GT(samples, 10u) << r.out.substr(0, 2000);
  EXPECT_EQ(total, reachable) << "pprof's total of inuse_space";
}

class HeapByVersion : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(HeapByVersion, LiveAndCoreMatchTheRuntime) {
  auto exe = build_fixture(GetParam().spec("retain"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto f = RunningFixture::start(*exe);
  ASSERT_TRUE(f.ok()) << f.error().message();
  std::string dir = scratch_dir("heap-" + param_name({GetParam(), 0}));

  HeapResult live = run_goref({"attach", std::to_string((*f)->pid())}, dir + "/live.pb.gz");
  check(**f, live, "live");
  EXPECT_TRUE((*f)->running_untraced()) << "the target must be resumed and untraced";
  check_pprof(dir + "/live.pb.gz", live.reachable);

  auto core = gcore((*f)->pid(), dir + "/core");
  ASSERT_TRUE(core.ok()) << core.error().message();
  HeapResult fromcore = run_goref({"core", *exe, *core}, dir + "/core.pb.gz");
  check(**f, fromcore, "core");
  std::filesystem::remove(*core);
}

INSTANTIATE_TEST_SUITE_P(Go, HeapByVersion, ::testing::ValuesIn(heap_params()), param_name);

// Without DWARF there is nothing to type the heap with: a clear error that says how to get it,
// and the target left running.
TEST(HeapBadInput, ExecutableWithoutDwarf) {
  auto exe = build_fixture({"retain", go_versions().back(), BuildMode::kNoDwarf, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto f = RunningFixture::start(*exe);
  ASSERT_TRUE(f.ok()) << f.error().message();
  auto r = run_command({GOREF_BINARY, "attach", std::to_string((*f)->pid()), "-o", "-"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no DWARF"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-w"), std::string::npos) << "should say how to get DWARF: " << r.err;
  EXPECT_TRUE((*f)->running_untraced());
}

// The usual production setup: the running binary is stripped, an unstripped copy of the same
// build is kept. --exe reads DWARF from the copy; a copy of another build is refused.
TEST(HeapBadInput, StrippedProcessWithUnstrippedCopy) {
  auto exe = build_fixture({"retain", go_versions().back(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  std::string stripped = scratch_dir("heap-stripped") + "/retain";
  auto s = run_command({"objcopy", "--strip-debug", *exe, stripped});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto f = RunningFixture::start(stripped);
  ASSERT_TRUE(f.ok()) << f.error().message();
  std::string pid = std::to_string((*f)->pid());
  auto plain = run_command({GOREF_BINARY, "attach", pid, "-o", "-"});
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_NE(plain.err.find("--exe"), std::string::npos) << plain.err;
  auto with =
      run_command({GOREF_BINARY, "attach", pid, "--exe", *exe, "-o", "-", "--format", "json"});
  EXPECT_EQ(with.exit_code, 0) << with.err;
  EXPECT_NE(with.out.find("\"main.registry\""), std::string::npos);
  auto other = build_fixture({"retain", go_versions().back(), BuildMode::kNoOpt, {}});
  ASSERT_TRUE(other.ok());
  auto wrong = run_command({GOREF_BINARY, "attach", pid, "--exe", *other, "-o", "-"});
  EXPECT_EQ(wrong.exit_code, kUsageExit) << wrong.err;
  EXPECT_NE(wrong.err.find("not the executable"), std::string::npos) << wrong.err;
  EXPECT_TRUE((*f)->running_untraced());
}

TEST(HeapBadInput, NonexistentProcess) {
  auto r = run_command({GOREF_BINARY, "attach", "999999999", "-o", "-"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
}

TEST(HeapBadInput, CoreOfAnotherExecutable) {
  auto exe = build_fixture({"retain", go_versions().back(), BuildMode::kDefault, {}});
  auto other = build_fixture({"basic", go_versions().back(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok() && other.ok());
  auto f = RunningFixture::start(*exe);
  ASSERT_TRUE(f.ok()) << f.error().message();
  auto core = gcore((*f)->pid(), scratch_dir("heap-badcore") + "/core");
  ASSERT_TRUE(core.ok()) << core.error().message();
  auto r = run_command({GOREF_BINARY, "core", *other, *core, "-o", "-"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_FALSE(r.err.empty());
  std::filesystem::remove(*core);
}

}  // namespace
}  // namespace goref::testing
