// Marker: the garbage collector's mark phase over a HeapSnapshot, charging every object to the
// reference path it was first reached through. An object is found from a pointer as the
// runtime's findObject does (any address inside an allocated slot of an in-use span, interior
// pointers included) and scanned with the runtime's own pointer metadata (HeapBits). The walk
// uses an explicit work list, so a million-node linked list costs memory, not host stack.
//
// Each object is marked once: whoever reaches it first owns it, as in the tools users know.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "goref/runtime/heap_bits.h"
#include "goref/runtime/heap_snapshot.h"
#include "goref/scan/ref_tree.h"

namespace goref::scan {

struct ObjRef {
  const runtime::Span* span = nullptr;
  uint32_t slot = 0;
  uint64_t base = 0;
};

struct MarkStats {
  uint64_t objects = 0, bytes = 0;
  uint64_t metadata_errors = 0;  // objects whose pointer metadata could not be read (not scanned)
};

class Marker {
 public:
  Marker(const runtime::HeapSnapshot& snap, const runtime::HeapBits& bits, RefTree& tree);

  // The allocated object containing p, or nullopt (not heap, free slot, stack memory…).
  [[nodiscard]] std::optional<ObjRef> find(uint64_t p) const;
  [[nodiscard]] bool marked(const ObjRef& o) const;
  // Marks o if unmarked, charging it to node; true if it was newly marked (the caller then
  // owns scanning it).
  bool mark(const ObjRef& o, RefTree::NodeId node);

  // Marks the object p points to and everything reachable from it that is still unmarked,
  // charging them all to node.
  void mark_from(uint64_t p, RefTree::NodeId node);
  // The same from an object already found.
  void mark_from(const ObjRef& o, RefTree::NodeId node);
  // Scans an object's pointers without marking the object itself (a finalizer's object: the
  // runtime keeps what it points to alive, not the object).
  void scan_contents(const ObjRef& o, RefTree::NodeId node);

  // The word at address a if it lies in a copied span; for reading object contents.
  [[nodiscard]] std::optional<uint64_t> word(uint64_t a) const;

  [[nodiscard]] const MarkStats& stats() const { return stats_; }
  [[nodiscard]] const runtime::HeapBits& bits() const { return bits_; }
  [[nodiscard]] const runtime::HeapSnapshot& snapshot() const { return snap_; }

 private:
  void push_pointers(const ObjRef& o, RefTree::NodeId node);
  void drain(RefTree::NodeId node);

  const runtime::HeapSnapshot& snap_;
  const runtime::HeapBits& bits_;
  RefTree& tree_;
  std::vector<uint64_t> first_bit_;  // per span: index of its slot 0 in marks_
  std::vector<uint64_t> marks_;
  std::vector<ObjRef> work_;
  MarkStats stats_;
};

}  // namespace goref::scan
