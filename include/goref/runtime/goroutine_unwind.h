// The physical frames of one goroutine from its StackSnapshot entry, as the runtime's
// traceback1 finds them: for a goroutine running on its M's g0 stack, the g0 frames up to the
// stack switch first; for one interrupted by a signal, from the context the kernel saved in the
// signal frame; a call through a nil func value starts at its caller. Shared by the goroutine
// dump (which prints them) and the heap analysis (which scans them).
#pragma once

#include <string>

#include "goref/runtime/process.h"
#include "goref/runtime/stack_snapshot.h"
#include "goref/unwind/unwinder.h"

namespace goref::runtime {

struct GoroutineFrames {
  unwind::Unwound g0;        // kG0: the frames on the g0 stack (not the goroutine's own)
  unwind::Unwound own;       // the goroutine's frames on its own stack
  unwind::StartState start;  // where `own` started
  // The innermost frame of `own` was interrupted (registers, a signal): its pc is not a return
  // address and it is symbolized as is.
  bool trap = false;
  // Non-empty: `own` is missing or incomplete (it stopped before a top frame) — why.
  std::string error;
};

[[nodiscard]] GoroutineFrames unwind_goroutine(const Process& p, const GoroutineStack& s,
                                               const unwind::Unwinder& u,
                                               unwind::Unwinder::Method method, size_t max_frames);

// "unwinding stopped: <reason>: <detail>"
[[nodiscard]] std::string stop_text(const unwind::Unwound& u);

}  // namespace goref::runtime
