// Goroutine stacks as roots, scanned as the runtime's scanstack/scanframeworker scan them: for
// each frame, the live pointer slots of its locals and arguments from the stack maps at the
// frame's pc (FUNCDATA_LocalsPointerMaps/ArgsPointerMaps, PCDATA_StackMapIndex), and its stack
// objects (FUNCDATA_StackObjects) only when a pointer on the stack refers to them. Frames
// stopped at an arbitrary instruction — the innermost frame of a running goroutine, frames of
// and under asyncPreempt/debugCallV2 — have no stack map there and are scanned conservatively.
// Locals and parameters DWARF places in a frame are walked by their type first, each under a
// root "pkg.Func.var"; what the stack maps find beyond them is charged to a root named after the
// frame's function.
#pragma once

#include "goref/runtime/process.h"
#include "goref/runtime/stack_snapshot.h"
#include "goref/scan/marker.h"
#include "goref/scan/typed_walk.h"
#include "goref/unwind/unwinder.h"

namespace goref::scan {

struct StackRootStats {
  size_t goroutines = 0, frames = 0, conservative_frames = 0, stack_objects = 0;
  size_t incomplete = 0;  // goroutines whose unwinding stopped early
  size_t typed_locals = 0;
};

// walker and mem may be null (no DWARF): frames are then scanned by stack maps alone.
[[nodiscard]] StackRootStats mark_stacks(const runtime::Process& p,
                                         const runtime::StackSnapshot& stacks,
                                         const unwind::Unwinder& u, Marker& m, RefTree& tree,
                                         TypedWalker* walker, MemView* mem);

}  // namespace goref::scan
