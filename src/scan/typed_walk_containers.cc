// TypedWalker's maps and channels: their runtime structures are described by types the compiler
// synthesizes into DWARF (map<K,V>/table<K,V>/groupReference<K,V> and the group for Swiss
// tables; hash<K,V>/bucket<K,V> before them; hchan<T>), so their layouts come from there too.
#include <algorithm>

#include "goref/scan/typed_walk.h"

namespace goref::scan {
namespace {

// Bounds on what a (possibly torn or hostile) map or channel may claim.
constexpr uint64_t kMaxDirLen = 1 << 24;
constexpr uint64_t kMaxBucketsLog2 = 40;
constexpr uint64_t kMaxOverflowChain = 1 << 20;
constexpr uint8_t kMinTopHash = 5;       // tophash values below mark empty or evacuated slots
constexpr uint8_t kCtrlEmptyBit = 0x80;  // Swiss control byte: high bit set = empty/deleted

}  // namespace

bool TypedWalker::own(uint64_t p, RefTree::NodeId node, int depth, ObjRef* out) {
  if (p == 0) return false;
  auto obj = m_.find(p);
  if (!obj || !m_.mark(*obj, node)) return false;
  ++stats_.typed_objects;
  work_.push_back({Item::Op::kLeftover, 0, {}, node, kNoLabel, depth, *obj, 0, 0, nullptr});
  if (out) *out = *obj;
  return true;
}

void TypedWalker::push_entry(uint64_t addr, binary::TypeRef t, RefTree::NodeId node, uint32_t label,
                             int depth) {
  if (has_pointers(t)) work_.push_back({Item::Op::kValue, addr, t, node, label, depth});
}

const TypedWalker::MapLayout& TypedWalker::map_layout(const Plan& pl) {
  auto [it, inserted] = maps_.try_emplace(pl.target ? pl.target->die_offset : 0);
  MapLayout& L = it->second;
  if (!inserted || !pl.target) return L;
  auto pointee = [&](binary::TypeRef t) -> std::optional<binary::TypeRef> {
    auto ti = d_.info(d_.strip_typedefs(t).value_or(t));
    if (!ti.ok() || !ti->target) return std::nullopt;
    return d_.strip_typedefs(*ti->target).value_or(*ti->target);
  };
  auto hdr = pointee(*pl.target);
  if (!hdr) return L;
  auto off = [&](binary::TypeRef s, std::string_view f) -> std::optional<binary::Member> {
    auto m = d_.member(s, f);
    if (!m.ok()) return std::nullopt;
    return *m;
  };
  auto size = [&](binary::TypeRef t) { return d_.info(t).value_or(binary::TypeInfo{}).size; };
  if (auto dp = off(*hdr, "dirPtr")) {  // Swiss tables (Go 1.24+)
    auto dl = off(*hdr, "dirLen");
    auto tp = pointee(dp->type);  // *table
    auto table = tp ? pointee(*tp) : std::nullopt;
    if (!dl || !table) return L;
    auto gd = off(*table, "groups.data"), lm = off(*table, "groups.lengthMask");
    auto group = gd ? pointee(gd->type) : std::nullopt;
    if (!lm || !group) return L;
    auto slots = off(*group, "slots");
    if (!slots) return L;
    auto arr = d_.info(d_.strip_typedefs(slots->type).value_or(slots->type));
    if (!arr.ok() || !arr->target) return L;
    binary::TypeRef slot = d_.strip_typedefs(*arr->target).value_or(*arr->target);
    auto k = off(slot, "key"), e = off(slot, "elem");
    if (!k || !e) return L;
    L.swiss = true;
    L.dir_ptr = dp->offset;
    L.dir_len = dl->offset;
    L.groups_data = gd->offset;
    L.length_mask = lm->offset;
    L.group_size = size(*group);
    L.slots = slots->offset;
    L.slot_size = size(slot);
    L.key_off = k->offset;
    L.elem_off = e->offset;
    L.key = k->type;
    L.elem = e->type;
    L.ok = L.group_size > 0 && L.slot_size > 0;
    return L;
  }
  auto b = off(*hdr, "B"), bk = off(*hdr, "buckets"), ob = off(*hdr, "oldbuckets");
  auto bucket = bk ? pointee(bk->type) : std::nullopt;
  if (!b || !bucket || !ob) return L;
  auto th = off(*bucket, "tophash"), ks = off(*bucket, "keys"), vs = off(*bucket, "values"),
       ov = off(*bucket, "overflow");
  if (!th || !ks || !vs || !ov) return L;
  auto ka = d_.info(d_.strip_typedefs(ks->type).value_or(ks->type));
  auto va = d_.info(d_.strip_typedefs(vs->type).value_or(vs->type));
  if (!ka.ok() || !va.ok() || !ka->target || !va->target) return L;
  L.b = b->offset;
  L.buckets = bk->offset;
  L.oldbuckets = ob->offset;
  L.bucket_size = size(*bucket);
  L.tophash = th->offset;
  L.keys = ks->offset;
  L.values = vs->offset;
  L.overflow = ov->offset;
  L.key = *ka->target;
  L.elem = *va->target;
  L.key_size = size(L.key);
  L.elem_size = size(L.elem);
  L.ok = L.bucket_size > 0;
  return L;
}

void TypedWalker::walk_map(const Plan& pl, const Item& it) {
  auto hp = mem_.word(it.addr);
  if (!hp) return;
  RefTree::NodeId node = node_of(it);
  if (!own(*hp, node, it.depth)) return;
  const MapLayout& L = map_layout(pl);
  if (!L.ok || it.depth >= max_depth_) return;  // the leftover scan still charges it all
  auto groups = [&](Item::Op op, uint64_t first, uint64_t n) {
    Item g{op, first, {}, node, kNoLabel, it.depth + 1};
    g.count = n;
    g.array = &pl;
    g.map = &L;
    if (n > 0) work_.push_back(g);
  };
  if (L.swiss) {
    auto dir_len = mem_.word(*hp + L.dir_len), dir_ptr = mem_.word(*hp + L.dir_ptr);
    if (!dir_len || !dir_ptr || *dir_ptr == 0 || *dir_len > kMaxDirLen) return;
    own(*dir_ptr, node, it.depth);
    if (*dir_len == 0) {  // a small map: one group, no table
      groups(Item::Op::kGroups, *dir_ptr, 1);
      return;
    }
    for (uint64_t i = 0; i < *dir_len; ++i) {
      auto tp = mem_.word(*dir_ptr + i * 8);
      if (!tp || !own(*tp, node, it.depth)) continue;  // tables repeat in the directory
      auto data = mem_.word(*tp + L.groups_data), mask = mem_.word(*tp + L.length_mask);
      ObjRef g;
      if (!data || !mask || !own(*data, node, it.depth, &g)) continue;
      uint64_t room = (g.base + g.span->elemsize - *data) / L.group_size;
      groups(Item::Op::kGroups, *data, std::min(*mask + 1, room));
    }
    return;
  }
  Bytes bb = mem_.at(*hp + L.b, 1);
  if (bb.empty() || static_cast<uint8_t>(bb[0]) > kMaxBucketsLog2) return;
  uint64_t nb = uint64_t{1} << static_cast<uint8_t>(bb[0]);
  // While the map grows, entries not yet evacuated still live in the old buckets.
  for (auto [arr, n] : {std::pair{mem_.word(*hp + L.buckets).value_or(0), nb},
                        std::pair{mem_.word(*hp + L.oldbuckets).value_or(0), nb / 2}}) {
    ObjRef o;
    if (arr == 0 || !own(arr, node, it.depth, &o)) continue;
    groups(Item::Op::kBuckets, arr, std::min(n, (o.base + o.span->elemsize - arr) / L.bucket_size));
  }
}

void TypedWalker::step_group(const Item& it) {
  queue_next(it);
  const MapLayout& L = *it.map;
  const Plan& pl = *it.array;
  uint64_t g = it.addr + it.index * L.group_size;
  auto ctrl = mem_.word(g);
  if (!ctrl) return;
  for (uint64_t i = 8; i-- > 0;)
    if (!((*ctrl >> (8 * i)) & kCtrlEmptyBit)) {
      uint64_t slot = g + L.slots + i * L.slot_size;
      push_entry(slot + L.elem_off, L.elem, it.parent, pl.val_label, it.depth);
      push_entry(slot + L.key_off, L.key, it.parent, pl.key_label, it.depth);
    }
}

void TypedWalker::step_bucket(const Item& it) {
  queue_next(it);
  const MapLayout& L = *it.map;
  const Plan& pl = *it.array;
  uint64_t chain = 0;
  for (uint64_t bk = it.addr + it.index * L.bucket_size; bk != 0 && chain < kMaxOverflowChain;
       ++chain) {
    Bytes th = mem_.at(bk + L.tophash, 8);
    if (th.size() != 8) break;
    for (uint64_t i = 8; i-- > 0;)
      if (static_cast<uint8_t>(th[i]) >= kMinTopHash) {
        push_entry(bk + L.values + i * L.elem_size, L.elem, it.parent, pl.val_label, it.depth);
        push_entry(bk + L.keys + i * L.key_size, L.key, it.parent, pl.key_label, it.depth);
      }
    auto ov = mem_.word(bk + L.overflow);
    if (!ov || *ov == 0 || !own(*ov, it.parent, it.depth - 1)) break;
    bk = *ov;
  }
}

void TypedWalker::walk_chan(const Plan& pl, const Item& it) {
  auto hc = mem_.word(it.addr);
  if (!hc || !pl.target) return;
  RefTree::NodeId node = node_of(it);
  ObjRef o;
  if (!own(*hc, node, it.depth, &o)) return;
  auto ti = d_.info(*pl.target);
  if (!ti.ok() || !ti->target || !pl.elem || pl.elem_size == 0 || it.depth >= max_depth_) return;
  binary::TypeRef hchan = d_.strip_typedefs(*ti->target).value_or(*ti->target);
  auto buf_m = d_.member(hchan, "buf"), size_m = d_.member(hchan, "dataqsiz");
  if (!buf_m.ok() || !size_m.ok()) return;
  auto buf = mem_.word(*hc + buf_m->offset), n = mem_.word(*hc + size_m->offset);
  if (!buf || !n || *buf == 0 || *n == 0) return;
  // The buffer shares the hchan's allocation when elements hold no pointers; otherwise it is
  // an object of its own.
  ObjRef b;
  auto bo = m_.find(*buf);
  if (!bo) return;
  if (bo->base != o.base && !own(*buf, node, it.depth, &b)) return;
  if (!bo || !has_pointers(*pl.elem)) return;
  uint64_t count = std::min(*n, (bo->base + bo->span->elemsize - *buf) / pl.elem_size);
  Item r{Item::Op::kRange, *buf, *pl.elem, node, kNoLabel, it.depth + 1};
  r.count = count;
  r.array = &pl;
  if (count > 0) work_.push_back(r);
}

}  // namespace goref::scan
