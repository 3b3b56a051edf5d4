// `goref stacks` against the runtime's own traceback: the stacks fixture parks goroutines in
// known states and writes runtime.Stack(buf, true); goref's dump of the same process (live, and
// from a core of it) must show, for every goroutine parked in the runtime's dump, the same id,
// status, wait time, thread lock, frames (function, file, line, inlined, in order, with the same
// runtime frames hidden and the same elision) and creator. Argument values and +0x offsets are not
// compared: goref may print arguments differently.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "harness/fixture.h"
#include "harness/json.h"
#include "harness/matrix.h"
#include "harness/traceback.h"

namespace goref::testing {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The goroutine that called runtime.Stack is running in the dump and parked afterwards; the
// spinner is running or runnable. Neither can be compared with a later dump.
bool parked(const TbGoroutine& g) {
  return g.status != "running" && g.status != "runnable";
}

std::string frame_key(const TbFrame& f) {
  return f.function + " " + f.file + ":" + std::to_string(f.line) + (f.inlined ? " (inlined)" : "");
}

// Empty if goref's goroutine matches the runtime's, else what differs.
std::string diff_goroutine(const TbGoroutine& want, const TbGoroutine& got) {
  std::ostringstream d;
  if (got.status != want.status) d << "status '" << got.status << "' != '" << want.status << "'; ";
  if (got.wait_minutes != want.wait_minutes) d << "wait minutes differ; ";
  if (got.locked_to_thread != want.locked_to_thread) d << "locked_to_thread differs; ";
  if (got.frames.size() != want.frames.size())
    d << got.frames.size() << " frames != " << want.frames.size() << "; ";
  for (size_t i = 0; i < std::min(got.frames.size(), want.frames.size()); ++i)
    if (frame_key(got.frames[i]) != frame_key(want.frames[i]))
      d << "frame " << i << ": " << frame_key(got.frames[i]) << " != " << frame_key(want.frames[i])
        << "; ";
  if (got.frames_elided != want.frames_elided || got.elided_count != want.elided_count ||
      got.elided_at != want.elided_at)
    d << "frame elision differs; ";
  if (got.created_by.has_value() != want.created_by.has_value()) {
    d << "created_by presence differs; ";
  } else if (want.created_by) {
    const TbFrame& a = *got.created_by;
    const TbFrame& b = *want.created_by;
    if (a.function != b.function || a.file != b.file || a.line != b.line)
      d << "created_by " << frame_key(a) << " != " << frame_key(b) << "; ";
  }
  if (got.created_by_goroutine != want.created_by_goroutine)
    d << "created_by goroutine " << got.created_by_goroutine << " != " << want.created_by_goroutine
      << "; ";
  return d.str();
}

// goref's dump (got) against a reference dump (want): the same set of goroutine ids, and every
// goroutine parked in the reference identical in goref's.
void compare_dumps(const std::vector<TbGoroutine>& want, const std::vector<TbGoroutine>& got,
                   const std::string& what) {
  SCOPED_TRACE(what);
  std::map<uint64_t, const TbGoroutine*> by_id;
  for (const auto& g : got) {
    EXPECT_TRUE(g.unparsed.empty()) << "unparsed lines in goref's output:\n" << format_goroutine(g);
    EXPECT_TRUE(by_id.emplace(g.id, &g).second) << "goroutine " << g.id << " listed twice";
  }
  std::set<uint64_t> want_ids, got_ids;
  for (const auto& g : want) want_ids.insert(g.id);
  for (const auto& g : got) got_ids.insert(g.id);
  std::vector<uint64_t> missing, extra;
  std::set_difference(want_ids.begin(), want_ids.end(), got_ids.begin(), got_ids.end(),
                      std::back_inserter(missing));
  std::set_difference(got_ids.begin(), got_ids.end(), want_ids.begin(), want_ids.end(),
                      std::back_inserter(extra));
  auto list = [](const std::vector<uint64_t>& v) {
    std::string s;
    for (auto id : v) s += " " + std::to_string(id);
    return s;
  };
  EXPECT_TRUE(missing.empty()) << "goroutines missing from goroutine dump:" << list(missing);
  EXPECT_TRUE(extra.empty()) << "goroutines not in the reference dump:" << list(extra);

  size_t compared = 0, mismatched = 0;
  for (const auto& w : want) {
    if (!parked(w)) continue;
    auto it = by_id.find(w.id);
    if (it == by_id.end()) continue;  // reported above
    ++compared;
    std::string d = diff_goroutine(w, *it->second);
    if (!d.empty() && ++mismatched <= 10)
      ADD_FAILURE() << "goroutine " << w.id << ": " << d << "\n--- reference:\n"
                    << format_goroutine(w) << "--- goref:\n"
                    << format_goroutine(*it->second);
  }
  EXPECT_EQ(mismatched, 0u) << "of " << compared << " parked goroutines";
  // The fixture parks 320 goroutines; all but the spinner are compared.
  EXPECT_GE(compared, 320u);
}

// The JSON dump in the shape of the text one (no args, no offsets).
std::vector<TbGoroutine> from_json(const Json& root, std::string& error) {
  std::vector<TbGoroutine> out;
  const Json* gs = root.get("goroutines");
  if (!gs || !gs->array()) {
    error = "no \"goroutines\" array";
    return out;
  }
  for (const Json& j : *gs->array()) {
    TbGoroutine g;
    g.id = static_cast<uint64_t>(j.get("id") ? j.get("id")->num(0) : 0);
    g.status = j.get("status") ? j.get("status")->str() : "";
    // The text form prints the minutes only from 1 on; JSON always has the number.
    int minutes = j.get("wait_minutes") ? static_cast<int>(j.get("wait_minutes")->num(-1)) : -1;
    g.wait_minutes = minutes >= 1 ? minutes : -1;
    g.locked_to_thread = j.get("locked_to_thread") && j.get("locked_to_thread")->boolean();
    if (const Json* fs = j.get("frames"); fs && fs->array()) {
      for (const Json& fj : *fs->array()) {
        // Every logical frame is listed; "hidden" marks those the runtime's dump leaves out.
        if (!fj.get("hidden") || !std::holds_alternative<bool>(fj.get("hidden")->v))
          g.unparsed.push_back("frame without a \"hidden\" boolean");
        if (fj.get("hidden") && fj.get("hidden")->boolean()) continue;
        TbFrame f;
        f.function = fj.get("function") ? fj.get("function")->str() : "";
        f.file = fj.get("file") ? fj.get("file")->str() : "";
        f.line = fj.get("line") ? static_cast<int>(fj.get("line")->num(0)) : 0;
        f.inlined = fj.get("inlined") && fj.get("inlined")->boolean();
        if (!fj.get("pc") || fj.get("pc")->str().rfind("0x", 0) != 0)
          g.unparsed.push_back("frame without a \"pc\" string: " + f.function);
        g.frames.push_back(f);
      }
    } else {
      g.unparsed.push_back("no \"frames\" array");
    }
    if (const Json* cb = j.get("created_by"); cb && cb->get("function")) {
      TbFrame f;
      f.function = cb->get("function")->str();
      f.file = cb->get("file") ? cb->get("file")->str() : "";
      f.line = cb->get("line") ? static_cast<int>(cb->get("line")->num(0)) : 0;
      g.created_by = f;
      g.created_by_goroutine =
          cb->get("goroutine") ? static_cast<uint64_t>(cb->get("goroutine")->num(0)) : 0;
    }
    out.push_back(std::move(g));
  }
  return out;
}

// The fixture running, with the runtime's dump of itself parsed.
struct Session {
  std::string exe;
  std::unique_ptr<RunningFixture> fx;
  std::vector<TbGoroutine> runtime;
};

void start_session(const FixtureParam& p, Session& s) {
  auto exe = build_fixture(p.spec("stacks"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  s.exe = *exe;
  std::string dump = scratch_dir("stacks") + "/runtime-dump.txt";
  auto fx = RunningFixture::start(*exe, {"-dump", dump});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  s.fx = std::move(*fx);
  ASSERT_EQ(s.fx->fact("version"), "go" + p.version);
  s.runtime = parse_traceback(read_file(dump));
  ASSERT_EQ(s.runtime.size(), s.fx->fact_u64("goroutines"));
}

std::vector<std::string> live_args(const Session& s, std::vector<std::string> flags = {}) {
  std::vector<std::string> argv = {GOREF_BINARY, "stacks"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(std::to_string(s.fx->pid()));
  return argv;
}

// The spinner is the one goroutine running when goref reads the process: it must be listed.
void expect_spinner_listed(const Session& s, const std::vector<TbGoroutine>& got) {
  uint64_t spin = s.fx->fact_u64("g.spin");
  auto it =
      std::find_if(got.begin(), got.end(), [&](const TbGoroutine& g) { return g.id == spin; });
  ASSERT_NE(it, got.end()) << "the running goroutine " << spin << " is not listed";
  EXPECT_TRUE(it->status == "running" || it->status == "runnable") << format_goroutine(*it);
}

class StacksByVersion : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(StacksByVersion, LiveMatchesRuntimeDump) {
  Session s;
  ASSERT_NO_FATAL_FAILURE(start_session(GetParam(), s));
  auto r = run_command(live_args(s));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(s.fx->running_untraced());
  auto got = parse_traceback(r.out);
  compare_dumps(s.runtime, got, "goref stacks PID vs runtime.Stack");
  expect_spinner_listed(s, got);
}

TEST_P(StacksByVersion, CoreMatchesLiveAndRuntimeDump) {
  Session s;
  ASSERT_NO_FATAL_FAILURE(start_session(GetParam(), s));
  auto core = gcore(s.fx->pid(), scratch_dir("stacks-core") + "/core");
  ASSERT_TRUE(core.ok()) << core.error().message();
  auto live = run_command(live_args(s));
  auto r = run_command({GOREF_BINARY, "stacks", "--core", s.exe, *core});
  std::filesystem::remove(*core);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto from_core = parse_traceback(r.out);
  compare_dumps(s.runtime, from_core, "goref stacks --core vs runtime.Stack");
  expect_spinner_listed(s, from_core);
  ASSERT_EQ(live.exit_code, 0) << live.err;
  compare_dumps(parse_traceback(live.out), from_core, "goref stacks --core vs goref stacks PID");
}

// --all-frames shows the runtime frames the default hides: every goroutine parked by gopark has
// runtime.gopark on top, and the default frames are the all-frames ones minus hidden ones.
TEST_P(StacksByVersion, AllFramesAddsRuntimeFrames) {
  Session s;
  ASSERT_NO_FATAL_FAILURE(start_session(GetParam(), s));
  auto def = run_command(live_args(s));
  auto all = run_command(live_args(s, {"--all-frames"}));
  ASSERT_EQ(def.exit_code, 0) << def.err;
  ASSERT_EQ(all.exit_code, 0) << all.err;
  std::map<uint64_t, TbGoroutine> all_by_id;
  for (auto& g : parse_traceback(all.out)) all_by_id.emplace(g.id, std::move(g));
  size_t checked = 0;
  for (const auto& g : parse_traceback(def.out)) {
    if (!parked(g) || g.frames_elided) continue;
    auto it = all_by_id.find(g.id);
    ASSERT_NE(it, all_by_id.end()) << "goroutine " << g.id << " missing with --all-frames";
    const TbGoroutine& a = it->second;
    if (g.status != "syscall") {
      ASSERT_FALSE(a.frames.empty());
      EXPECT_EQ(a.frames[0].function, "runtime.gopark") << format_goroutine(a);
    }
    EXPECT_GT(a.frames.size(), g.frames.size()) << format_goroutine(a);
    // Subsequence, in order.
    size_t j = 0;
    for (const auto& f : a.frames)
      if (j < g.frames.size() && frame_key(f) == frame_key(g.frames[j])) ++j;
    EXPECT_EQ(j, g.frames.size()) << "default frames are not a subsequence of --all-frames:\n"
                                  << format_goroutine(g) << "---\n"
                                  << format_goroutine(a);
    ++checked;
  }
  EXPECT_GE(checked, 300u);
}

// --verify walks every stack a second time by frame pointers: on these programs both unwinders
// must agree on every goroutine, and the dump itself is unchanged.
TEST_P(StacksByVersion, VerifyFindsNoDifference) {
  Session s;
  ASSERT_NO_FATAL_FAILURE(start_session(GetParam(), s));
  auto r = run_command(live_args(s, {"--verify"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto got = parse_traceback(r.out);
  EXPECT_NE(r.err.find("verify: 0 of " + std::to_string(got.size()) + " goroutines differ"),
            std::string::npos)
      << r.err;
  compare_dumps(s.runtime, got, "goref stacks --verify vs runtime.Stack");
}

TEST_P(StacksByVersion, JsonMatchesRuntimeDump) {
  Session s;
  ASSERT_NO_FATAL_FAILURE(start_session(GetParam(), s));
  auto r = run_command(live_args(s, {"--format", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json root;
  ASSERT_TRUE(JsonReader(r.out).parse(root)) << "not JSON:\n" << r.out.substr(0, 2000);
  std::string error;
  auto got = from_json(root, error);
  ASSERT_TRUE(error.empty()) << error;
  // JSON lists frames without the runtime's elision: compare elided dumps by their shown frames.
  std::vector<TbGoroutine> want = s.runtime;
  std::map<uint64_t, TbGoroutine*> got_by_id;
  for (auto& g : got) got_by_id[g.id] = &g;
  for (auto& w : want) {
    if (!w.frames_elided) continue;
    auto it = got_by_id.find(w.id);
    if (it == got_by_id.end()) continue;
    TbGoroutine& g = *it->second;
    // Keep goref's innermost and outermost frames as many as the runtime printed.
    // JSON may list every frame or only the ones the text shows; both are accepted.
    size_t outer = w.frames.size() - w.elided_at;
    if (g.frames.size() == w.frames.size() + static_cast<size_t>(w.elided_count))
      g.frames.erase(g.frames.begin() + static_cast<std::ptrdiff_t>(w.elided_at),
                     g.frames.end() - static_cast<std::ptrdiff_t>(outer));
    if (g.frames.size() == w.frames.size()) {
      g.frames_elided = true;
      g.elided_count = w.elided_count;
      g.elided_at = w.elided_at;
    }
  }
  compare_dumps(want, got, "goref stacks --format json vs runtime.Stack");
}

// The oracle itself: the runtime's dump matches itself (also after a round trip through
// format_goroutine), and every kind of difference goref could make is reported.
size_t failures_of(const std::function<void()>& f) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    f();
  }
  size_t n = 0;
  for (int i = 0; i < results.size(); ++i) n += results.GetTestPartResult(i).failed() ? 1 : 0;
  return n;
}

class StacksOracle : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(StacksOracle, DetectsEveryKindOfDifference) {
  Session s;
  ASSERT_NO_FATAL_FAILURE(start_session(GetParam(), s));
  const auto& want = s.runtime;
  EXPECT_EQ(failures_of([&] { compare_dumps(want, want, "self"); }), 0u);
  std::string text;
  for (const auto& g : want) text += format_goroutine(g) + "\n";
  EXPECT_EQ(failures_of([&] { compare_dumps(want, parse_traceback(text), "round trip"); }), 0u);

  auto index_of = [&](const std::string& role) {
    uint64_t id = s.fx->fact_u64("g." + role);
    for (size_t i = 0; i < want.size(); ++i)
      if (want[i].id == id) return i;
    ADD_FAILURE() << "no goroutine for role " << role;
    return size_t{0};
  };
  using Edit = std::function<void(std::vector<TbGoroutine>&)>;
  const std::vector<std::pair<std::string, Edit>> edits = {
      {"line", [&](auto& v) { v[index_of("select")].frames[0].line++; }},
      {"file", [&](auto& v) { v[index_of("select")].frames[0].file += "x"; }},
      {"function", [&](auto& v) { v[index_of("sleep")].frames[0].function = "time.sleep"; }},
      {"inlined", [&](auto& v) { v[index_of("mutex")].frames.back().inlined ^= true; }},
      {"status", [&](auto& v) { v[index_of("cond")].status = "semacquire"; }},
      {"locked", [&](auto& v) { v[index_of("lockedChan")].locked_to_thread = false; }},
      {"minutes", [&](auto& v) { v[index_of("sleep")].wait_minutes = 1; }},
      {"frame dropped", [&](auto& v) { v[index_of("panicking")].frames.pop_back(); }},
      {"frames swapped",
       [&](auto& v) {
         auto& f = v[index_of("panicking")].frames;
         std::swap(f[0], f[1]);
       }},
      {"elision", [&](auto& v) { v[index_of("deep")].elided_count++; }},
      {"creator", [&](auto& v) { v[index_of("crowd")].created_by->line++; }},
      {"creator goroutine", [&](auto& v) { v[index_of("crowd")].created_by_goroutine = 1; }},
      {"goroutine missing", [&](auto& v) { v.erase(v.begin() + index_of("rlock")); }},
      {"goroutine added",
       [&](auto& v) { v.push_back(v[index_of("rlock")]), v.back().id = 1u << 30; }},
  };
  for (const auto& [name, edit] : edits) {
    auto got = want;
    edit(got);
    EXPECT_GT(failures_of([&] { compare_dumps(want, got, name); }), 0u) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Go, StacksOracle, ::testing::ValuesIn(all_versions()), param_name);

INSTANTIATE_TEST_SUITE_P(Go, StacksByVersion,
                         ::testing::ValuesIn(versions_and_modes(
                             {BuildMode::kDefault, BuildMode::kNoOpt, BuildMode::kNoDwarf})),
                         param_name);

// What goref says when it cannot dump: a one-line error naming the problem, exit code 2, and
// the target left running.
class StacksBadInput : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(StacksBadInput, StrippedBinaryNamesWhatIsMissing) {
  auto spec = GetParam().spec("stacks");
  spec.mode = BuildMode::kStripped;
  auto exe = build_fixture(spec);
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe, {"-dump", scratch_dir("stacks-stripped") + "/dump.txt"});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  auto r = run_command({GOREF_BINARY, "stacks", std::to_string((*fx)->pid())});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("symbol table"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-ldflags=-w"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE((*fx)->running_untraced());
}

TEST(StacksBadInputNoVersion, MissingProcessAndNonGoProcess) {
  // A pid that has just exited and been reaped.
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  int st = 0;
  ASSERT_EQ(waitpid(gone, &st, 0), gone);
  auto r = run_command({GOREF_BINARY, "stacks", std::to_string(gone)});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;

  // This test binary is not a Go program.
  r = run_command({GOREF_BINARY, "stacks", std::to_string(getpid())});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("not a Go program"), std::string::npos) << r.err;

  r = run_command({GOREF_BINARY, "stacks"});
  EXPECT_EQ(r.exit_code, 64) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Go, StacksBadInput, ::testing::ValuesIn(all_versions()), param_name);

}  // namespace
}  // namespace goref::testing
