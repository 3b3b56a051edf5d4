// LiveTarget against real Go programs of every supported version, default and PIE builds: the
// facts the fixture prints about itself (global addresses and values, its threads and their TLS
// bases, a large buffer with a known pattern) must be what goref reads, the threads must be in
// tracing stop exactly while attached, and the process must run on untraced afterwards.
#include "goref/target/live_target.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "goref/target/procfs.h"
#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

using target::AttachOptions;
using target::LiveTarget;

// thread.<tid>.tls_base facts: tid → fs_base.
std::map<pid_t, uint64_t> thread_facts(const RunningFixture& fx) {
  std::map<pid_t, uint64_t> out;
  for (const auto& [k, v] : fx.facts_with_prefix("thread.")) {
    auto dot = k.find('.');
    if (dot == std::string::npos || k.substr(dot + 1) != "tls_base") continue;
    out[std::stoi(k.substr(0, dot))] = std::stoull(v, nullptr, 0);
  }
  return out;
}

bool contains_tid(const std::vector<Tid>& tids, pid_t t) {
  for (Tid x : tids)
    if (x.value() == t) return true;
  return false;
}

// The state letter of every thread /proc lists for pid.
std::map<pid_t, char> thread_states(pid_t pid) {
  std::map<pid_t, char> out;
  auto tids = target::list_threads(Pid(pid));
  if (!tids) return out;
  for (Tid t : *tids) {
    auto st = target::thread_state(Pid(pid), t);
    out[t.value()] = st ? *st : '?';
  }
  return out;
}

std::string read_marker(target::Memory& mem, uint64_t addr, Result<void>* status) {
  std::vector<std::byte> buf(32);
  *status = mem.read_exact(Addr(addr), buf);
  std::string s(reinterpret_cast<const char*>(buf.data()), buf.size());
  return s.substr(0, s.find('\0'));
}

// byte(i*7 + i>>12), as the fixture fills its -bigmem buffer (Go: >> binds tighter than +).
uint8_t pattern(uint64_t i) {
  return static_cast<uint8_t>(i * 7 + (i >> 12));
}

class LiveTargetTest : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(LiveTargetTest, StopsReadsAndReleasesTheProcess) {
  auto exe = build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fxr = RunningFixture::start(*exe, {"-bigmem=64"});
  ASSERT_TRUE(fxr.ok()) << fxr.error().message();
  RunningFixture& fx = **fxr;
  const pid_t pid = fx.pid();
  const auto tls = thread_facts(fx);
  ASSERT_EQ(tls.size(), 3u);

  {
    auto t = LiveTarget::attach(Pid(pid));
    ASSERT_TRUE(t.ok()) << t.error().message();
    LiveTarget& lt = **t;
    EXPECT_EQ(lt.kind(), target::Kind::kLive);
    EXPECT_EQ(lt.arch(), target::host_arch());
    EXPECT_EQ(lt.pid(), Pid(pid));
    EXPECT_TRUE(lt.stopped());

    // Every thread of the process is in tracing stop, traced by us.
    auto states = thread_states(pid);
    ASSERT_GE(states.size(), 4u);  // the leader, the 3 locked threads, runtime threads
    for (const auto& [tid, st] : states) EXPECT_EQ(st, 't') << "thread " << tid;
    auto tracers = fx.tracers();
    EXPECT_EQ(tracers.size(), states.size());
    for (pid_t tr : tracers) EXPECT_EQ(tr, getpid());

    // Globals at the addresses the program printed.
    Result<void> st;
    EXPECT_EQ(read_marker(lt, fx.fact_u64("global.main.gMarker"), &st), "goref-marker-basic");
    EXPECT_TRUE(st.ok()) << st.error().message();
    auto counter = lt.read<uint64_t>(Addr(fx.fact_u64("global.main.gCounter")));
    ASSERT_TRUE(counter.ok()) << counter.error().message();
    EXPECT_EQ(*counter, 0x1122334455667788u);

    // Threads: the leader first, every thread the program reported, all stopped threads.
    auto threads = lt.threads();
    ASSERT_FALSE(threads.empty());
    EXPECT_EQ(threads.front(), Tid(pid));
    EXPECT_EQ(threads.size(), states.size());
    for (const auto& [tid, base] : tls) {
      EXPECT_TRUE(contains_tid(threads, tid)) << "thread " << tid;
      auto regs = lt.registers(Tid(tid));
      ASSERT_TRUE(regs.ok()) << regs.error().message();
      EXPECT_EQ(regs->tls_base, base) << "thread " << tid;
      EXPECT_EQ(regs->arch, target::host_arch());
      EXPECT_NE(regs->pc, 0u);
      EXPECT_NE(regs->sp, 0u);
      EXPECT_GT(regs->ngpr, 0u);
    }
    auto none = lt.registers(Tid(1 << 23));
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().code(), Errc::kNotFound);

    // Mappings hold the globals and the buffer; /proc/PID/exe is the fixture.
    for (const char* key : {"global.main.gMarker", "global.main.gCounter", "bigmem.addr"}) {
      const auto* m = lt.find_mapping(Addr(fx.fact_u64(key)));
      ASSERT_NE(m, nullptr) << key;
      EXPECT_TRUE(m->read && m->write) << key;
    }
    EXPECT_EQ(lt.executable_path(), "/proc/" + std::to_string(pid) + "/exe");
    EXPECT_EQ(std::filesystem::canonical(lt.executable_path()),
              std::filesystem::canonical(fx.exe()));

    // The whole 64 MiB buffer in one read, byte for byte.
    const uint64_t big = fx.fact_u64("bigmem.addr");
    const size_t big_len = fx.fact_u64("bigmem.len");
    ASSERT_EQ(big_len, size_t{64} << 20);
    std::vector<std::byte> buf(big_len);
    auto n = lt.read_some(Addr(big), buf);
    ASSERT_TRUE(n.ok()) << n.error().message();
    ASSERT_EQ(*n, big_len);
    size_t mismatches = 0;
    for (size_t i = 0; i < big_len; ++i) mismatches += static_cast<uint8_t>(buf[i]) != pattern(i);
    EXPECT_EQ(mismatches, 0u);

    // A read running off the end of a mapping stops at its last byte; one inside a hole fails.
    const auto& maps = lt.mappings();
    const target::Mapping* edge = nullptr;
    for (size_t i = 0; i + 1 < maps.size() && !edge; ++i)
      if (maps[i].read && maps[i].range.size() >= 4096 && maps[i].path.rfind("[v", 0) != 0 &&
          maps[i + 1].range.start > maps[i].range.end + 4096)
        edge = &maps[i];
    ASSERT_NE(edge, nullptr);
    std::vector<std::byte> small(200);
    auto part = lt.read_some(edge->range.end - 100, small);
    ASSERT_TRUE(part.ok()) << part.error().message();
    EXPECT_EQ(*part, 100u);
    auto hole = lt.read_some(edge->range.end + 8, small);
    ASSERT_FALSE(hole.ok());
    EXPECT_EQ(hole.error().code(), Errc::kUnmapped);
    EXPECT_NE(hole.error().message().find((edge->range.end + 8).hex()), std::string::npos);

    EXPECT_GT(lt.pause().count(), 0);
  }
  // Destroyed: every thread runs on, nobody traces it.
  EXPECT_TRUE(fx.running_untraced());
  for (const auto& [tid, st] : thread_states(pid)) EXPECT_NE(st, 't') << "thread " << tid;
}

TEST_P(LiveTargetTest, ExplicitDetachKeepsMemoryReadable) {
  auto exe = build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  auto t = LiveTarget::attach(Pid((*fx)->pid()));
  ASSERT_TRUE(t.ok()) << t.error().message();
  auto tid = (*t)->threads().back();
  ASSERT_TRUE((*t)->registers(tid).ok());

  ASSERT_TRUE((*t)->detach().ok());
  ASSERT_TRUE((*t)->detach().ok());  // idempotent
  EXPECT_FALSE((*t)->stopped());
  EXPECT_TRUE((*fx)->running_untraced());
  auto pause = (*t)->pause();
  EXPECT_GT(pause.count(), 0);
  EXPECT_EQ((*t)->pause(), pause);  // frozen once detached

  Result<void> st;
  EXPECT_EQ(read_marker(**t, (*fx)->fact_u64("global.main.gMarker"), &st), "goref-marker-basic");
  EXPECT_TRUE(st.ok());
  auto regs = (*t)->registers(tid);
  ASSERT_FALSE(regs.ok());
  EXPECT_EQ(regs.error().code(), Errc::kUnsupported);
}

TEST_P(LiveTargetTest, WithoutStopReadsWhileTheProcessRuns) {
  auto exe = build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  auto t = LiveTarget::attach(Pid((*fx)->pid()), AttachOptions{.stop = false});
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_FALSE((*t)->stopped());

  Result<void> st;
  EXPECT_EQ(read_marker(**t, (*fx)->fact_u64("global.main.gMarker"), &st), "goref-marker-basic");
  EXPECT_TRUE(st.ok());
  auto counter = (*t)->read<uint64_t>(Addr((*fx)->fact_u64("global.main.gCounter")));
  ASSERT_TRUE(counter.ok());
  EXPECT_EQ(*counter, 0x1122334455667788u);

  auto threads = (*t)->threads();
  ASSERT_FALSE(threads.empty());
  EXPECT_EQ(threads.front(), Tid((*fx)->pid()));
  for (const auto& [tid, base] : thread_facts(**fx)) EXPECT_TRUE(contains_tid(threads, tid));
  EXPECT_NE((*t)->find_mapping(Addr((*fx)->fact_u64("global.main.gMarker"))), nullptr);

  for (const auto& [tid, state] : thread_states((*fx)->pid()))
    EXPECT_NE(state, 't') << "thread " << tid;
  EXPECT_TRUE((*fx)->running_untraced());
  auto regs = (*t)->registers(threads.front());
  ASSERT_FALSE(regs.ok());
  EXPECT_EQ(regs.error().code(), Errc::kUnsupported);
  EXPECT_EQ((*t)->pause().count(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Go, LiveTargetTest,
    ::testing::ValuesIn(versions_and_modes({BuildMode::kDefault, BuildMode::kPie})), param_name);

// Attach races with threads being created and ending (the threadchurn fixture makes thousands
// a second): every attach must stop every thread that exists once it returns — a missed one
// would keep running and cloning — and release all of them.
class LiveTargetChurnTest : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(LiveTargetChurnTest, StopsEveryThreadWhileThreadsComeAndGo) {
  auto exe = build_fixture(GetParam().spec("threadchurn"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  const pid_t pid = (*fx)->pid();
  for (int i = 0; i < 20; ++i) {
    auto t = LiveTarget::attach(Pid(pid));
    ASSERT_TRUE(t.ok()) << t.error().message();
    auto held = (*t)->threads();
    auto states = thread_states(pid);
    for (const auto& [tid, st] : states) {
      // An untraced thread caught inside exit (it could not be seized) is reaped by the kernel
      // on its own; 'Z'/'X' is that thread on its way out, not a running one.
      if (st == 'Z' || st == 'X') continue;
      EXPECT_EQ(st, 't') << "attach " << i << ": thread " << tid;
      EXPECT_TRUE(contains_tid(held, tid)) << "attach " << i << ": thread " << tid;
    }
    // Stopped means stopped: the thread list cannot change while attached.
    EXPECT_EQ(thread_states(pid), states) << "attach " << i;
    ASSERT_TRUE((*t)->detach().ok());
    EXPECT_TRUE((*fx)->tracers().empty()) << "attach " << i;
  }
  EXPECT_TRUE((*fx)->running_untraced());
}

INSTANTIATE_TEST_SUITE_P(Go, LiveTargetChurnTest, ::testing::ValuesIn(all_versions()), param_name);

// One Go version is enough for the error paths: they do not depend on the program.
std::string newest_version() {
  return go_versions().back();
}

TEST(LiveTargetErrors, NonexistentPid) {
  auto t = LiveTarget::attach(Pid(1 << 23));  // beyond pid_max (at most 2^22)
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code(), Errc::kNoSuchProcess);
  EXPECT_EQ(t.error().message(), "process 8388608 does not exist");
}

TEST(LiveTargetErrors, ReadAfterTheProcessWasKilled) {
  auto exe = build_fixture({"basic", newest_version(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  const pid_t pid = (*fx)->pid();
  auto t = LiveTarget::attach(Pid(pid));
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  // Detaching finds every thread killed and reaps them, so the address space is gone after it.
  auto d = (*t)->detach();
  EXPECT_TRUE(d.ok()) << d.error().message();
  std::vector<std::byte> buf(8);
  auto n = (*t)->read_some(Addr((*fx)->fact_u64("global.main.gCounter")), buf);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code(), Errc::kNoSuchProcess);
  EXPECT_NE(n.error().message().find("process " + std::to_string(pid) + " exited"),
            std::string::npos)
      << n.error().message();
}

TEST(LiveTargetErrors, SecondTracerIsToldWhoHoldsTheProcess) {
  auto exe = build_fixture({"basic", newest_version(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  const pid_t pid = (*fx)->pid();
  auto first = LiveTarget::attach(Pid(pid));
  ASSERT_TRUE(first.ok()) << first.error().message();

  auto second = LiveTarget::attach(Pid(pid));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), Errc::kPermission);
  EXPECT_NE(second.error().message().find("already traced by process " + std::to_string(getpid())),
            std::string::npos)
      << second.error().message();
  // The failed attach released nothing of the first one.
  for (const auto& [tid, st] : thread_states(pid)) EXPECT_EQ(st, 't') << "thread " << tid;
  ASSERT_TRUE((*first)->detach().ok());
  EXPECT_TRUE((*fx)->running_untraced());
}

TEST(LiveTargetErrors, ThreadIdIsNotAProcess) {
  auto exe = build_fixture({"basic", newest_version(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  // A reported thread that is not the leader (a locked goroutine may run on the main thread).
  pid_t tid = 0;
  for (const auto& [t, base] : thread_facts(**fx))
    if (t != (*fx)->pid()) tid = t;
  ASSERT_NE(tid, 0);
  auto t = LiveTarget::attach(Pid(tid));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code(), Errc::kUsage);
  EXPECT_NE(t.error().message().find("thread of process " + std::to_string((*fx)->pid())),
            std::string::npos);
  EXPECT_TRUE((*fx)->running_untraced());
}

}  // namespace
}  // namespace goref::testing
