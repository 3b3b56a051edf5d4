#include "goref/scan/marker.h"

#include <cstring>

namespace goref::scan {

Marker::Marker(const runtime::HeapSnapshot& snap, const runtime::HeapBits& bits, RefTree& tree)
    : snap_(snap), bits_(bits), tree_(tree) {
  uint64_t total = 0;
  first_bit_.reserve(snap.spans.size());
  for (const auto& s : snap.spans) {
    first_bit_.push_back(total);
    total += s.nelems;
  }
  marks_.assign((total + 63) / 64, 0);
}

std::optional<ObjRef> Marker::find(uint64_t p) const {
  const runtime::Span* s = snap_.span_of(p);
  if (s == nullptr || p < s->base) return std::nullopt;
  uint64_t slot = runtime::HeapSnapshot::slot_of(*s, p);
  if (slot >= s->nelems || !s->allocated(static_cast<uint32_t>(slot))) return std::nullopt;
  return ObjRef{s, static_cast<uint32_t>(slot), s->base + slot * s->elemsize};
}

bool Marker::marked(const ObjRef& o) const {
  uint64_t i = first_bit_[static_cast<size_t>(o.span - snap_.spans.data())] + o.slot;
  return (marks_[i / 64] >> (i % 64)) & 1;
}

bool Marker::mark(const ObjRef& o, RefTree::NodeId node) {
  uint64_t i = first_bit_[static_cast<size_t>(o.span - snap_.spans.data())] + o.slot;
  uint64_t bit = uint64_t{1} << (i % 64);
  if (marks_[i / 64] & bit) return false;
  marks_[i / 64] |= bit;
  stats_.objects++;
  stats_.bytes += o.span->elemsize;
  tree_.add(node, 1, o.span->elemsize);
  return true;
}

std::optional<uint64_t> Marker::word(uint64_t a) const {
  const runtime::Span* s = snap_.span_of(a);
  if (s == nullptr || s->mem == nullptr || a < s->base || a % 8 != 0) return std::nullopt;
  uint64_t v;
  std::memcpy(&v, s->mem + (a - s->base), 8);
  return v;
}

void Marker::push_pointers(const ObjRef& o, RefTree::NodeId node) {
  const std::byte* mem = o.span->mem + (o.base - o.span->base);
  auto r = bits_.for_each_pointer(*o.span, o.base, [&](uint64_t w) {
    uint64_t v;
    std::memcpy(&v, mem + w * 8, 8);
    if (v == 0) return;
    auto t = find(v);
    if (t && mark(*t, node)) work_.push_back(*t);
  });
  if (!r.ok()) stats_.metadata_errors++;
}

void Marker::drain(RefTree::NodeId node) {
  while (!work_.empty()) {
    ObjRef o = work_.back();
    work_.pop_back();
    push_pointers(o, node);
  }
}

void Marker::mark_from(uint64_t p, RefTree::NodeId node) {
  if (auto o = find(p)) mark_from(*o, node);
}

void Marker::mark_from(const ObjRef& o, RefTree::NodeId node) {
  if (!mark(o, node)) return;
  work_.push_back(o);
  drain(node);
}

void Marker::scan_contents(const ObjRef& o, RefTree::NodeId node) {
  push_pointers(o, node);
  drain(node);
}

}  // namespace goref::scan
