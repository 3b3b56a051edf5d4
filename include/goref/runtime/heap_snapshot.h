// HeapSnapshot: a copy of everything the heap analysis reads from the target, taken while it is
// stopped so the analysis can run after it has been let go: the in-use spans (their mspan
// fields, allocation bits and memory, read in large blocks), Go 1.21's per-arena pointer bitmaps,
// each module's data and bss with the GC's pointer masks, and the roots that live off the heap
// (finalizer and cleanup specials, queued finalizers).
//
// Nothing here trusts the target: lengths are bounded before anything is allocated, lists are
// walked with a bound and loop detection, and what cannot be read is recorded in warnings (the
// analysis is then marked partial), not fatal — except the heap's index itself.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "goref/base/addr.h"
#include "goref/base/host_buffer.h"
#include "goref/base/result.h"
#include "goref/runtime/heap_layout.h"
#include "goref/runtime/process.h"

namespace goref::runtime {

// One in-use span (mSpanInUse), as runtime.mspan describes it.
struct Span {
  uint64_t mspan = 0;  // address of the runtime.mspan
  uint64_t base = 0;   // startAddr
  uint64_t npages = 0;
  uint64_t elemsize = 0;  // > 0 for every span kept
  uint64_t limit = 0;     // end of the last object
  uint32_t nelems = 0;
  uint32_t freeindex = 0;
  uint8_t spanclass = 0;
  // The runtime's mspan.divMul: slot = (offset * div_mul) >> 32, exact for offsets inside the
  // span, without a division per lookup. 0 for a one-object span.
  uint32_t div_mul = 0;
  bool inline_mark_bits = false;  // Green Tea: the page's last bytes hold mark bits
  uint64_t large_type = 0;        // sizeclass 0, Go 1.22+: the object's *abi.Type (0: none yet)
  // allocBits, (nelems+7)/8 bytes; empty if unreadable (every slot is then taken as allocated).
  std::vector<uint8_t> alloc_bits;
  // The span's memory in the snapshot; null if it could not be read.
  const std::byte* mem = nullptr;

  [[nodiscard]] uint8_t sizeclass() const { return spanclass >> 1; }
  [[nodiscard]] bool noscan() const { return (spanclass & 1) != 0; }
  [[nodiscard]] uint64_t bytes(uint64_t page_size) const { return npages * page_size; }
  // Slot i holds an object: below freeindex, or set in allocBits.
  [[nodiscard]] bool allocated(uint32_t i) const {
    if (i >= nelems) return false;
    if (i < freeindex || alloc_bits.empty()) return true;
    return (alloc_bits[i / 8] >> (i % 8)) & 1;
  }
};

// A module's data or bss segment with the GC's pointer mask (bit i: word i holds a pointer).
struct Segment {
  std::string name;  // "data", "bss"
  uint64_t base = 0;
  std::vector<std::byte> bytes;
  std::vector<uint8_t> mask;
};

// A root that lives off the heap: a finalizer or cleanup registered on an object, or a
// finalizer or cleanup queued to run.
struct SpecialRoot {
  enum class Kind { kFinalizer, kCleanup, kWeakHandle, kQueuedFinalizer, kQueuedCleanup } kind;
  uint64_t object = 0;  // the object it is attached to (finalizer: its contents are roots)
  uint64_t fn = 0;      // *funcval
  uint64_t arg = 0;     // cleanup (Go 1.26) or queued finalizer argument
  uint64_t handle = 0;  // weak handle
};

struct HeapSnapshot {
  HeapLayout layout;
  std::vector<Span> spans;  // sorted by base
  // Page table: arena index → span index + 1 per page (0: no in-use span).
  std::unordered_map<uint64_t, std::vector<uint32_t>> pages;
  // Go 1.21: arena index → that arena's pointer bitmap (one bit per word).
  std::unordered_map<uint64_t, std::vector<uint8_t>> arena_bitmaps;
  std::vector<Segment> segments;
  std::vector<SpecialRoot> specials;
  // Small reads of target memory the analysis may need that are not in the executable's file
  // (Go 1.22–1.23 large types with an unrolled GC program live in a manual span): address → bytes.
  std::unordered_map<uint64_t, std::vector<std::byte>> side;
  uint64_t sweepgen = 0;
  uint64_t bytes_copied = 0;
  size_t reads = 0;
  std::vector<std::string> warnings;  // non-empty: the result is partial

  // The span holding address p, or null (not heap, or not an in-use span). Caches the last
  // arena it looked up: not safe for concurrent use.
  [[nodiscard]] const Span* span_of(uint64_t p) const;
  // The slot index of address p in span s (p inside it).
  [[nodiscard]] static uint64_t slot_of(const Span& s, uint64_t p) {
    return s.div_mul ? ((p - s.base) * s.div_mul) >> 32 : (p - s.base) / s.elemsize;
  }
  uint32_t arena_shift = 26, page_shift = 13;  // log2 of heapArenaBytes and the page size

  mutable uint64_t last_arena_ = ~uint64_t{0};
  mutable const std::vector<uint32_t>* last_pages_ = nullptr;

  // Owns the copied span memory (Span::mem points into it): the pool, then blocks allocated
  // when it was full.
  HostBuffer pool;
  uint64_t pool_used = 0;
  std::vector<HostBuffer> blocks;
};

// Copies the heap of p. The target must be stopped. Fails only when the heap's index (mheap_,
// its arenas and spans) cannot be read at all. Span memory goes into pool while it has room
// (see prepare_heap_pool), then into buffers allocated on the way.
[[nodiscard]] Result<HeapSnapshot> snapshot_heap(const Process& p, const HeapLayout& layout,
                                                 HostBuffer pool = {});

// Bytes of in-use spans (mheap_.pagesInUse) of a process that may still be running: an estimate
// for sizing the copy before the target is stopped.
[[nodiscard]] Result<uint64_t> heap_in_use_estimate(const Process& p, const HeapLayout& layout);

// A buffer for the heap copy, faulted in now — before the target is stopped — so the pause is
// spent copying, not on the page faults and huge-page compaction of fresh memory.
[[nodiscard]] Result<HostBuffer> prepare_heap_pool(uint64_t bytes);

}  // namespace goref::runtime
