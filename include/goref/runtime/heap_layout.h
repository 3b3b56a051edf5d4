// HeapLayout: where the Go heap's metadata lives in one program — mheap_, heapArena, mspan,
// specials, abi.Type, moduledata and the runtime's constants — resolved by name from the
// program's DWARF. Heap analysis needs DWARF anyway (to type what it finds), so there is no
// fallback table here; the research tables are the test oracle instead. Every version quirk is a
// field that may be absent (std::nullopt), with the Go version in a comment.
#pragma once

#include <cstdint>
#include <optional>

#include "goref/base/bytes.h"
#include "goref/base/result.h"
#include "goref/runtime/program.h"

namespace goref::runtime {

// One field of a runtime struct: offset and size (1, 2, 4 or 8 bytes for the scalars read).
struct Field {
  uint64_t off = 0;
  uint64_t size = 0;
  // The field as an unsigned integer from a copy of its struct; 0 if the copy is too short.
  [[nodiscard]] uint64_t get(Bytes s) const;
};

struct HeapLayout {
  // Constants (runtime/malloc.go, mheap.go).
  uint64_t page_size = 8192;
  uint64_t heap_arena_bytes = 64 << 20;
  uint64_t arena_l1_bits = 0, arena_l2_bits = 22;
  uint64_t arena_base_offset = 0;  // amd64: 1<<47 negated (0xffff800000000000); arm64: 0
  uint64_t span_in_use = 1;        // mSpanInUse
  // minSizeForMallocHeader (Go 1.22+): objects of at most this size keep their pointer bits at
  // the end of the span, larger ones carry a type header. nullopt: Go 1.21's arena bitmap.
  std::optional<uint64_t> min_size_for_malloc_header;

  // runtime.mheap, at runtime.mheap_.
  uint64_t mheap_arenas = 0;      // [1 << arenaL1Bits]*[1 << arenaL2Bits]*heapArena
  uint64_t mheap_all_arenas = 0;  // []arenaIdx: allArenas up to Go 1.24, heapArenas from 1.25
  Field mheap_sweepgen;
  Field mheap_pages_in_use;  // pages of in-use spans, for sizing the copy before the stop

  // runtime.heapArena.
  uint64_t arena_size = 0;
  uint64_t arena_spans = 0;  // [pagesPerArena]*mspan
  // Go 1.21: one pointer bit per heap word ([heapArenaWords/64]uintptr) in the arena.
  std::optional<uint64_t> arena_bitmap;
  // Go 1.25+: pages whose span keeps its mark bits inline (Green Tea).
  std::optional<uint64_t> arena_inline_mark_pages;

  // runtime.mspan.
  uint64_t span_size = 0;
  Field span_start_addr, span_npages, span_freeindex, span_nelems, span_alloc_bits, span_spanclass,
      span_state, span_elemsize, span_limit, span_specials;
  std::optional<Field> span_large_type;  // Go 1.22+
  // sizeof(runtime.spanInlineMarkBits) (Go 1.25+ with Green Tea), else 0.
  uint64_t inline_mark_bits_size = 0;

  // runtime.special and the kinds goref follows.
  Field special_next, special_offset, special_kind;
  uint64_t special_size = 0;
  std::optional<uint64_t> kind_finalizer, kind_weak_handle, kind_cleanup;
  uint64_t specialfinalizer_fn = 0;
  // specialCleanup: fn (Go 1.24–1.25) or cleanup.fn/cleanup.arg (1.26+).
  std::optional<uint64_t> specialcleanup_fn, specialcleanup_arg;
  std::optional<uint64_t> specialweakhandle_handle;  // Go 1.23+

  // internal/abi.Type.
  Field type_size, type_ptrbytes, type_tflag, type_kind, type_gcdata;
  uint64_t type_struct_size = 48;
  // ArrayType.Elem/Len, StructType.Fields ([]StructField), StructField.Typ/Offset: enough to build
  // a GC mask from a type's structure, as the runtime's buildGCMask does.
  uint64_t arraytype_elem = 0, arraytype_len = 0, structtype_fields = 0;
  uint64_t structfield_size = 0, structfield_typ = 0, structfield_offset = 0;

  // runtime.moduledata.
  uint64_t md_size = 0;
  Field md_data, md_edata, md_bss, md_ebss, md_types, md_etypes, md_next, md_rodata;
  uint64_t md_gcdatamask = 0, md_gcbssmask = 0;  // runtime.bitvector {n int32; bytedata *uint8}

  // The finalizer queue: runtime.allfin lists finBlocks (finblock up to Go 1.24) by alllink.
  // nullopt when the runtime's DWARF lacks them (queued finalizers are then not roots).
  struct FinBlock {
    uint64_t size = 0, alllink = 0, fin = 0, finalizer_size = 0, fn = 0, arg = 0;
    Field cnt;
  };
  std::optional<FinBlock> finblock;
  // Go 1.25+: the cleanup queue. runtime.gcCleanups.all lists every cleanupBlock by alllink; the
  // first n elements of a block's cleanups are queued (or running) cleanups, each a *funcval
  // (1.25) or a runtime.cleanupFn {call, fn, arg} (1.26+). nullopt before Go 1.25.
  struct CleanupBlock {
    uint64_t all = 0;  // offset in runtime.cleanupQueue of all's pointer word
    uint64_t size = 0, alllink = 0, cleanups = 0, elem_size = 0;
    Field n;
    std::optional<uint64_t> fn, arg;  // offsets in cleanupFn; absent: the element is the fn
  };
  std::optional<CleanupBlock> cleanupblock;
};

// Resolves the layout from prog's DWARF. Errors: kNoDwarf without DWARF (with what to do),
// kUnsupported naming the first field or constant that is missing.
[[nodiscard]] Result<HeapLayout> resolve_heap_layout(const Program& prog);

}  // namespace goref::runtime
