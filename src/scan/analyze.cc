#include "goref/scan/analyze.h"

#include <optional>
#include "goref/runtime/heap_bits.h"
#include "goref/runtime/type_masks.h"
#include "goref/scan/global_roots.h"

#include "goref/scan/typed_walk.h"

namespace goref::scan {
namespace {

// Finalizers, cleanups and weak handles, as markroot's specials pass treats them: a finalizer
// keeps what its object points to alive (not the object), and its function; a cleanup its
// function (and argument, Go 1.26+); a weak handle only the handle box, not the referent. Queued
// finalizers and cleanups keep their function and argument; queued cleanups are named after
// the runtime's queue, runtime.gcCleanups (Go 1.25+), since memory held there means cleanups
// that have not run yet.
size_t mark_specials(const runtime::HeapSnapshot& heap, Marker& m, RefTree& tree) {
  using K = runtime::SpecialRoot::Kind;
  size_t n = 0;
  for (const auto& s : heap.specials) {
    ++n;
    switch (s.kind) {
      case K::kFinalizer:
        if (auto o = m.find(s.object)) m.scan_contents(*o, tree.root("runtime.SetFinalizer.obj"));
        m.mark_from(s.fn, tree.root("runtime.SetFinalizer.fn"));
        break;
      case K::kQueuedFinalizer:
        m.mark_from(s.arg, tree.root("runtime.SetFinalizer.obj"));
        m.mark_from(s.fn, tree.root("runtime.SetFinalizer.fn"));
        break;
      case K::kCleanup:
        m.mark_from(s.fn, tree.root("runtime.AddCleanup.fn"));
        m.mark_from(s.arg, tree.root("runtime.AddCleanup.arg"));
        break;
      case K::kQueuedCleanup:
        m.mark_from(s.fn, tree.root("runtime.gcCleanups.fn"));
        m.mark_from(s.arg, tree.root("runtime.gcCleanups.arg"));
        break;
      case K::kWeakHandle:
        m.mark_from(s.handle, tree.root("weak.Pointer handle"));
        break;
    }
  }
  return n;
}

}  // namespace

HeapAnalysis analyze_heap(const runtime::Process& p, const runtime::HeapSnapshot& heap,
                          const runtime::StackSnapshot& stacks, const unwind::Unwinder& u,
                          int max_depth) {
  HeapAnalysis a;
  a.warnings = heap.warnings;
  for (const auto& s : heap.spans)
    for (uint32_t i = 0; i < s.nelems; ++i)
      if (s.allocated(i)) {
        a.allocated_objects++;
        a.allocated_bytes += s.elemsize;
      }
  runtime::TypeMasks types(p, heap.layout, heap);
  runtime::HeapBits bits(heap, &types);
  Marker m(heap, bits, a.tree);
  GlobalIndex globals(p);
  MemView mem(m);
  for (const auto& seg : heap.segments) mem.add_region(seg.base, seg.bytes);
  std::optional<TypedWalker> w;
  if (const auto* d = p.program().dwarf()) {
    w.emplace(p, *d, m, a.tree, mem, max_depth);
    walk_user_globals(globals, *w, a.tree);
  }
  a.global_words += mark_globals(globals, GlobalPass::kUser, m, a.tree);
  a.stacks = mark_stacks(p, stacks, u, m, a.tree, w ? &*w : nullptr, &mem);
  if (w) a.typed = w->stats();
  a.specials = mark_specials(heap, m, a.tree);
  a.global_words += mark_globals(globals, GlobalPass::kRuntime, m, a.tree);
  a.mark = m.stats();
  if (a.mark.metadata_errors > 0)
    a.warnings.push_back(std::to_string(a.mark.metadata_errors) +
                         " objects have unreadable pointer metadata and were not scanned");
  if (a.stacks.incomplete > 0)
    a.warnings.push_back(std::to_string(a.stacks.incomplete) +
                         " goroutines could not be unwound to their first frame");
  return a;
}

}  // namespace goref::scan
