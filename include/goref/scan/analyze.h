// analyze_heap: the whole reference analysis over snapshots of one target — every root the
// runtime's markroot scans, marked in an order that gives the user's own variables the first
// claim: package variables of the program, then goroutine stacks, then finalizers, cleanups and
// weak handles, then the runtime's own variables and unnamed data/bss words. The result is the
// reference tree that the profile is written from, and what the attribution covers.
#pragma once

#include <string>
#include <vector>

#include "goref/runtime/heap_snapshot.h"
#include "goref/runtime/process.h"
#include "goref/runtime/stack_snapshot.h"
#include "goref/scan/marker.h"
#include "goref/scan/ref_tree.h"
#include "goref/scan/stack_roots.h"
#include "goref/scan/typed_walk.h"
#include "goref/unwind/unwinder.h"

namespace goref::scan {

struct HeapAnalysis {
  RefTree tree;
  MarkStats mark;
  StackRootStats stacks;
  size_t global_words = 0, specials = 0;
  TypedWalker::Stats typed;
  // Every allocated slot of every in-use span: the heap before garbage is told apart.
  uint64_t allocated_objects = 0, allocated_bytes = 0;
  std::vector<std::string> warnings;  // non-empty: the result is partial
};

[[nodiscard]] HeapAnalysis analyze_heap(const runtime::Process& p,
                                        const runtime::HeapSnapshot& heap,
                                        const runtime::StackSnapshot& stacks,
                                        const unwind::Unwinder& u, int max_depth = 256);

}  // namespace goref::scan
