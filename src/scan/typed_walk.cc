#include "goref/scan/typed_walk.h"

#include <cstring>

#include "goref/binary/pclntab.h"

namespace goref::scan {
namespace {

// reflect.Kind values carried by DW_AT_go_kind.
constexpr int64_t kGoChan = 18, kGoFunc = 19, kGoInterface = 20, kGoMap = 21, kGoPtr = 22,
                  kGoSlice = 23, kGoString = 24, kGoUnsafePointer = 26;
constexpr int kMaxTypeDepth = 64;
// abi.Type flags that say an interface holds the value itself in its data word.
constexpr uint8_t kKindDirectIface = 0x20;   // in Kind_, up to Go 1.25
constexpr uint8_t kTFlagDirectIface = 0x20;  // in TFlag, from Go 1.26

}  // namespace

Bytes MemView::at(uint64_t a, uint64_t n) const {
  const Region& sc = scratch_;
  if (a >= sc.base && a - sc.base <= sc.bytes.size() && n <= sc.bytes.size() - (a - sc.base))
    return sc.bytes.subspan(a - sc.base, n);
  for (const auto& r : regions_)
    if (a >= r.base && a - r.base <= r.bytes.size() && n <= r.bytes.size() - (a - r.base))
      return r.bytes.subspan(a - r.base, n);
  const auto* s = m_.snapshot().span_of(a);
  if (s == nullptr || s->mem == nullptr || a < s->base) return {};
  uint64_t span_bytes = s->bytes(m_.snapshot().layout.page_size);
  if (a - s->base > span_bytes || n > span_bytes - (a - s->base)) return {};
  return Bytes(s->mem + (a - s->base), n);
}

std::optional<uint64_t> MemView::word(uint64_t a) const {
  Bytes b = at(a, 8);
  if (b.size() != 8) return std::nullopt;
  uint64_t v;
  std::memcpy(&v, b.data(), 8);
  return v;
}

TypedWalker::TypedWalker(const runtime::Process& p, const binary::Dwarf& d, Marker& m,
                         RefTree& tree, const MemView& mem, int max_depth)
    : p_(p),
      d_(d),
      m_(m),
      tree_(tree),
      mem_(mem),
      max_depth_(max_depth),
      sub_objects_(tree.intern("$sub_objects$")) {
  const auto& L = m.snapshot().layout;
  if (auto t =
          p.program().elf().read_pointer(p.program().pclntab().moduledata().addr + L.md_types.off);
      t.ok())
    types_base_ = p.runtime_addr(*t).value();
}

const TypedWalker::Plan& TypedWalker::plan(binary::TypeRef t) {
  auto it = plans_.find(t.die_offset);
  if (it != plans_.end()) return it->second;
  Plan pl = build_plan(t);
  return plans_.emplace(t.die_offset, std::move(pl)).first->second;
}

TypedWalker::Plan TypedWalker::build_plan(binary::TypeRef t0) {
  using K = Plan::Kind;
  Plan pl;
  auto ti0 = d_.info(t0);
  if (!ti0.ok()) return pl;
  pl.name = ti0->name;
  int64_t gk = ti0->go_kind;
  binary::TypeRef t = d_.strip_typedefs(t0).value_or(t0);
  auto ti = d_.info(t);
  if (!ti.ok()) return pl;
  pl.size = ti->size;
  if (gk < 0) gk = ti->go_kind;
  auto elem_labels = [&](const std::optional<binary::TypeRef>& e) {
    std::string en = e ? d_.info(*e).value_or(binary::TypeInfo{}).name : std::string("?");
    for (int i = 0; i < 10; ++i) pl.elem_labels.push_back(tree_.intern(fmt_label(i, en)));
    pl.elem_labels.push_back(tree_.intern("[10+]. (" + en + ")"));
    if (e) pl.elem_size = d_.info(*e).value_or(binary::TypeInfo{}).size;
  };
  if (gk == kGoString) {
    pl.kind = K::kString;
  } else if (gk == kGoSlice) {
    pl.kind = K::kSlice;
    pl.elem = ti->go_elem;
    elem_labels(pl.elem);
  } else if (gk == kGoInterface) {
    pl.kind = K::kInterface;
    auto ms = d_.members(t);
    pl.iface_has_itab = ms.ok() && !ms->empty() && (*ms)[0].name == "tab";
  } else if (gk == kGoMap || gk == kGoChan) {
    // map[K]V and chan T are pointers to map<K,V> / hash<K,V> / hchan<T>.
    pl.kind = gk == kGoMap ? K::kMap : K::kChan;
    pl.target = t;  // the pointer type *map<K,V> / *hchan<T>
    auto tname = [&](const std::optional<binary::TypeRef>& x) {
      return x ? d_.info(*x).value_or(binary::TypeInfo{}).name : std::string("?");
    };
    pl.key_label = tree_.intern("$mapkey. (" + tname(ti0->go_key ? ti0->go_key : ti->go_key) + ")");
    pl.val_label =
        tree_.intern("$mapval. (" + tname(ti0->go_elem ? ti0->go_elem : ti->go_elem) + ")");
    pl.elem = ti0->go_elem ? ti0->go_elem : ti->go_elem;
    if (gk == kGoChan) elem_labels(pl.elem);
  } else if (gk == kGoFunc) {
    pl.kind = K::kFunc;
  } else if (gk == kGoUnsafePointer) {
    pl.kind = K::kPointer;
  } else if (ti->kind == binary::TypeKind::kPointer || gk == kGoPtr) {
    pl.kind = K::kPointer;
    if (ti->target) {
      auto pt = d_.info(d_.strip_typedefs(*ti->target).value_or(*ti->target));
      if (pt.ok() && pt->kind != binary::TypeKind::kUnspecified && pt->size > 0)
        pl.elem = ti->target;
    }
  } else if (ti->kind == binary::TypeKind::kStruct) {
    auto ms = d_.members(t);
    if (ms.ok())
      for (const auto& m : *ms)
        if (has_pointers(m.type))
          pl.fields.push_back(
              {m.offset, m.type,
               tree_.intern(m.name + ". (" + d_.info(m.type).value_or(binary::TypeInfo{}).name +
                            ")")});
    if (!pl.fields.empty()) pl.kind = K::kStruct;
  } else if (ti->kind == binary::TypeKind::kArray && ti->target && ti->array_count) {
    if (has_pointers(*ti->target)) {
      pl.kind = K::kArray;
      pl.elem = ti->target;
      pl.count = *ti->array_count;
      elem_labels(pl.elem);
    }
  }
  return pl;
}

std::string TypedWalker::fmt_label(int i, const std::string& elem) {
  return "[" + std::to_string(i) + "]. (" + elem + ")";
}

bool TypedWalker::has_pointers(binary::TypeRef t, int depth) {
  if (auto it = has_ptrs_.find(t.die_offset); it != has_ptrs_.end()) return it->second;
  if (depth > kMaxTypeDepth) return true;  // corrupt nesting: let the walk decide
  bool r = false;
  auto ti = d_.info(t);
  if (ti.ok()) {
    int64_t gk = ti->go_kind;
    binary::TypeRef s = d_.strip_typedefs(t).value_or(t);
    auto si = d_.info(s);
    if (gk < 0 && si.ok()) gk = si->go_kind;
    if (gk == kGoString || gk == kGoSlice || gk == kGoInterface || gk == kGoMap || gk == kGoChan ||
        gk == kGoFunc || gk == kGoUnsafePointer || gk == kGoPtr) {
      r = true;
    } else if (si.ok() && si->kind == binary::TypeKind::kPointer) {
      r = true;
    } else if (si.ok() && si->kind == binary::TypeKind::kStruct) {
      if (auto ms = d_.members(s); ms.ok())
        for (const auto& m : *ms)
          if (has_pointers(m.type, depth + 1)) {
            r = true;
            break;
          }
    } else if (si.ok() && si->kind == binary::TypeKind::kArray && si->target) {
      r = si->array_count.value_or(0) > 0 && has_pointers(*si->target, depth + 1);
    }
  }
  has_ptrs_[t.die_offset] = r;
  return r;
}

std::optional<binary::TypeRef> TypedWalker::dynamic_type(uint64_t rtype, bool& direct) {
  direct = false;
  if (rtype < types_base_) return std::nullopt;
  auto t = d_.type_for_runtime_type(rtype - types_base_);
  if (!t) return std::nullopt;
  const auto& L = m_.snapshot().layout;
  std::vector<std::byte> b(L.type_struct_size);
  auto got = p_.program().elf().read_vaddr(p_.link_addr(rtype), b);
  if (!got.ok() || *got != b.size()) return std::nullopt;
  if (p_.program().go_minor() >= 26)
    direct = L.type_tflag.get(b) & kTFlagDirectIface;
  else
    direct = L.type_kind.get(b) & kKindDirectIface;
  return t;
}

void TypedWalker::walk(uint64_t addr, binary::TypeRef t, RefTree::NodeId node) {
  work_.push_back({Item::Op::kValue, addr, t, node, kNoLabel, 0});
  while (!work_.empty()) {
    Item it = work_.back();
    work_.pop_back();
    step(it);
  }
}

void TypedWalker::follow(uint64_t p, std::optional<binary::TypeRef> t, const Item& it) {
  if (p == 0) return;
  auto obj = m_.find(p);
  if (!obj) return;  // not heap (data, bss, a stack, rodata) or a free slot
  RefTree::NodeId node = node_of(it);
  if (!m_.mark(*obj, node)) return;
  work_.push_back({Item::Op::kLeftover, 0, {}, node, kNoLabel, it.depth, *obj, 0, 0, nullptr});
  if (!t || it.depth >= max_depth_) {
    ++stats_.untyped_objects;
    return;
  }
  ++stats_.typed_objects;
  const Plan& pl = plan(*t);
  if (pl.kind == Plan::Kind::kNone || p + pl.size > obj->base + obj->span->elemsize) return;
  work_.push_back({Item::Op::kValue, p, *t, node, kNoLabel, it.depth + 1});
}

void TypedWalker::walk_interface(const Plan& pl, const Item& it) {
  auto w0 = mem_.word(it.addr), data = mem_.word(it.addr + 8);
  if (!w0 || !data || *w0 == 0) return;
  uint64_t rtype = *w0;
  if (pl.iface_has_itab) {
    // itab.Type (offset 8 in every version); static itabs are in the executable.
    std::byte b[8];
    auto got = p_.program().elf().read_vaddr(p_.link_addr(*w0 + 8), b);
    if (got.ok() && *got == 8)
      std::memcpy(&rtype, b, 8);
    else if (auto w = mem_.word(*w0 + 8))
      rtype = *w;
    else
      rtype = 0;
  }
  bool direct = false;
  auto dyn = rtype ? dynamic_type(rtype, direct) : std::nullopt;
  if (dyn && direct) {
    work_.push_back({Item::Op::kValue, it.addr + 8, *dyn, it.parent, it.label, it.depth});
    return;
  }
  follow(*data, dyn, it);
}

void TypedWalker::step(const Item& it) {
  using K = Plan::Kind;
  if (it.op == Item::Op::kRange) return step_range(it);
  if (it.op == Item::Op::kGroups) return step_group(it);
  if (it.op == Item::Op::kBuckets) return step_bucket(it);
  if (it.op == Item::Op::kLeftover) {
    // What the typed walk left: pointer words of the object (by the GC's bitmap) whose targets
    // are still unmarked. Read from the object's copy directly: no lookup per word.
    const ObjRef& o = it.obj;
    const std::byte* mem = o.span->mem + (o.base - o.span->base);
    leftover_.clear();
    (void)m_.bits().for_each_pointer(*o.span, o.base, [&](uint64_t w) {
      uint64_t v;
      std::memcpy(&v, mem + w * 8, 8);
      if (v == 0) return;
      if (auto t = m_.find(v); t && !m_.marked(*t)) leftover_.push_back(*t);
    });
    if (leftover_.empty()) return;
    RefTree::NodeId sub = tree_.child(it.parent, sub_objects_);
    for (const ObjRef& t : leftover_) m_.mark_from(t, sub);
    return;
  }
  const Plan& pl = plan(it.type);
  switch (pl.kind) {
    case K::kNone:
      return;
    case K::kPointer:
      if (auto v = mem_.word(it.addr)) follow(*v, pl.elem, it);
      return;
    case K::kString:
    case K::kOpaque:
      if (auto v = mem_.word(it.addr)) follow(*v, std::nullopt, it);
      return;
    case K::kFunc: {
      auto fv = mem_.word(it.addr);
      if (!fv || *fv == 0) return;
      auto obj = m_.find(*fv);
      if (!obj || m_.marked(*obj)) return;
      // A closure: named after the function it calls, under the value that holds it.
      std::string name = "func";
      if (auto code = m_.word(*fv))
        if (auto f = p_.program().pclntab().find_func(p_.link_addr(*code)))
          name = std::string(f->name());
      RefTree::NodeId node = tree_.child(node_of(it), name);
      if (m_.mark(*obj, node))
        work_.push_back(
            {Item::Op::kLeftover, 0, {}, node, kNoLabel, it.depth, *obj, 0, 0, nullptr});
      return;
    }
    case K::kInterface:
      walk_interface(pl, it);
      return;
    case K::kMap:
      walk_map(pl, it);
      return;
    case K::kChan:
      walk_chan(pl, it);
      return;
    case K::kStruct: {
      RefTree::NodeId node = node_of(it);
      for (size_t i = pl.fields.size(); i-- > 0;)
        work_.push_back({Item::Op::kValue, it.addr + pl.fields[i].off, pl.fields[i].type, node,
                         pl.fields[i].label, it.depth});
      return;
    }
    case K::kArray:
    case K::kSlice: {
      uint64_t base = it.addr, n = pl.count;
      RefTree::NodeId node;
      if (pl.kind == K::kSlice) {
        auto arr = mem_.word(it.addr), cap = mem_.word(it.addr + 16);
        if (!arr || !cap || *arr == 0) return;
        auto obj = m_.find(*arr);
        if (!obj) return;
        node = node_of(it);
        if (!m_.mark(*obj, node)) return;  // shared with a slice walked before
        ++stats_.typed_objects;
        work_.push_back(
            {Item::Op::kLeftover, 0, {}, node, kNoLabel, it.depth, *obj, 0, 0, nullptr});
        if (!pl.elem || pl.elem_size == 0 || it.depth >= max_depth_ || !has_pointers(*pl.elem))
          return;
        base = *arr;
        n = std::min(*cap, (obj->base + obj->span->elemsize - base) / pl.elem_size);
      } else {
        node = node_of(it);
      }
      if (pl.elem_size == 0 || !pl.elem || n == 0) return;
      Item r{Item::Op::kRange, base, *pl.elem, node, kNoLabel, it.depth + 1};
      r.count = n;
      r.array = &pl;
      work_.push_back(r);
      return;
    }
  }
}

void TypedWalker::queue_next(const Item& it) {
  if (it.index + 1 >= it.count) return;
  Item next = it;
  ++next.index;
  work_.push_back(next);
}

void TypedWalker::step_range(const Item& it) {
  const Plan& pl = *it.array;
  queue_next(it);
  work_.push_back({Item::Op::kValue, it.addr + it.index * pl.elem_size, it.type, it.parent,
                   pl.elem_labels[std::min<uint64_t>(it.index, 10)], it.depth});
}

}  // namespace goref::scan
