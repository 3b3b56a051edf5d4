#include "goref/scan/ref_tree.h"

namespace goref::scan {

uint32_t RefTree::intern(std::string_view s) {
  auto it = name_ids_.find(std::string(s));
  if (it != name_ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(s);
  name_ids_.emplace(names_.back(), id);
  return id;
}

RefTree::NodeId RefTree::child(NodeId parent, uint32_t nm) {
  uint64_t key = (uint64_t{parent + 1u} << 32) | nm;
  auto [it, inserted] = children_.try_emplace(key, static_cast<NodeId>(nodes_.size()));
  if (inserted) nodes_.push_back(Node{parent, nm, 0, 0});
  return it->second;
}

std::vector<std::string> RefTree::path(NodeId n) const {
  std::vector<std::string> out;
  // Parents are created before their children, so the walk ends; the bound guards the invariant.
  for (size_t guard = 0; n != kNone && guard <= nodes_.size(); ++guard) {
    out.push_back(names_[nodes_[n].name]);
    n = nodes_[n].parent;
  }
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> RefTree::cumulative() const {
  std::vector<std::pair<uint64_t, uint64_t>> c(nodes_.size());
  // Children always have larger ids than their parents: one backwards pass sums subtrees.
  for (size_t i = nodes_.size(); i-- > 0;) {
    c[i].first += nodes_[i].objects;
    c[i].second += nodes_[i].bytes;
    if (nodes_[i].parent != kNone) {
      c[nodes_[i].parent].first += c[i].first;
      c[nodes_[i].parent].second += c[i].second;
    }
  }
  return c;
}

}  // namespace goref::scan
