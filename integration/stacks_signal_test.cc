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
#include "running_goroutine.h"

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

  auto held = attach_while_running((*fx)->pid(), **prog, spin);
  ASSERT_TRUE(held.ok()) << held.error().message();
  ASSERT_TRUE(enter_signal_handler((*fx)->pid(), held->tid));

  auto snap = runtime::snapshot_stacks(*held->proc);
  ASSERT_TRUE(snap.ok()) << snap.error().message();
  unwind::Unwinder u((*prog)->pclntab(), held->proc->load_bias(), held->live->arch());
  auto traces = runtime::trace_goroutines(*held->proc, *snap, u, {});
  auto t = std::find_if(traces.begin(), traces.end(),
                        [&](const runtime::GoroutineTrace& x) { return x.g->goid == spin; });
  ASSERT_NE(t, traces.end());
  EXPECT_EQ(t->source, runtime::StackStart::kSignal);
  EXPECT_EQ(t->error, "");
  ASSERT_FALSE(t->frames.empty());
  // The interrupted instruction is in main.spin (a loop without calls), or in the
  // runtime.asyncPreempt that an earlier SIGURG injected into it.
  auto f = t->frames.begin();
  while (f != t->frames.end() && f->function.starts_with("runtime.asyncPreempt")) ++f;
  ASSERT_NE(f, t->frames.end());
  EXPECT_EQ(f->function, "main.spin");
  EXPECT_EQ(t->frames.back().function, "runtime.goexit");
  held->proc.reset();
  held->live.reset();  // detach: the handler runs and returns
  EXPECT_TRUE((*fx)->running_untraced());
}

INSTANTIATE_TEST_SUITE_P(Go, StacksSignal, ::testing::ValuesIn(all_versions()), param_name);

}  // namespace
}  // namespace goref::testing
