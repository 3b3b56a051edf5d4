// Test support: hold a live process stopped (goref's LiveTarget) at a moment when a given
// goroutine is running on a thread, so a test can drive that thread with ptrace (single-step,
// signals) into a state that is otherwise only caught by chance.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <memory>
#include <string>

#include "goref/base/result.h"
#include "goref/runtime/goroutines.h"
#include "goref/runtime/process.h"
#include "goref/runtime/program.h"
#include "goref/target/live_target.h"

namespace goref::testing {

struct HeldRunning {
  std::unique_ptr<target::LiveTarget> live;
  std::unique_ptr<runtime::Process> proc;  // reads through live; destroyed first
  pid_t tid = 0;                           // the thread running the goroutine
  runtime::ThreadM m;                      // its M
};

// The goroutine shares two cores with everything else: attaches up to `attempts` times until
// goroutine goid is running and an M names it as its curg.
inline Result<HeldRunning> attach_while_running(pid_t pid, const runtime::Program& prog,
                                                uint64_t goid, int attempts = 200) {
  for (int i = 0; i < attempts; ++i) {
    HeldRunning h;
    GOREF_TRY(h.live, target::LiveTarget::attach(Pid(pid)));
    GOREF_TRY(h.proc, runtime::Process::open(*h.live, prog));
    GOREF_TRY(auto all, runtime::read_goroutines(*h.proc));
    auto g = std::find_if(all.gs.begin(), all.gs.end(),
                          [&](const runtime::Goroutine& x) { return x.goid == goid; });
    if (g == all.gs.end())
      return Error(Errc::kNotFound, "goroutine " + std::to_string(goid) + " not in allgs");
    auto m = std::find_if(all.ms.begin(), all.ms.end(),
                          [&](const runtime::ThreadM& x) { return x.curg == g->addr; });
    if (g->status != runtime::k_Grunning || m == all.ms.end()) continue;
    h.tid = static_cast<pid_t>(m->tid.value());
    h.m = *m;
    return h;
  }
  return Error(Errc::kNotFound,
               "goroutine " + std::to_string(goid) + " was never seen running on a thread");
}

}  // namespace goref::testing
