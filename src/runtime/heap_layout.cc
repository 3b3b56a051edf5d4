#include "goref/runtime/heap_layout.h"

#include <string>
#include <string_view>

#include "goref/binary/dwarf.h"

namespace goref::runtime {

uint64_t Field::get(Bytes s) const {
  switch (size) {
    case 1:
      return load<uint8_t>(s, off).value_or(0);
    case 2:
      return load<uint16_t>(s, off).value_or(0);
    case 4:
      return load<uint32_t>(s, off).value_or(0);
    default:
      return load<uint64_t>(s, off).value_or(0);
  }
}

namespace {

// Fields of one runtime struct, by the runtime's names. A missing struct makes every required
// field an error that names it, so the first missing piece is what the user sees.
class Fields {
 public:
  Fields(const binary::Dwarf& d, std::string_view type) : d_(&d), name_(type), t_(d.type(type)) {}

  [[nodiscard]] bool exists() const { return t_.has_value(); }

  std::optional<Field> optional(std::string_view path) const {
    if (!t_) return std::nullopt;
    auto m = d_->member(*t_, path);
    if (!m.ok()) return std::nullopt;
    auto ti = d_->info(m->type);
    return Field{m->offset, ti.ok() ? ti->size : 0};
  }
  Result<Field> required(std::string_view path) const {
    if (auto f = optional(path)) return *f;
    return missing(path);
  }
  // The first of several names a field has had across versions.
  Result<Field> required_any(std::initializer_list<std::string_view> paths) const {
    for (auto p : paths)
      if (auto f = optional(p)) return *f;
    return missing(*paths.begin());
  }
  Result<uint64_t> size() const {
    if (t_)
      if (auto ti = d_->info(*t_); ti.ok() && ti->size > 0) return ti->size;
    return missing("$size");
  }

 private:
  Error missing(std::string_view path) const {
    return Error(Errc::kUnsupported, std::string(name_) + "." + std::string(path) +
                                         ": not in the program's DWARF; this runtime's heap "
                                         "layout is not one goref knows");
  }
  const binary::Dwarf* d_;
  std::string_view name_;
  std::optional<binary::TypeRef> t_;
};

Result<uint64_t> constant(const binary::Dwarf& d, std::string_view name) {
  if (auto v = d.constant(name)) return static_cast<uint64_t>(*v);
  return Error(Errc::kUnsupported, std::string(name) + ": constant not in the program's DWARF");
}

}  // namespace

Result<HeapLayout> resolve_heap_layout(const Program& prog) {
  const binary::Dwarf* dp = prog.dwarf();
  if (!dp)
    return Error(Errc::kNoDwarf, (prog.dwarf_error() ? prog.dwarf_error()->message()
                                                     : std::string("the executable has no DWARF")) +
                                     " (the heap analysis types every object through it)");
  const auto& d = *dp;
  HeapLayout L;
  GOREF_TRY(L.page_size, constant(d, "runtime._PageSize"));
  GOREF_TRY(L.heap_arena_bytes, constant(d, "runtime.heapArenaBytes"));
  GOREF_TRY(L.arena_l1_bits, constant(d, "runtime.arenaL1Bits"));
  GOREF_TRY(L.arena_l2_bits, constant(d, "runtime.arenaL2Bits"));
  // arenaBaseOffset is only emitted as the uintptr constant; arm64 has none (offset 0).
  L.arena_base_offset =
      static_cast<uint64_t>(d.constant("runtime.arenaBaseOffsetUintptr").value_or(0));
  GOREF_TRY(L.span_in_use, constant(d, "runtime.mSpanInUse"));
  if (auto v = d.constant("runtime.minSizeForMallocHeader"))  // Go 1.22+
    L.min_size_for_malloc_header = static_cast<uint64_t>(*v);
  if (L.page_size == 0 || L.heap_arena_bytes < L.page_size || L.arena_l2_bits > 32 ||
      L.arena_l1_bits > 16)
    return Error(Errc::kBadFormat, "runtime heap constants are implausible (page size " +
                                       std::to_string(L.page_size) + ", arena " +
                                       std::to_string(L.heap_arena_bytes) + ")");

  Fields mh(d, "runtime.mheap");
  GOREF_TRY(Field arenas, mh.required("arenas"));
  L.mheap_arenas = arenas.off;
  // Renamed allArenas → heapArenas in Go 1.25, when user arenas got their own list.
  GOREF_TRY(Field all, mh.required_any({"heapArenas", "allArenas"}));
  L.mheap_all_arenas = all.off;
  GOREF_TRY(L.mheap_sweepgen, mh.required("sweepgen"));
  GOREF_TRY(L.mheap_pages_in_use, mh.required("pagesInUse"));

  Fields ha(d, "runtime.heapArena");
  GOREF_TRY(L.arena_size, ha.size());
  GOREF_TRY(Field spans, ha.required("spans"));
  L.arena_spans = spans.off;
  if (auto f = ha.optional("bitmap")) L.arena_bitmap = f->off;  // Go 1.21
  if (!L.min_size_for_malloc_header && !L.arena_bitmap)
    return Error(Errc::kUnsupported,
                 "runtime.heapArena has neither a pointer bitmap nor does the runtime use malloc "
                 "headers (a Go 1.22 build with GOEXPERIMENT=noallocheaders?)");
  if (auto f = ha.optional("pageUseSpanInlineMarkBits")) L.arena_inline_mark_pages = f->off;

  Fields sp(d, "runtime.mspan");
  GOREF_TRY(L.span_size, sp.size());
  GOREF_TRY(L.span_start_addr, sp.required("startAddr"));
  GOREF_TRY(L.span_npages, sp.required("npages"));
  GOREF_TRY(L.span_freeindex, sp.required("freeindex"));
  GOREF_TRY(L.span_nelems, sp.required("nelems"));
  GOREF_TRY(L.span_alloc_bits, sp.required("allocBits"));
  GOREF_TRY(L.span_spanclass, sp.required("spanclass"));
  GOREF_TRY(L.span_state, sp.required("state"));
  GOREF_TRY(L.span_elemsize, sp.required("elemsize"));
  GOREF_TRY(L.span_limit, sp.required("limit"));
  GOREF_TRY(L.span_specials, sp.required("specials"));
  L.span_large_type = sp.optional("largeType");
  L.span_state.size = 1;  // mSpanStateBox wraps one atomic byte
  if (auto t = d.type("runtime.spanInlineMarkBits"))
    if (auto ti = d.info(*t); ti.ok()) L.inline_mark_bits_size = ti->size;

  Fields sc(d, "runtime.special");
  GOREF_TRY(L.special_size, sc.size());
  GOREF_TRY(L.special_next, sc.required("next"));
  GOREF_TRY(L.special_offset, sc.required("offset"));
  GOREF_TRY(L.special_kind, sc.required("kind"));
  auto kind = [&](std::string_view n) -> std::optional<uint64_t> {
    if (auto v = d.constant(n)) return static_cast<uint64_t>(*v);
    return std::nullopt;
  };
  L.kind_finalizer = kind("runtime._KindSpecialFinalizer");
  L.kind_weak_handle = kind("runtime._KindSpecialWeakHandle");  // Go 1.23+
  L.kind_cleanup = kind("runtime._KindSpecialCleanup");         // Go 1.24+
  GOREF_TRY(Field fin_fn, Fields(d, "runtime.specialfinalizer").required("fn"));
  L.specialfinalizer_fn = fin_fn.off;
  Fields cl(d, "runtime.specialCleanup");
  if (auto f = cl.optional("cleanup.fn")) {  // Go 1.26: cleanupFn{call, fn, arg}
    L.specialcleanup_fn = f->off;
    if (auto a = cl.optional("cleanup.arg")) L.specialcleanup_arg = a->off;
  } else if (auto f2 = cl.optional("fn")) {  // Go 1.24–1.25
    L.specialcleanup_fn = f2->off;
  }
  if (auto f = Fields(d, "runtime.specialWeakHandle").optional("handle"))
    L.specialweakhandle_handle = f->off;

  Fields ty(d, "internal/abi.Type");
  GOREF_TRY(L.type_struct_size, ty.size());
  GOREF_TRY(L.type_size, ty.required("Size_"));
  // Go 1.20 called it ptrdata; every supported version says PtrBytes.
  GOREF_TRY(L.type_ptrbytes, ty.required_any({"PtrBytes", "ptrdata"}));
  GOREF_TRY(L.type_tflag, ty.required("TFlag"));
  GOREF_TRY(L.type_kind, ty.required("Kind_"));
  GOREF_TRY(L.type_gcdata, ty.required("GCData"));
  Fields at(d, "internal/abi.ArrayType"), st(d, "internal/abi.StructType"),
      sf(d, "internal/abi.StructField");
  GOREF_TRY(Field elem, at.required("Elem"));
  GOREF_TRY(Field len, at.required("Len"));
  GOREF_TRY(Field fields, st.required("Fields"));
  GOREF_TRY(Field typ, sf.required("Typ"));
  GOREF_TRY(Field off, sf.required("Offset"));
  GOREF_TRY(L.structfield_size, sf.size());
  L.arraytype_elem = elem.off;
  L.arraytype_len = len.off;
  L.structtype_fields = fields.off;
  L.structfield_typ = typ.off;
  L.structfield_offset = off.off;

  Fields md(d, "runtime.moduledata");
  GOREF_TRY(L.md_size, md.size());
  GOREF_TRY(L.md_data, md.required("data"));
  GOREF_TRY(L.md_edata, md.required("edata"));
  GOREF_TRY(L.md_bss, md.required("bss"));
  GOREF_TRY(L.md_ebss, md.required("ebss"));
  GOREF_TRY(L.md_types, md.required("types"));
  GOREF_TRY(L.md_etypes, md.required("etypes"));
  GOREF_TRY(L.md_next, md.required("next"));
  GOREF_TRY(L.md_rodata, md.required("rodata"));
  GOREF_TRY(Field gdm, md.required("gcdatamask"));
  GOREF_TRY(Field gbm, md.required("gcbssmask"));
  L.md_gcdatamask = gdm.off;
  L.md_gcbssmask = gbm.off;

  Fields fb(d, "runtime.finBlock");  // runtime.finblock up to Go 1.24
  if (!fb.exists()) fb = Fields(d, "runtime.finblock");
  Fields fz(d, "runtime.finalizer");
  auto fb_size = fb.size();
  auto fz_size = fz.size();
  auto alllink = fb.optional("alllink");
  auto fin = fb.optional("fin");
  auto cnt = fb.optional("cnt");
  auto fn = fz.optional("fn");
  auto arg = fz.optional("arg");
  if (fb_size.ok() && fz_size.ok() && alllink && fin && cnt && fn && arg)
    L.finblock =
        HeapLayout::FinBlock{*fb_size, alllink->off, fin->off, *fz_size, fn->off, arg->off, *cnt};

  // Go 1.25 moved cleanups from the finalizer queue to their own.
  Fields cq(d, "runtime.cleanupQueue"), cb(d, "runtime.cleanupBlock"), cf(d, "runtime.cleanupFn");
  auto cq_all = cq.optional("all.value");  // internal/runtime/atomic.UnsafePointer
  auto cb_size = cb.size();
  auto cb_alllink = cb.optional("cleanupBlockHeader.alllink");
  auto cb_n = cb.optional("cleanupBlockHeader.n");
  auto cleanups = cb.optional("cleanups");
  if (cq_all && cb_size.ok() && cb_alllink && cb_n && cleanups) {
    HeapLayout::CleanupBlock c{cq_all->off, *cb_size, cb_alllink->off, cleanups->off, 8, *cb_n,
                               {},          {}};
    if (auto cf_size = cf.size(); cf_size.ok()) {  // Go 1.26+
      auto fn_f = cf.optional("fn");
      auto arg_f = cf.optional("arg");
      if (fn_f && arg_f) {
        c.elem_size = *cf_size;
        c.fn = fn_f->off;
        c.arg = arg_f->off;
      }
    }
    L.cleanupblock = c;
  }
  return L;
}

}  // namespace goref::runtime
