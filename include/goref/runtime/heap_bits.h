// HeapBits: which words of a heap object hold pointers, from the runtime's own pointer metadata
// in whichever form this Go version keeps it: the per-arena bitmap (Go 1.21); from Go 1.22 the
// bitmap at the end of a small-object span (below the inline mark bits when Green Tea keeps
// them there), the type header of a larger object, or the span's largeType. This is exactly
// what the garbage collector scans, so it is the ground truth for reachability.
#pragma once

#include <cstdint>

#include "goref/base/bytes.h"
#include "goref/base/result.h"
#include "goref/runtime/heap_snapshot.h"
#include "goref/runtime/type_masks.h"

namespace goref::runtime {

class HeapBits {
 public:
  // types may be null where no object has a type header (the tests' hand-made spans): such an
  // object's pointers are then an error.
  HeapBits(const HeapSnapshot& snap, TypeMasks* types) : s_(snap), types_(types) {}

  // Calls f(word) for each word index of the object at base (a slot start in span sp) that holds
  // a pointer. An error when its metadata cannot be read (a type header that names no type); a
  // header or largeType of 0 (an object being allocated) has no pointers yet.
  template <class F>
  [[nodiscard]] Result<void> for_each_pointer(const Span& sp, uint64_t base, F&& f) const;

  // The object's type from its malloc header or the span's largeType (Go 1.22+), or 0.
  [[nodiscard]] uint64_t header_type(const Span& sp, uint64_t base) const;

 private:
  const HeapSnapshot& s_;
  TypeMasks* types_;
};

template <class F>
Result<void> HeapBits::for_each_pointer(const Span& sp, uint64_t base, F&& f) const {
  const HeapLayout& L = s_.layout;
  if (sp.noscan() || sp.mem == nullptr) return {};
  const uint64_t words = sp.elemsize / 8;
  if (!L.min_size_for_malloc_header) {  // Go 1.21: the arena's bitmap
    uint64_t ai = (base - L.arena_base_offset) / L.heap_arena_bytes;
    auto it = s_.arena_bitmaps.find(ai);
    if (it == s_.arena_bitmaps.end())
      return Error(Errc::kUnmapped, "no pointer bitmap for arena of " + to_hex(base));
    const auto& bm = it->second;
    uint64_t w0 = (base % L.heap_arena_bytes) / 8;
    for (uint64_t w = 0; w < words; ++w) {
      uint64_t i = w0 + w;
      if (i / 8 < bm.size() && ((bm[i / 8] >> (i % 8)) & 1)) f(w);
    }
    return {};
  }
  if (sp.elemsize <= *L.min_size_for_malloc_header) {  // bits at the end of the span
    uint64_t bytes = sp.bytes(L.page_size);
    uint64_t off = bytes - bytes / 64 - (sp.inline_mark_bits ? L.inline_mark_bits_size : 0);
    const auto* bm = reinterpret_cast<const uint8_t*>(sp.mem) + off;
    uint64_t o0 = (base - sp.base) / 8;
    for (uint64_t w = 0; w < words; ++w) {
      uint64_t i = o0 + w;
      if (off + i / 8 < bytes && ((bm[i / 8] >> (i % 8)) & 1)) f(w);
    }
    return {};
  }
  uint64_t t = header_type(sp, base);
  if (t == 0) return {};
  if (types_ == nullptr) return Error(Errc::kInternal, "no type masks for a typed object");
  GOREF_TRY(const TypeMask* m, types_->mask(t));
  if (m->size == 0 || m->size % 8 != 0) return {};
  // A header takes the slot's first word; the value (an array of elements when the allocation
  // was a slice) follows. A large object has no header.
  uint64_t first = sp.sizeclass() != 0 ? 1 : 0;
  uint64_t stride = m->size / 8, ptrwords = m->ptrbytes / 8;
  for (uint64_t e = first; e < words; e += stride)
    for (uint64_t w = 0; w < ptrwords && e + w < words; ++w)
      if (m->pointer(w)) f(e + w);
  return {};
}

inline uint64_t HeapBits::header_type(const Span& sp, uint64_t base) const {
  if (sp.sizeclass() == 0) return sp.large_type;
  if (sp.mem == nullptr || !s_.layout.min_size_for_malloc_header ||
      sp.elemsize <= *s_.layout.min_size_for_malloc_header)
    return 0;
  return load<uint64_t>(Bytes(sp.mem, sp.bytes(s_.layout.page_size)), base - sp.base).value_or(0);
}

}  // namespace goref::runtime
