// StackSnapshot: everything a goroutine dump needs from a target, copied while the target is
// stopped so that unwinding and symbolizing run after it has been let go. For every goroutine:
// where its stack starts (as the runtime's unwinder.initAt and traceback1 choose it: the saved
// syscall context, the VDSO context, the thread's registers for a running goroutine, else
// g.sched) and a copy of its stack from there to the top, taken in one read. A goroutine running
// on its M's g0 stack (inside systemstack or morestack) or in a signal handler on its gsignal
// stack also gets a copy of that part.
//
// A goroutine whose stack cannot be located or read gets an error and no image; the others are
// unaffected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "goref/base/result.h"
#include "goref/runtime/goroutines.h"
#include "goref/runtime/process.h"
#include "goref/unwind/stack_image.h"

namespace goref::runtime {

enum class StackStart {
  kSched,      // g.sched: a parked or runnable goroutine
  kSyscall,    // g.syscallpc/syscallsp: in a system call (or a cgo call)
  kVdso,       // m.vdsoPC/vdsoSP: inside a VDSO call (time.Now on a running goroutine)
  kRegisters,  // the registers of the thread running it
  kG0,         // the thread runs it on g0: the g0 part first, then the goroutine's own stack
  // The thread is in a signal handler (on gsignal, e.g. a preemption SIGURG): the goroutine's
  // frames start at the context the kernel saved in the signal frame.
  kSignal,
};

struct GoroutineStack {
  StackStart source = StackStart::kSched;
  unwind::StartState start;
  // [start.sp, stack.hi) of the goroutine's stack; kSignal: all of it, as start is known only
  // once the signal frame has been found.
  unwind::StackImage image;
  // kG0 and kSignal: the thread's registers and [sp, hi) of the g0 or gsignal stack it is on.
  unwind::StartState thread_start;
  unwind::StackImage thread_image;
  std::string error;  // non-empty: the stack could not be located or copied
  // A goroutine on a thread (running): that thread's general-purpose registers, which may hold
  // the only pointer to an object; the heap scan treats them conservatively.
  std::vector<uint64_t> thread_registers;
};

struct StackSnapshot {
  Goroutines all;
  std::vector<GoroutineStack> stacks;  // parallel to all.gs
  // The target's nanotime() when the snapshot was taken (CLOCK_MONOTONIC for a live target);
  // for a core, the latest timestamp found in it, so wait times are lower bounds.
  int64_t nanotime = 0;
  bool nanotime_estimated = false;
  // runtime.fingStatus (finalizer goroutine state); nullopt if it could not be read.
  std::optional<uint32_t> fing_status;
  uint64_t bytes_copied = 0;
};

// Stacks larger than this are taken as corrupt (the runtime's default maximum is 1 GB).
inline constexpr uint64_t kMaxStackBytes = uint64_t{1} << 30;

// Reads the goroutines and copies their stacks. Fails only when the goroutine list itself
// cannot be read.
[[nodiscard]] Result<StackSnapshot> snapshot_stacks(const Process& p);

}  // namespace goref::runtime
