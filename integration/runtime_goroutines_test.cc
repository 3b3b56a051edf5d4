// The runtime layer against real programs: layouts (DWARF versus the measured fallback table)
// and the goroutine list, live and from a core, for every supported Go version.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "goref/runtime/goroutines.h"
#include "goref/runtime/layout.h"
#include "goref/runtime/process.h"
#include "goref/runtime/program.h"
#include "goref/target/core_target.h"
#include "goref/target/live_target.h"
#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::runtime {
namespace {

using testing::BuildMode;
using testing::FixtureParam;
using testing::RunningFixture;

class RuntimeByVersion : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(RuntimeByVersion, FallbackLayoutEqualsDwarf) {
  auto exe = testing::build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto prog = Program::open(*exe);
  ASSERT_TRUE(prog.ok()) << prog.error().message();
  ASSERT_NE((*prog)->dwarf(), nullptr);
  auto dw = resolve_layout(**prog);
  ASSERT_TRUE(dw.ok()) << dw.error().message();
  EXPECT_TRUE(dw->from_dwarf);
  auto fb = fallback_layout((*prog)->go_minor());
  ASSERT_TRUE(fb.has_value());
  const auto &a = dw->g, &b = fb->g;
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.stack_lo, b.stack_lo);
  EXPECT_EQ(a.stack_hi, b.stack_hi);
  EXPECT_EQ(a.m, b.m);
  EXPECT_EQ(a.sched_sp, b.sched_sp);
  EXPECT_EQ(a.sched_pc, b.sched_pc);
  EXPECT_EQ(a.sched_bp, b.sched_bp);
  EXPECT_EQ(a.sched_lr, b.sched_lr);
  EXPECT_EQ(a.sched_ctxt, b.sched_ctxt);
  EXPECT_EQ(a.syscallsp, b.syscallsp);
  EXPECT_EQ(a.syscallpc, b.syscallpc);
  EXPECT_EQ(a.syscallbp, b.syscallbp);
  EXPECT_EQ(a.atomicstatus, b.atomicstatus);
  EXPECT_EQ(a.goid, b.goid);
  EXPECT_EQ(a.waitsince, b.waitsince);
  EXPECT_EQ(a.waitreason, b.waitreason);
  EXPECT_EQ(a.lockedm, b.lockedm);
  EXPECT_EQ(a.parent_goid, b.parent_goid);
  EXPECT_EQ(a.gopc, b.gopc);
  EXPECT_EQ(a.startpc, b.startpc);
  EXPECT_EQ(a.running_cleanups, b.running_cleanups);
  const auto &ma = dw->m, &mb = fb->m;
  EXPECT_EQ(ma.g0, mb.g0);
  EXPECT_EQ(ma.procid, mb.procid);
  EXPECT_EQ(ma.gsignal, mb.gsignal);
  EXPECT_EQ(ma.curg, mb.curg);
  EXPECT_EQ(ma.alllink, mb.alllink);
  EXPECT_EQ(ma.vdso_sp, mb.vdso_sp);
  EXPECT_EQ(ma.vdso_pc, mb.vdso_pc);
}

// What the basic fixture guarantees about its goroutines: main (goid 1) blocks in select {},
// and each of its locked goroutines sits in read(2) on its own thread, whose tid it printed.
void check_basic_goroutines(const Goroutines& all, const RunningFixture& fx) {
  EXPECT_TRUE(all.warnings.empty()) << all.warnings.front();
  const Goroutine* main_g = nullptr;
  std::set<uint64_t> goids;
  for (const auto& g : all.gs) {
    EXPECT_TRUE(goids.insert(g.goid).second) << "duplicate goid " << g.goid;
    if (g.goid == 1) main_g = &g;
    EXPECT_LT(g.stack.start, g.stack.end) << "goroutine " << g.goid;
  }
  ASSERT_NE(main_g, nullptr);
  EXPECT_EQ(status_string(all, *main_g), "select (no cases)");
  EXPECT_FALSE(main_g->locked_to_thread);

  // tid -> goroutine it runs, through allm.
  std::map<pid_t, const Goroutine*> by_tid;
  for (const auto& m : all.ms)
    for (const auto& g : all.gs)
      if (m.curg && g.addr == m.curg) by_tid[m.tid.value()] = &g;
  auto threads = fx.facts_with_prefix("thread.");
  ASSERT_EQ(threads.size(), 3u);
  for (const auto& [key, value] : threads) {
    pid_t tid = std::stoi(key.substr(0, key.find('.')));
    if (tid == fx.pid()) continue;  // the main thread may run one of them before it locks
    ASSERT_TRUE(by_tid.count(tid)) << "no goroutine on thread " << tid;
    const Goroutine* g = by_tid[tid];
    EXPECT_TRUE(g->locked_to_thread) << "goroutine " << g->goid;
    EXPECT_EQ(status_string(all, *g), "syscall") << "goroutine " << g->goid;
    EXPECT_EQ(g->status, k_Gsyscall);
    EXPECT_NE(g->syscallsp, 0u);
    EXPECT_TRUE(g->stack.contains(Addr(g->syscallsp)));
    EXPECT_EQ(g->parent_goid, 1u);
  }
}

TEST_P(RuntimeByVersion, GoroutinesLiveAndFromCore) {
  auto exe = testing::build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  auto prog = Program::open(*exe);
  ASSERT_TRUE(prog.ok()) << prog.error().message();
  {
    auto live = target::LiveTarget::attach(Pid((*fx)->pid()));
    ASSERT_TRUE(live.ok()) << live.error().message();
    auto proc = Process::open(**live, **prog);
    ASSERT_TRUE(proc.ok()) << proc.error().message();
    auto all = read_goroutines(**proc);
    ASSERT_TRUE(all.ok()) << all.error().message();
    check_basic_goroutines(*all, **fx);
  }
  auto core = testing::gcore((*fx)->pid(), testing::scratch_dir("rt-core") + "/core");
  ASSERT_TRUE(core.ok()) << core.error().message();
  auto ct = target::CoreTarget::open(*core, *exe);
  ASSERT_TRUE(ct.ok()) << ct.error().message();
  auto proc = Process::open(**ct, **prog);
  ASSERT_TRUE(proc.ok()) << proc.error().message();
  auto all = read_goroutines(**proc);
  std::filesystem::remove(*core);
  ASSERT_TRUE(all.ok()) << all.error().message();
  check_basic_goroutines(*all, **fx);
}

INSTANTIATE_TEST_SUITE_P(Go, RuntimeByVersion,
                         ::testing::ValuesIn(testing::versions_and_modes({BuildMode::kDefault,
                                                                          BuildMode::kPie})),
                         testing::param_name);

// Without DWARF (-ldflags=-w) the symbol table locates the globals and the fallback table
// gives the layout: the same goroutines come out.
class RuntimeNoDwarf : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(RuntimeNoDwarf, GoroutinesFromSymbolsAndFallbackLayout) {
  auto spec = GetParam().spec("basic");
  spec.mode = BuildMode::kNoDwarf;
  auto exe = testing::build_fixture(spec);
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  auto prog = Program::open(*exe);
  ASSERT_TRUE(prog.ok()) << prog.error().message();
  EXPECT_EQ((*prog)->dwarf(), nullptr);
  auto live = target::LiveTarget::attach(Pid((*fx)->pid()));
  ASSERT_TRUE(live.ok()) << live.error().message();
  auto proc = Process::open(**live, **prog);
  ASSERT_TRUE(proc.ok()) << proc.error().message();
  EXPECT_FALSE((*proc)->layout().from_dwarf);
  auto all = read_goroutines(**proc);
  ASSERT_TRUE(all.ok()) << all.error().message();
  check_basic_goroutines(*all, **fx);
}

INSTANTIATE_TEST_SUITE_P(Go, RuntimeNoDwarf, ::testing::ValuesIn(testing::all_versions()),
                         testing::param_name);

}  // namespace
}  // namespace goref::runtime
