// TypedWalker: the first, typed pass of the reference analysis. Starting from a root variable
// and its DWARF type, it follows pointers the way the type says — struct fields, array, slice
// and string backing stores, interfaces through their dynamic type (DW_AT_go_runtime_type),
// closures by their function — and charges each heap object, once, to the path that reached it
// first: "main.registry" / "[3]. (*main.entry)" / "buf. ([]uint8)". After an object's typed
// contents, its pointer words are scanned by the GC's own bitmap, so whatever the type did not
// describe (unsafe casts, interior pointers, maps and channels, the depth cut-off) is still
// charged, as "$sub_objects$" under the object's path. Every reachable byte is counted once.
//
// The walk keeps its own work list: a million-node list costs memory, not host stack.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "goref/binary/dwarf.h"
#include "goref/runtime/process.h"
#include "goref/scan/marker.h"
#include "goref/scan/ref_tree.h"

namespace goref::scan {

// Bytes of target memory the walk may read, from the snapshots: heap spans and extra regions
// (data, bss, a goroutine's stack).
class MemView {
 public:
  explicit MemView(const Marker& m) : m_(m) {}
  void add_region(uint64_t base, Bytes bytes) { regions_.push_back({base, bytes}); }
  // One more region that is replaced at each call: a goroutine's stack, or a local variable's
  // value assembled from its pieces.
  void set_scratch(uint64_t base, Bytes bytes) { scratch_ = {base, bytes}; }
  // [a, a+n) if it lies in one region or one copied span; empty otherwise.
  [[nodiscard]] Bytes at(uint64_t a, uint64_t n) const;
  [[nodiscard]] std::optional<uint64_t> word(uint64_t a) const;

 private:
  struct Region {
    uint64_t base;
    Bytes bytes;
  };
  const Marker& m_;
  std::vector<Region> regions_;
  Region scratch_{0, {}};
};

class TypedWalker {
 public:
  TypedWalker(const runtime::Process& p, const binary::Dwarf& d, Marker& m, RefTree& tree,
              const MemView& mem, int max_depth);

  // Walks the value of type t at address addr, charging what it reaches under node.
  void walk(uint64_t addr, binary::TypeRef t, RefTree::NodeId node);

  struct Stats {
    uint64_t typed_objects = 0, untyped_objects = 0, type_errors = 0;
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }

 private:
  // What the walk needs of a type, decoded once per DWARF type.
  struct Plan {
    enum class Kind : uint8_t {
      kNone,       // holds no pointers the walk follows
      kPointer,    // *T (elem: T; unset for unsafe.Pointer and *void)
      kString,     // backing bytes charged to the string itself
      kSlice,      // elem: T; backing array charged to the slice, elements walked
      kStruct,     // fields
      kArray,      // elem, count
      kInterface,  // eface or iface
      kOpaque,     // a pointer whose target is charged without a type
      kMap,        // map[K]V: header, directory, tables and groups charged to the map;
                   // entries walked as $mapkey / $mapval
      kChan,       // chan T: the hchan and its buffer charged to the channel, elements walked
      kFunc,       // a func value: a closure, charged under its function's name
    } kind = Kind::kNone;
    uint64_t size = 0;
    std::optional<binary::TypeRef> elem;
    uint64_t count = 0, elem_size = 0;
    bool iface_has_itab = false;  // non-empty interface: the first word is an *itab
    struct Field {
      uint64_t off;
      binary::TypeRef type;
      uint32_t label;  // "name. (Type)", interned in the tree
    };
    std::vector<Field> fields;
    std::string name;  // the Go type name, for labels
    // Arrays and slices: "[0]. (T)" … "[9]. (T)", "[10+]. (T)".
    std::vector<uint32_t> elem_labels;
    // kMap / kChan: the runtime structure the value points to (map<K,V>, hash<K,V>, hchan<T>).
    std::optional<binary::TypeRef> target;
    uint32_t key_label = 0, val_label = 0;  // "$mapkey. (K)", "$mapval. (V)"
  };
  // Offsets of one map type's runtime structures, from their DWARF (Swiss tables from Go 1.24,
  // buckets before and with GOEXPERIMENT=noswissmap).
  struct MapLayout {
    bool ok = false, swiss = false;
    // Swiss: map<K,V>.dirPtr/dirLen, table<K,V>.groups.data/lengthMask, the group's size,
    // slots offset, slot size and key/elem offsets and types.
    uint64_t dir_ptr = 0, dir_len = 0, groups_data = 0, length_mask = 0;
    uint64_t group_size = 0, slots = 0, slot_size = 0, key_off = 0, elem_off = 0;
    // Buckets: hash<K,V>.B/buckets/oldbuckets and bucket<K,V>'s layout (slot arrays of 8).
    uint64_t b = 0, buckets = 0, oldbuckets = 0, bucket_size = 0, tophash = 0, keys = 0, values = 0,
             overflow = 0, key_size = 0, elem_size = 0;
    binary::TypeRef key, elem;
  };
  const Plan& plan(binary::TypeRef t);
  Plan build_plan(binary::TypeRef t);
  bool has_pointers(binary::TypeRef t, int depth = 0);
  static std::string fmt_label(int i, const std::string& elem);
  static constexpr uint32_t kNoLabel = UINT32_MAX;

  // A value to walk, or an object whose leftover pointers to scan. The value's node is created
  // only when it charges something: label (if set) under parent.
  struct Item {
    // kRange: elements [index, count) of an array at addr, one at a time, so a huge array
    // costs one work item, not one per element.
    // kGroups / kBuckets: a map's Swiss groups or buckets [index, count) from addr, one at a
    // time, for the same reason.
    enum class Op : uint8_t { kValue, kLeftover, kRange, kGroups, kBuckets } op;
    uint64_t addr;
    binary::TypeRef type;
    RefTree::NodeId parent;
    uint32_t label;  // kNoLabel: the value is charged to parent itself
    int depth;
    ObjRef obj = {};  // kLeftover
    uint64_t index = 0, count = 0;
    const Plan* array = nullptr;  // kRange: the array or slice type's plan; maps: the map's
    const MapLayout* map = nullptr;
  };
  void step(const Item& it);
  void step_range(const Item& it);
  // kRange/kGroups/kBuckets: queues the item for its next element, before this one's work is
  // pushed, so the elements are walked in order, one at a time.
  void queue_next(const Item& it);
  RefTree::NodeId node_of(const Item& it) {
    return it.label != kNoLabel ? tree_.child(it.parent, it.label) : it.parent;
  }
  // p reached through a pointer of pointee type t (nullopt: untyped), held by it's value.
  void follow(uint64_t p, std::optional<binary::TypeRef> t, const Item& it);
  void walk_interface(const Plan& pl, const Item& it);
  void walk_map(const Plan& pl, const Item& it);
  void step_group(const Item& it);
  void step_bucket(const Item& it);
  void walk_chan(const Plan& pl, const Item& it);
  const MapLayout& map_layout(const Plan& pl);
  // Marks a map's or channel's internal object to node and queues its leftover scan; true if
  // it was newly marked.
  bool own(uint64_t p, RefTree::NodeId node, int depth, ObjRef* out = nullptr);
  void push_entry(uint64_t addr, binary::TypeRef t, RefTree::NodeId node, uint32_t label,
                  int depth);
  // The DWARF type of a runtime type address, and whether its values are stored directly in
  // an interface's data word.
  std::optional<binary::TypeRef> dynamic_type(uint64_t rtype, bool& direct);

  const runtime::Process& p_;
  const binary::Dwarf& d_;
  Marker& m_;
  RefTree& tree_;
  const MemView& mem_;
  int max_depth_;
  uint64_t types_base_ = 0;  // moduledata.types: runtime type addresses are offsets from it
  std::unordered_map<uint64_t, Plan> plans_;
  std::unordered_map<uint64_t, bool> has_ptrs_;
  std::unordered_map<uint64_t, MapLayout> maps_;
  std::vector<Item> work_;
  std::vector<ObjRef> leftover_;
  uint32_t sub_objects_;
  Stats stats_;
};

}  // namespace goref::scan
