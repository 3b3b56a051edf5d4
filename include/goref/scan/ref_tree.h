// RefTree: where heap bytes are attributed — a tree of named reference paths (a root variable,
// then fields, elements, map keys…) with the objects and bytes charged to each node itself. It
// is what the profile writer turns into one pprof sample per node. Names are interned; a child
// is found by (parent, name), so building it costs one hash lookup per edge.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace goref::scan {

class RefTree {
 public:
  using NodeId = uint32_t;
  static constexpr NodeId kNone = UINT32_MAX;

  // The top-level node of that name (a root), created on first use.
  NodeId root(std::string_view name) { return child(kNone, name); }
  NodeId child(NodeId parent, std::string_view name) { return child(parent, intern(name)); }
  // By an interned name: one hash lookup, no string work (the hot path of a walk).
  NodeId child(NodeId parent, uint32_t name);
  uint32_t intern(std::string_view s);
  void add(NodeId n, uint64_t objects, uint64_t bytes) {
    nodes_[n].objects += objects;
    nodes_[n].bytes += bytes;
  }

  struct Node {
    NodeId parent = kNone;
    uint32_t name = 0;
    uint64_t objects = 0, bytes = 0;
  };
  [[nodiscard]] const std::vector<Node>& nodes() const { return nodes_; }
  [[nodiscard]] const std::string& name(const Node& n) const { return names_[n.name]; }
  // The names from n up to its root: leaf first, as a pprof sample lists locations.
  [[nodiscard]] std::vector<std::string> path(NodeId n) const;
  // Objects and bytes of n and everything below it.
  [[nodiscard]] std::vector<std::pair<uint64_t, uint64_t>> cumulative() const;

 private:
  std::vector<Node> nodes_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::unordered_map<uint64_t, NodeId> children_;  // (parent + 1) << 32 | name → child
};

}  // namespace goref::scan
