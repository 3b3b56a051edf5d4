// A running goroutine whose thread is inside a signal handler: goref must find the goroutine's
// frames through the signal frame the kernel left on the gsignal stack. The state is made
// deterministic with ptrace: with every thread stopped by goref's LiveTarget, the spinner's
// thread is sent SIGURG (Go's preemption signal), resumed into its signal-delivery stop, and
// single-stepped with the signal, which stops it at the first instruction of runtime.sigtramp
// on the gsignal stack. Its traceback must then start in main.spin, from the signal frame.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "goref/runtime/process.h"
#include "goref/runtime/program.h"
#include "goref/runtime/stack_snapshot.h"
#include "goref/runtime/traceback.h"
#include "goref/target/live_target.h"
#include "goref/unwind/unwinder.h"
#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

// Waits for tid's next ptrace stop; the signal that caused it, or -1.
int wait_stop(pid_t tid) {
  int st = 0;
  if (waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st)) return -1;
  return WSTOPSIG(st);
}

// Drives the stopped thread tid into the first instruction of its SIGURG handler.
bool enter_signal_handler(pid_t pid, pid_t tid) {
  if (syscall(SYS_tgkill, pid, tid, SIGURG) != 0) return false;
  if (ptrace(PTRACE_CONT, tid, nullptr, nullptr) != 0) return false;
  // The pending SIGURG is delivered before any user instruction runs.
  for (int i = 0; i < 8; ++i) {
    int sig = wait_stop(tid);
    if (sig == SIGURG) break;
    if (sig < 0 || i == 7) return false;
    if (ptrace(PTRACE_CONT, tid, nullptr, nullptr) != 0) return false;
  }
  if (ptrace(PTRACE_SINGLESTEP, tid, nullptr, reinterpret_cast<void*>(SIGURG)) != 0) return false;
  return wait_stop(tid) == SIGTRAP;
}

class StacksSignal : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(StacksSignal, RunningGoroutineInSignalHandler) {
  auto exe = build_fixture(GetParam().spec("stacks"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe, {"-dump", scratch_dir("stacks-signal") + "/dump.txt"});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  uint64_t spin = (*fx)->fact_u64("g.spin");
  auto prog = runtime::Program::open(*exe);
  ASSERT_TRUE(prog.ok()) << prog.error().message();

  // The spinner shares two cores with everything else: attach until it is on a thread.
  for (int attempt = 0; attempt < 200; ++attempt) {
    auto live = target::LiveTarget::attach(Pid((*fx)->pid()));
    ASSERT_TRUE(live.ok()) << live.error().message();
    auto proc = runtime::Process::open(**live, **prog);
    ASSERT_TRUE(proc.ok()) << proc.error().message();
    auto all = runtime::read_goroutines(**proc);
    ASSERT_TRUE(all.ok()) << all.error().message();
    auto g = std::find_if(all->gs.begin(), all->gs.end(),
                          [&](const runtime::Goroutine& x) { return x.goid == spin; });
    ASSERT_NE(g, all->gs.end());
    auto m = std::find_if(all->ms.begin(), all->ms.end(),
                          [&](const runtime::ThreadM& x) { return x.curg == g->addr; });
    if (g->status != runtime::k_Grunning || m == all->ms.end()) continue;
    ASSERT_TRUE(enter_signal_handler((*fx)->pid(), m->tid.value()));

    auto snap = runtime::snapshot_stacks(**proc);
    ASSERT_TRUE(snap.ok()) << snap.error().message();
    unwind::Unwinder u((*prog)->pclntab(), (*proc)->load_bias(), (*live)->arch());
    auto traces = runtime::trace_goroutines(**proc, *snap, u, {});
    auto t = std::find_if(traces.begin(), traces.end(),
                          [&](const runtime::GoroutineTrace& x) { return x.g->goid == spin; });
    ASSERT_NE(t, traces.end());
    EXPECT_EQ(t->source, runtime::StackStart::kSignal);
    EXPECT_EQ(t->error, "");
    ASSERT_FALSE(t->frames.empty());
    // The interrupted instruction is in main.spin (a loop without calls).
    EXPECT_EQ(t->frames.front().function, "main.spin");
    EXPECT_EQ(t->frames.back().function, "runtime.goexit");
    live->reset();  // detach: the handler runs and returns
    EXPECT_TRUE((*fx)->running_untraced());
    return;
  }
  FAIL() << "the spinner was never seen running on a thread";
}

INSTANTIATE_TEST_SUITE_P(Go, StacksSignal, ::testing::ValuesIn(all_versions()), param_name);

}  // namespace
}  // namespace goref::testing
