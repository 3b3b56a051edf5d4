// The traceback parser against the runtime's own dumps: the stacks fixture, built with every Go
// version, writes runtime.Stack(buf, true) after parking goroutines in known states and states
// their ids and blocking lines itself; the parsed dump must show exactly those facts. A few
// formats no fixture can produce on demand (minutes, crash headers, ancestors, 1.26 labels
// containing "]") are checked on text written after runtime/traceback.go.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/fixture.h"
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

std::vector<uint64_t> ids_of(const std::string& csv) {
  std::vector<uint64_t> out;
  std::istringstream in(csv);
  std::string tok;
  while (std::getline(in, tok, ',')) out.push_back(std::stoull(tok));
  return out;
}

int minor_of(const std::string& version) {  // "1.24.13" -> 24
  return std::stoi(version.substr(version.find('.') + 1));
}

// The status runtime.goroutineheader prints for each role (waitReasonStrings of each version:
// waitReasonSyncWaitGroupWait was added in Go 1.24).
std::string expected_status(const std::string& role, int minor) {
  static const std::map<std::string, std::string> fixed = {
      {"select", "select"},         {"selectNoCases", "select (no cases)"},
      {"mutex", "sync.Mutex.Lock"}, {"rlock", "sync.RWMutex.RLock"},
      {"cond", "sync.Cond.Wait"},   {"sleep", "sleep"},
      {"syscall", "syscall"},       {"lockedSyscall", "syscall"},
  };
  if (role == "waitgroup") return minor >= 24 ? "sync.WaitGroup.Wait" : "semacquire";
  auto it = fixed.find(role);
  return it == fixed.end() ? "chan receive" : it->second;
}

// The frame of each role whose line the fixture states (the blocking call below register()).
const std::map<std::string, std::string>& blocking_function() {
  static const std::map<std::string, std::string> m = {
      {"parkChan", "main.parkChan"},
      {"select", "main.parkSelect"},
      {"selectNoCases", "main.parkSelectNoCases"},
      {"sleep", "main.parkSleep"},
      {"syscall", "main.parkSyscall"},
      {"lockedSyscall", "main.parkSyscall"},
      {"lockedChan", "main.parkLocked"},
      {"recurse", "main.recurse"},
      {"deep", "main.recurse"},
      {"generic", "main.genericWait[...]"},
      {"genericMethod", "main.(*box[...]).wait"},
      {"panicking", "main.panicking.func1"},
      {"labelled", "main.labelled.func1"},
      {"spawner", "main.spawnCrowd"},
  };
  return m;
}

size_t count_function(const TbGoroutine& g, const std::string& fn) {
  return static_cast<size_t>(std::count_if(g.frames.begin(), g.frames.end(),
                                           [&](const TbFrame& f) { return f.function == fn; }));
}

class TracebackParser : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(TracebackParser, RuntimeDumpOfTheStacksFixture) {
  const int minor = minor_of(GetParam().version);
  auto exe = build_fixture(GetParam().spec("stacks"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  std::string dump_path = scratch_dir("tbparse") + "/dump.txt";
  auto fx = RunningFixture::start(*exe, {"-labels", "-dump", dump_path});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  ASSERT_EQ((*fx)->fact("version"), "go" + GetParam().version);
  std::string text = read_file(dump_path);
  auto gs = parse_traceback(text);

  ASSERT_EQ(gs.size(), (*fx)->fact_u64("goroutines"));
  std::map<uint64_t, const TbGoroutine*> by_id;
  for (const auto& g : gs) {
    EXPECT_TRUE(g.unparsed.empty()) << format_goroutine(g);
    EXPECT_FALSE(g.frames.empty()) << format_goroutine(g);
    EXPECT_TRUE(by_id.emplace(g.id, &g).second) << "duplicate goroutine " << g.id;
    EXPECT_EQ(g.wait_minutes, -1) << format_goroutine(g);  // the fixture is seconds old
    EXPECT_FALSE(g.scan);
    for (const auto& f : g.frames) {
      EXPECT_FALSE(f.file.empty()) << format_goroutine(g);
      EXPECT_GT(f.line, 0) << format_goroutine(g);
      EXPECT_EQ(f.inlined, f.offset.empty()) << format_goroutine(g);
    }
  }

  // The goroutine that called runtime.Stack is first, running, and the only one without a
  // creator (it is goroutine 1, whose creator the runtime never prints).
  ASSERT_FALSE(gs.empty());
  EXPECT_EQ(gs[0].id, 1u);
  EXPECT_EQ(gs[0].status, "running");
  EXPECT_EQ(gs[0].frames[0].function, "main.stackAll");
  EXPECT_EQ(gs[0].frames.back().function, "main.main");
  EXPECT_FALSE(gs[0].created_by.has_value());
  for (size_t i = 1; i < gs.size(); ++i) {
    EXPECT_TRUE(gs[i].created_by.has_value()) << format_goroutine(gs[i]);
    EXPECT_NE(gs[i].created_by_goroutine, 0u) << format_goroutine(gs[i]);
  }

  auto roles = (*fx)->facts_with_prefix("g.");
  ASSERT_GE(roles.size(), 20u);
  const uint64_t spawner = (*fx)->fact_u64("g.spawner");
  std::set<uint64_t> role_ids;
  for (const auto& [role, csv] : roles) {
    for (uint64_t id : ids_of(csv)) {
      role_ids.insert(id);
      auto it = by_id.find(id);
      ASSERT_NE(it, by_id.end()) << role << " goroutine " << id << " is not in the dump";
      const TbGoroutine& g = *it->second;
      SCOPED_TRACE(role + "\n" + format_goroutine(g));
      if (role == "spin") {
        EXPECT_TRUE(g.status == "running" || g.status == "runnable") << g.status;
        EXPECT_EQ(g.frames[0].function, "main.spin");
      } else {
        EXPECT_EQ(g.status, expected_status(role, minor));
        EXPECT_EQ(g.status, (*fx)->fact("status." + role));
      }
      EXPECT_EQ(g.locked_to_thread, role == "lockedSyscall" || role == "lockedChan");
      ASSERT_TRUE(g.created_by.has_value());
      EXPECT_EQ(g.created_by->function, role == "crowd" ? "main.spawnCrowd" : "main.spawnAll");
      EXPECT_EQ(g.created_by_goroutine, role == "crowd" ? spawner : 1u);
      EXPECT_EQ(g.created_by->file, g.frames.back().file);
      EXPECT_FALSE(g.created_by->offset.empty());
      // Labels: printed only with GODEBUG=tracebacklabels=1 (Go 1.26+), inside the brackets and
      // always quoted in 1.26, after them and quoted only where needed from 1.27.
      if (role == "labelled" && minor == 26) {
        EXPECT_EQ(g.labels, R"("odd key": "x y", "worker": "a1")");
      } else if (role == "labelled" && minor >= 27) {
        EXPECT_EQ(g.labels, R"("odd key": "x y", worker: a1)");
      } else {
        EXPECT_EQ(g.labels, "");
      }

      auto bf = blocking_function().find(role);
      if (bf != blocking_function().end()) {
        auto f = std::find_if(g.frames.begin(), g.frames.end(),
                              [&](const TbFrame& fr) { return fr.function == bf->second; });
        ASSERT_NE(f, g.frames.end()) << bf->second;
        EXPECT_EQ(f->file + ":" + std::to_string(f->line), (*fx)->fact("line." + role));
      }
    }
  }

  auto one = [&](const std::string& role) -> const TbGoroutine& {
    return *by_id.at(ids_of((*fx)->fact("g." + role)).at(0));
  };

  // Three goroutines whose top frame is main.parkChan, all in chan receive.
  size_t park_chan = 0, crowd = 0;
  for (const auto& g : gs) {
    if (g.frames[0].function == "main.parkChan") {
      ++park_chan;
      EXPECT_EQ(g.status, "chan receive");
    }
    if (g.frames[0].function == "main.crowd") ++crowd;
  }
  EXPECT_EQ(park_chan, 3u);
  EXPECT_EQ(ids_of((*fx)->fact("g.parkChan")).size(), 3u);
  EXPECT_EQ(crowd, 300u);
  EXPECT_EQ(ids_of((*fx)->fact("g.crowd")).size(), 300u);

  // Recursion: exactly 50 main.recurse frames, none elided.
  const TbGoroutine& rec = one("recurse");
  EXPECT_EQ(count_function(rec, "main.recurse"), 50u) << format_goroutine(rec);
  EXPECT_FALSE(rec.frames_elided);
  // 130 frames: the runtime prints the innermost 50, "...30 frames elided...", the outermost 50.
  const TbGoroutine& deep = one("deep");
  EXPECT_TRUE(deep.frames_elided);
  EXPECT_EQ(deep.elided_count, 30);
  EXPECT_EQ(deep.elided_at, 50u);
  EXPECT_EQ(count_function(deep, "main.recurse"), 100u) << format_goroutine(deep);

  // The generic function and the method of a generic type print their shapes as "[...]".
  EXPECT_EQ(one("generic").frames[0].function.rfind("main.genericWait[", 0), 0u);
  EXPECT_EQ(one("generic").frames[0].function, "main.genericWait[...]");
  EXPECT_EQ(one("genericMethod").frames[0].function, "main.(*box[...]).wait");

  // The inlined helper: "(...)", no offset; its caller is a real frame.
  const TbGoroutine& inl = one("inlined");
  ASSERT_GE(inl.frames.size(), 2u);
  EXPECT_EQ(inl.frames[0].function, "main.waitOn");
  EXPECT_TRUE(inl.frames[0].inlined);
  EXPECT_EQ(inl.frames[0].args, "...");
  EXPECT_EQ(inl.frames[1].function, "main.inlineCaller");
  EXPECT_FALSE(inl.frames[1].inlined);

  // Mid-panic: the deferred function, then runtime.gopanic printed as "panic".
  const TbGoroutine& pan = one("panicking");
  ASSERT_GE(pan.frames.size(), 3u);
  EXPECT_EQ(pan.frames[0].function, "main.panicking.func1");
  EXPECT_EQ(pan.frames[1].function, "panic");
  EXPECT_EQ(pan.frames[2].function, "main.panicking");

  // The blocking syscall: read(2) reached through syscall.Read.
  const TbGoroutine& sc = one("syscall");
  EXPECT_EQ(sc.frames[0].function, "syscall.Syscall") << format_goroutine(sc);
  EXPECT_EQ(count_function(sc, "syscall.Read"), 1u);
}

INSTANTIATE_TEST_SUITE_P(Go, TracebackParser, ::testing::ValuesIn(all_versions()), param_name);

// Formats of runtime.goroutineheader and traceback that the fixture cannot produce on demand,
// written as runtime/traceback.go prints them.
TEST(TracebackParserText, HeaderVariants) {
  const char* text =
      "panic: boom\n"
      "\n"
      "goroutine 1 gp=0xc000002380 m=0 mp=0x5a1b40 [running]:\n"
      "main.main()\n"
      "\t/x/main.go:5 +0x25 fp=0xc000070f50 sp=0xc000070f40 pc=0x4581a5\n"
      "\n"
      "goroutine 7 [chan receive, 12 minutes, locked to thread]:\n"
      "main.f(...)\n"
      "\t/x/main.go:9\n"
      "created by main.g in goroutine 1\n"
      "\t/x/main.go:20 +0x1d\n"
      "\n"
      "goroutine 8 [select (no cases) (leaked) (scan), synctest bubble 3]:\n"
      "main.h()\n"
      "\t/x/y z/main.go:11 +0x1\n"
      "\n"
      "goroutine 9 [select labels:{\"k]\": \"v, w\"}]:\n"
      "main.h()\n"
      "\t/x/main.go:12 +0x1\n"
      "\n"
      "goroutine 10 [sleep] {k: v}:\n"
      "time.Sleep(0x3b9aca00)\n"
      "\t/go/src/runtime/time.go:300 +0x10\n"
      "\n"
      "goroutine 11 [running]:\n"
      "\tgoroutine running on other thread; stack unavailable\n"
      "created by main.g in goroutine 1\n"
      "\t/x/main.go:21 +0x2e\n";
  auto gs = parse_traceback(text);
  ASSERT_EQ(gs.size(), 6u);
  EXPECT_EQ(gs[0].id, 1u);
  EXPECT_EQ(gs[0].status, "running");
  ASSERT_EQ(gs[0].frames.size(), 1u);
  EXPECT_EQ(gs[0].frames[0].offset, "+0x25");
  EXPECT_EQ(gs[0].frames[0].line, 5);

  EXPECT_EQ(gs[1].status, "chan receive");
  EXPECT_EQ(gs[1].wait_minutes, 12);
  EXPECT_TRUE(gs[1].locked_to_thread);
  ASSERT_EQ(gs[1].frames.size(), 1u);
  EXPECT_TRUE(gs[1].frames[0].inlined);
  EXPECT_EQ(gs[1].frames[0].offset, "");
  ASSERT_TRUE(gs[1].created_by.has_value());
  EXPECT_EQ(gs[1].created_by->function, "main.g");
  EXPECT_EQ(gs[1].created_by->line, 20);
  EXPECT_EQ(gs[1].created_by_goroutine, 1u);

  EXPECT_EQ(gs[2].status, "select (no cases)");
  EXPECT_TRUE(gs[2].leaked);
  EXPECT_TRUE(gs[2].scan);
  EXPECT_EQ(gs[2].synctest_bubble, 3);
  EXPECT_EQ(gs[2].frames[0].file, "/x/y z/main.go");

  EXPECT_EQ(gs[3].status, "select");
  EXPECT_EQ(gs[3].labels, "\"k]\": \"v, w\"");
  EXPECT_EQ(gs[4].status, "sleep");
  EXPECT_EQ(gs[4].labels, "k: v");
  EXPECT_TRUE(gs[5].stack_unavailable);
  EXPECT_TRUE(gs[5].frames.empty());
  EXPECT_TRUE(gs[5].created_by.has_value());
  for (const auto& g : gs) EXPECT_TRUE(g.unparsed.empty()) << format_goroutine(g);
}

TEST(TracebackParserText, AncestorsAndOddLines) {
  const char* text =
      "goroutine 5 [chan receive]:\n"
      "main.f()\n"
      "\t/x/main.go:9 +0x1\n"
      "created by main.g\n"  // no "in goroutine" (ancestor-style)
      "\t/x/main.go:20 +0x1d\n"
      "[originating from goroutine 1]:\n"
      "main.main(...)\n"
      "\t/x/main.go:30 +0x5\n"
      "...additional frames elided...\n"
      "\n"
      "goroutine 6 [syscall]:\n"
      "non-Go function at pc=0x7f00\n"
      "garbage line\n"
      "main.k()\n"
      "\t/x/main.go:40 +0x9\n";
  auto gs = parse_traceback(text);
  ASSERT_EQ(gs.size(), 2u);
  EXPECT_TRUE(gs[0].has_ancestors);
  EXPECT_EQ(gs[0].frames.size(), 1u);  // ancestors' frames are not the goroutine's
  EXPECT_FALSE(gs[0].frames_elided);
  EXPECT_EQ(gs[0].created_by_goroutine, 0u);
  ASSERT_EQ(gs[1].frames.size(), 2u);
  EXPECT_TRUE(gs[1].frames[0].non_go);
  EXPECT_EQ(gs[1].frames[1].function, "main.k");
  ASSERT_EQ(gs[1].unparsed.size(), 1u);
  EXPECT_EQ(gs[1].unparsed[0], "garbage line");
}

}  // namespace
}  // namespace goref::testing
