#include "goref/scan/global_roots.h"

#include <algorithm>
#include <cstring>

#include "goref/binary/dwarf.h"
#include "goref/scan/typed_walk.h"

namespace goref::scan {

GlobalIndex::GlobalIndex(const runtime::Process& p) {
  const auto* d = p.program().dwarf();
  if (!d) return;
  for (auto& v : d->variables()) {
    auto ti = d->info(v.type);
    if (!ti.ok() || ti->size == 0) continue;
    uint64_t lo = p.runtime_addr(v.address).value();
    vars_.push_back({lo, lo + ti->size, std::move(v.name), v.type});
  }
  std::sort(vars_.begin(), vars_.end(), [](const Var& a, const Var& b) { return a.lo < b.lo; });
  // Overlaps only come from corrupt DWARF; keep the first so lookups stay a binary search.
  std::vector<Var> clean;
  for (auto& v : vars_)
    if (clean.empty() || v.lo >= clean.back().hi) clean.push_back(std::move(v));
  vars_ = std::move(clean);
}

const GlobalIndex::Var* GlobalIndex::var_at(uint64_t a) const {
  auto it = std::upper_bound(vars_.begin(), vars_.end(), a,
                             [](uint64_t x, const Var& v) { return x < v.lo; });
  if (it == vars_.begin()) return nullptr;
  --it;
  return a < it->hi ? &*it : nullptr;
}

bool GlobalIndex::Var::runtime_internal() const {
  return name.starts_with("runtime.") || name.starts_with("internal/");
}

void walk_user_globals(const GlobalIndex& idx, TypedWalker& w, RefTree& tree) {
  for (const auto& v : idx.vars())
    if (!v.runtime_internal()) w.walk(v.lo, v.type, tree.root(v.name));
}

size_t mark_globals(const GlobalIndex& idx, GlobalPass pass, Marker& m, RefTree& tree) {
  size_t words = 0;
  for (const auto& seg : m.snapshot().segments) {
    const std::string unnamed = seg.name + " segment";
    uint64_t n = std::min<uint64_t>(seg.bytes.size() / 8, seg.mask.size() * 8);
    for (uint64_t i = 0; i < n; ++i) {
      if (!((seg.mask[i / 8] >> (i % 8)) & 1)) continue;
      uint64_t v;
      std::memcpy(&v, seg.bytes.data() + i * 8, 8);
      if (v == 0) continue;
      const GlobalIndex::Var* var = idx.var_at(seg.base + i * 8);
      const std::string* name = var ? &var->name : nullptr;
      bool user = var && !var->runtime_internal();
      if (user != (pass == GlobalPass::kUser)) continue;
      ++words;
      m.mark_from(v, tree.root(name ? *name : unnamed));
    }
  }
  return words;
}

}  // namespace goref::scan
