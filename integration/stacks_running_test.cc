// Goroutines caught mid-flight rather than parked, with the running fixture:
// - asynchronously preempted: with one processor and two goroutines in loops without calls, the
//   goroutine that is not running was taken off the processor by runtime.asyncPreempt. Its stack
//   continues, after asyncPreempt, at the interrupted instruction itself (not a return address),
//   so that frame's line is the line of its exact pc. The running one is unwound from its
//   thread's registers.
// - on its thread's g0 stack (systemstack): single-stepped until the thread's sp is there.
// - inside the VDSO: a thread is single-stepped (ptrace, while goref's LiveTarget holds the
//   process) until its pc is in the kernel's [vdso] mapping; the goroutine's traceback must then
//   start from m.vdsoPC/vdsoSP and reach the Go caller of time.Now.
#include <gtest/gtest.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "goref/runtime/process.h"
#include "goref/runtime/program.h"
#include "goref/runtime/stack_snapshot.h"
#include "goref/runtime/traceback.h"
#include "goref/target/live_target.h"
#include "goref/unwind/unwinder.h"
#include "harness/fixture.h"
#include "harness/json.h"
#include "harness/matrix.h"
#include "running_goroutine.h"

namespace goref::testing {
namespace {

struct JFrame {
  std::string function, file;
  int line = 0;
  uint64_t pc = 0;
  bool inlined = false, hidden = false;
};

struct JGoroutine {
  uint64_t id = 0;
  std::string status, stack_from, error;
  std::vector<JFrame> frames;
};

std::vector<JGoroutine> parse_dump(const std::string& text) {
  std::vector<JGoroutine> out;
  Json root;
  if (!JsonReader(text).parse(root) || !root.get("goroutines") || !root.get("goroutines")->array())
    return out;
  for (const Json& j : *root.get("goroutines")->array()) {
    JGoroutine g;
    g.id = static_cast<uint64_t>(j.get("id") ? j.get("id")->num(0) : 0);
    if (const Json* s = j.get("status")) g.status = s->str();
    if (const Json* s = j.get("stack_from")) g.stack_from = s->str();
    if (const Json* s = j.get("error")) g.error = s->str();
    if (const Json* fs = j.get("frames"); fs && fs->array()) {
      for (const Json& fj : *fs->array()) {
        JFrame f;
        if (const Json* v = fj.get("function")) f.function = v->str();
        if (const Json* v = fj.get("file")) f.file = v->str();
        if (const Json* v = fj.get("line")) f.line = static_cast<int>(v->num(0));
        if (const Json* v = fj.get("pc")) f.pc = std::stoull(v->str(), nullptr, 16);
        f.inlined = fj.get("inlined") && fj.get("inlined")->boolean();
        f.hidden = fj.get("hidden") && fj.get("hidden")->boolean();
        g.frames.push_back(std::move(f));
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

// "FILE:N" → N.
int line_of(const std::string& site) {
  return std::stoi(site.substr(site.rfind(':') + 1));
}

std::string describe(const JGoroutine& g) {
  std::string s = "goroutine " + std::to_string(g.id) + " [" + g.status + "] from " + g.stack_from +
                  (g.error.empty() ? "" : " error: " + g.error) + "\n";
  for (const auto& f : g.frames)
    s += "  " + f.function + " line " + std::to_string(f.line) + (f.inlined ? " inlined" : "") +
         (f.hidden ? " hidden" : "") + "\n";
  return s;
}

class StacksRunning : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(StacksRunning, AsyncPreemptedGoroutineContinuesAtTheInterruptedInstruction) {
  auto exe = build_fixture(GetParam().spec("running"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe, {"-mode", "preempt"});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  auto prog = runtime::Program::open(*exe);
  ASSERT_TRUE(prog.ok()) << prog.error().message();
  const auto& tab = (*prog)->pclntab();

  int preempted_seen = 0;
  for (int round = 0; round < 5; ++round) {
    auto r =
        run_command({GOREF_BINARY, "stacks", "--format", "json", std::to_string((*fx)->pid())});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto gs = parse_dump(r.out);
    ASSERT_FALSE(gs.empty()) << r.out;
    int runnable = 0;
    for (const std::string role : {"spinA", "spinB"}) {
      SCOPED_TRACE(role + " in round " + std::to_string(round));
      uint64_t id = (*fx)->fact_u64("g." + role);
      int body = line_of((*fx)->fact("line." + role));
      auto g = std::find_if(gs.begin(), gs.end(), [&](const JGoroutine& x) { return x.id == id; });
      ASSERT_NE(g, gs.end()) << "goroutine " << id << " missing";
      EXPECT_EQ(g->error, "") << describe(*g);
      ASSERT_FALSE(g->frames.empty()) << describe(*g);
      EXPECT_EQ(g->frames.back().function, "runtime.goexit") << describe(*g);
      // The loop's frame: its line is that of its exact pc, inlined calls included (the atomic
      // add may be one), and is the loop's body or its `for` line.
      std::string fn = "main." + role;
      auto loop = std::find_if(g->frames.begin(), g->frames.end(),
                               [&](const JFrame& f) { return f.function == fn && !f.inlined; });
      ASSERT_NE(loop, g->frames.end()) << describe(*g);
      EXPECT_TRUE(loop->line == body || loop->line == body - 1) << describe(*g);
      auto want = tab.symbolize(loop->pc);
      ASSERT_FALSE(want.empty());
      EXPECT_EQ(want.back().function, fn);
      EXPECT_EQ(want.back().line, loop->line) << "pc " << std::hex << loop->pc;
      if (g->status == "runnable") {
        ++runnable;
        // runtime.asyncPreempt2 called mcall from asyncPreempt, which the signal handler
        // injected as if the loop had called it.
        ASSERT_GE(g->frames.size(), 4u) << describe(*g);
        EXPECT_EQ(g->frames[0].function, "runtime.asyncPreempt2") << describe(*g);
        EXPECT_EQ(g->frames[1].function, "runtime.asyncPreempt") << describe(*g);
        EXPECT_EQ(g->stack_from, "sched");
        size_t shown = 0;
        for (const auto& f : g->frames) shown += f.hidden ? 0 : 1;
        EXPECT_FALSE(loop->hidden);
        EXPECT_EQ(shown, want.size()) << describe(*g);
      } else {
        EXPECT_EQ(g->status, "running") << describe(*g);
      }
    }
    // One processor: at most one of the two runs; the other waits, preempted.
    EXPECT_GE(runnable, 1);
    preempted_seen += runnable;
  }
  EXPECT_GE(preempted_seen, 5);

  auto v = run_command({GOREF_BINARY, "stacks", "--verify", std::to_string((*fx)->pid())});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.err.find("verify: 0 of"), std::string::npos) << v.err;
  EXPECT_TRUE((*fx)->running_untraced());
}

// The [start, end) of the process's [vdso] mapping, or {0, 0}.
std::pair<uint64_t, uint64_t> vdso_range(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("[vdso]") == std::string::npos) continue;
    size_t dash = line.find('-');
    return {std::stoull(line.substr(0, dash), nullptr, 16),
            std::stoull(line.substr(dash + 1), nullptr, 16)};
  }
  return {0, 0};
}

// Single-steps the stopped thread tid until its pc (or, with on_sp, its sp) is in [lo, hi);
// false after limit steps.
bool step_into(target::LiveTarget& live, pid_t tid, uint64_t lo, uint64_t hi, int limit,
               bool on_sp = false) {
  int pending = 0;
  for (int i = 0; i < limit; ++i) {
    auto regs = live.registers(Tid(tid));
    if (!regs.ok()) return false;
    uint64_t at = on_sp ? regs->sp : regs->pc;
    if (at >= lo && at < hi) return true;
    // A signal that arrives meanwhile (the runtime's SIGURG preemption, say) stops the thread
    // first; it is delivered with the next step, as it would have been.
    if (ptrace(PTRACE_SINGLESTEP, tid, nullptr, reinterpret_cast<void*>(intptr_t{pending})) != 0)
      return false;
    pending = 0;
    int st = 0;
    if (waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st)) return false;
    if (WSTOPSIG(st) != SIGTRAP) pending = WSTOPSIG(st);
  }
  return false;
}

// A goroutine caught on its thread in a state drive() put it in, traced while the process is
// held stopped. Destroying it lets the process go.
struct Caught {
  HeldRunning held;
  runtime::StackSnapshot snap;
  runtime::GoroutineTrace trace;  // points into snap
};

// Attaches while goroutine goid runs, lets drive() step its thread, then traces it. A signal
// delivered while stepping (the runtime's preemption) can take the goroutine off its thread;
// then it tries again, up to 20 times. Null, with *why set, if it never succeeds.
std::unique_ptr<Caught> catch_running(pid_t pid, const runtime::Program& prog, uint64_t goid,
                                      const std::function<bool(HeldRunning&)>& drive,
                                      std::string* why) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto held = attach_while_running(pid, prog, goid);
    if (!held.ok()) {
      *why = held.error().message();
      return nullptr;
    }
    if (!drive(*held)) {
      *why = "thread " + std::to_string(held->tid) + " never reached the state";
      continue;
    }
    auto c = std::make_unique<Caught>();
    c->held = std::move(*held);
    auto snap = runtime::snapshot_stacks(*c->held.proc);
    if (!snap.ok()) {
      *why = snap.error().message();
      return nullptr;
    }
    c->snap = std::move(*snap);
    auto g = std::find_if(c->snap.all.gs.begin(), c->snap.all.gs.end(),
                          [&](const runtime::Goroutine& x) { return x.goid == goid; });
    if (g == c->snap.all.gs.end()) {
      *why = "goroutine " + std::to_string(goid) + " is gone";
      return nullptr;
    }
    auto m = std::find_if(c->snap.all.ms.begin(), c->snap.all.ms.end(),
                          [&](const runtime::ThreadM& x) { return x.curg == g->addr; });
    if (g->status != runtime::k_Grunning || m == c->snap.all.ms.end() ||
        static_cast<pid_t>(m->tid.value()) != c->held.tid) {
      *why = "the goroutine left its thread while it was stepped";
      continue;
    }
    unwind::Unwinder u(prog.pclntab(), c->held.proc->load_bias(), c->held.live->arch());
    runtime::GoroutineTracer tracer(*c->held.proc, c->snap, u, {});
    c->trace = tracer.trace(static_cast<size_t>(g - c->snap.all.gs.begin()));
    return c;
  }
  return nullptr;
}

TEST_P(StacksRunning, GoroutineInsideTheVdso) {
  auto exe = build_fixture(GetParam().spec("running"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe, {"-mode", "vdso"});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  uint64_t clock = (*fx)->fact_u64("g.clock");
  int body = line_of((*fx)->fact("line.clock"));
  auto [vlo, vhi] = vdso_range((*fx)->pid());
  ASSERT_NE(vlo, 0u) << "no [vdso] mapping";
  auto prog = runtime::Program::open(*exe);
  ASSERT_TRUE(prog.ok()) << prog.error().message();

  std::string why;
  // One iteration of the loop is a few hundred instructions.
  auto c = catch_running(
      (*fx)->pid(), **prog, clock,
      [&](HeldRunning& h) { return step_into(*h.live, h.tid, vlo, vhi, 100000); }, &why);
  ASSERT_TRUE(c) << why;
  const runtime::GoroutineTrace* t = &c->trace;
  EXPECT_EQ(t->source, runtime::StackStart::kVdso);
  EXPECT_EQ(t->error, "");
  std::string frames;
  for (const auto& f : t->frames) frames += f.function + ":" + std::to_string(f.line) + " ";
  auto clock_frame = std::find_if(t->frames.begin(), t->frames.end(),
                                  [](const auto& f) { return f.function == "main.clock"; });
  ASSERT_NE(clock_frame, t->frames.end()) << frames;
  EXPECT_EQ(clock_frame->line, body) << frames;
  // Below it: time.Now (and, from Go 1.26, time.runtimeNow), the caller of the assembly that
  // calls into the VDSO.
  EXPECT_TRUE(std::any_of(t->frames.begin(), clock_frame, [](const auto& f) {
    return f.function == "time.Now";
  })) << frames;
  EXPECT_EQ(t->frames.back().function, "runtime.goexit") << frames;
  c.reset();
  EXPECT_TRUE((*fx)->running_untraced());
}

// A goroutine whose thread switched to its g0 stack (systemstack, here to take pages for a large
// allocation; or morestack, or mcall): the trace shows the g0 frames, then continues from g.sched,
// which the switch saved, through the goroutine's own frames.
TEST_P(StacksRunning, GoroutineOnItsThreadsG0Stack) {
  auto exe = build_fixture(GetParam().spec("running"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe, {"-mode", "alloc"});
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  uint64_t alloc = (*fx)->fact_u64("g.alloc");
  int body = line_of((*fx)->fact("line.alloc"));
  auto prog = runtime::Program::open(*exe);
  ASSERT_TRUE(prog.ok()) << prog.error().message();

  std::string why;
  // An iteration clears 40 KiB (thousands of instructions) and switches stacks once.
  auto c = catch_running((*fx)->pid(), **prog, alloc,
                         [&](HeldRunning& h) {
                           const auto& L = h.proc->layout().g;
                           auto lo = h.live->read_word(h.m.g0 + L.stack_lo);
                           auto hi = h.live->read_word(h.m.g0 + L.stack_hi);
                           return lo.ok() && hi.ok() &&
                                  step_into(*h.live, h.tid, *lo, *hi, 2000000, true);
                         },
                         &why);
  ASSERT_TRUE(c) << why;
  const runtime::GoroutineTrace* t = &c->trace;
  // On g0 the runtime may also be calling into the VDSO (nanotime, during a GC the allocation
  // assists): m.vdsoSP then takes precedence, as in the runtime's traceback.
  EXPECT_TRUE(t->source == runtime::StackStart::kG0 || t->source == runtime::StackStart::kVdso);
  EXPECT_EQ(t->error, "");
  std::string frames;
  for (const auto& f : t->frames) frames += f.function + ":" + std::to_string(f.line) + " ";
  auto alloc_frame = std::find_if(t->frames.begin(), t->frames.end(),
                                  [](const auto& f) { return f.function == "main.alloc"; });
  ASSERT_NE(alloc_frame, t->frames.end()) << frames;
  EXPECT_EQ(alloc_frame->line, body) << frames;
  // Below it, the switch: systemstack (the allocation), morestack (the stack, shrunk by a GC,
  // grows again), or mcall (a preemption signal that arrived while stepping parks the goroutine).
  if (t->source == runtime::StackStart::kG0) {
    EXPECT_TRUE(std::any_of(t->frames.begin(), alloc_frame, [](const auto& f) {
      return f.function == "runtime.systemstack" || f.function == "runtime.morestack" ||
             f.function == "runtime.mcall";
    })) << frames;
  }
  EXPECT_EQ(t->frames.back().function, "runtime.goexit") << frames;
  c.reset();
  EXPECT_TRUE((*fx)->running_untraced());
}

INSTANTIATE_TEST_SUITE_P(Go, StacksRunning, ::testing::ValuesIn(all_versions()), param_name);

}  // namespace
}  // namespace goref::testing
