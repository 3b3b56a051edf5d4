#include "goref/runtime/heap_snapshot.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "goref/base/bytes.h"
#include "goref/base/log.h"
#include "goref/target/batch_read.h"

namespace goref::runtime {
namespace {

// Metadata reads (mspans, alloc bits, specials) are small and scattered over a few fixalloc and
// gcBits chunks: read together when close. Span memory is read in runs of adjacent spans.
constexpr uint64_t kMetaGap = 4096;
constexpr uint64_t kMetaBlock = 1 << 20;
constexpr uint64_t kSpanRunBytes = 64 << 20;
// Bounds on what target data may claim.
constexpr uint64_t kMaxSpecials = 1 << 22;
constexpr uint64_t kMaxFinBlocks = 1 << 16;
constexpr uint64_t kMaxSegmentBytes = uint64_t{1} << 32;

uint64_t word(Bytes b, uint64_t off) {
  return load<uint64_t>(b, off).value_or(0);
}

struct Ctx {
  const Process& p;
  const HeapLayout& L;
  HeapSnapshot& s;
  target::Target& t;
  // Parallel to s.spans while they are being read: where the alloc bits and specials are.
  struct SpanMeta {
    uint64_t alloc_bits = 0, specials = 0;
  };
  std::vector<SpanMeta> meta;

  std::vector<Result<std::vector<std::byte>>> read(const std::vector<target::Range>& r) {
    target::BatchReadStats st;
    auto out = target::read_ranges(t, r, kMetaGap, kMetaBlock, &st);
    s.reads += st.reads;
    s.bytes_copied += st.bytes;
    return out;
  }
  void warn(std::string w) {
    // Once the process is gone every read fails; the caller reports that once.
    if (!t.exited()) log::get("heap")->warn("{}", w);
    s.warnings.push_back(std::move(w));
  }
};

// The arenas in use and each one's spans array (and Go 1.21 bitmap, Green Tea page flags).
struct ArenaCopy {
  uint64_t index = 0;
  std::vector<std::byte> bytes;  // the heapArena prefix goref needs
};

Result<std::vector<ArenaCopy>> read_arenas(Ctx& c, Bytes mheap) {
  const auto& L = c.L;
  if (L.arena_l1_bits != 0)
    return Error(Errc::kUnsupported, "heap arenas with a two-level index (arenaL1Bits " +
                                         std::to_string(L.arena_l1_bits) + ") are not supported");
  uint64_t l2 = word(mheap, L.mheap_arenas);  // arenas[0]
  uint64_t list = word(mheap, L.mheap_all_arenas);
  uint64_t n = word(mheap, L.mheap_all_arenas + 8);
  if (l2 == 0 || list == 0 || n == 0)
    return Error(Errc::kBadFormat, "runtime.mheap_: no heap arenas (arenas " + to_hex(l2) + ", " +
                                       std::to_string(n) + " arena indexes)");
  if (n > (uint64_t{1} << L.arena_l2_bits))
    return Error(Errc::kBadFormat, "runtime.mheap_: " + std::to_string(n) +
                                       " arena indexes is more than the address space holds");
  GOREF_TRY(auto idx_bytes, c.t.read_bytes(Addr(list), n * 8));
  c.s.reads++;
  std::vector<uint64_t> idx(n);
  std::vector<target::Range> l2r;
  for (uint64_t i = 0; i < n; ++i) {
    idx[i] = word(idx_bytes, i * 8);
    if (idx[i] >= (uint64_t{1} << L.arena_l2_bits))
      return Error(Errc::kBadFormat,
                   "runtime.mheap_: arena index " + to_hex(idx[i]) + " out of range");
    l2r.push_back({Addr(l2 + idx[i] * 8), 8});
  }
  auto ptrs = c.read(l2r);
  uint64_t pages_per_arena = L.heap_arena_bytes / L.page_size;
  uint64_t need = L.arena_spans + pages_per_arena * 8;
  if (L.arena_bitmap) need = std::max(need, *L.arena_bitmap + L.heap_arena_bytes / 64);
  if (L.arena_inline_mark_pages)
    need = std::max(need, *L.arena_inline_mark_pages + pages_per_arena / 8);
  std::vector<target::Range> ar;
  std::vector<uint64_t> ar_idx;
  for (uint64_t i = 0; i < n; ++i) {
    if (!ptrs[i].ok()) {
      c.warn("heap arena " + to_hex(idx[i]) + ": " + ptrs[i].error().message());
      continue;
    }
    uint64_t ha = word(*ptrs[i], 0);
    if (ha == 0) continue;
    ar.push_back({Addr(ha), need});
    ar_idx.push_back(idx[i]);
  }
  // Arenas are 64 MiB apart and their metadata is allocated off-heap one by one: no coalescing.
  target::BatchReadStats st;
  auto copies = target::read_ranges(c.t, ar, 0, need, &st);
  c.s.reads += st.reads;
  c.s.bytes_copied += st.bytes;
  std::vector<ArenaCopy> out;
  for (size_t i = 0; i < ar.size(); ++i) {
    if (!copies[i].ok()) {
      c.warn("heapArena " + ar[i].addr.hex() + ": " + copies[i].error().message());
      continue;
    }
    out.push_back({ar_idx[i], std::move(*copies[i])});
  }
  if (out.empty()) return Error(Errc::kBadFormat, "no heap arena could be read");
  return out;
}

// Reads every distinct mspan the arenas point to and keeps the in-use ones.
void read_spans(Ctx& c, const std::vector<ArenaCopy>& arenas) {
  const auto& L = c.L;
  uint64_t pages_per_arena = L.heap_arena_bytes / L.page_size;
  std::unordered_set<uint64_t> seen;
  std::vector<target::Range> r;
  for (const auto& a : arenas)
    for (uint64_t i = 0; i < pages_per_arena; ++i) {
      uint64_t sp = word(a.bytes, L.arena_spans + i * 8);
      if (sp != 0 && seen.insert(sp).second) r.push_back({Addr(sp), L.span_size});
    }
  auto got = c.read(r);
  size_t unreadable = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    if (!got[i].ok()) {
      ++unreadable;
      continue;
    }
    Bytes m = *got[i];
    if (L.span_state.get(m) != L.span_in_use) continue;
    Span s;
    s.mspan = r[i].addr.value();
    s.base = L.span_start_addr.get(m);
    s.npages = L.span_npages.get(m);
    s.elemsize = L.span_elemsize.get(m);
    s.limit = L.span_limit.get(m);
    uint64_t nelems = L.span_nelems.get(m), freeindex = L.span_freeindex.get(m);
    s.spanclass = static_cast<uint8_t>(L.span_spanclass.get(m));
    if (L.span_large_type) s.large_type = L.span_large_type->get(m);
    uint64_t bytes = s.npages * L.page_size;
    if (s.npages == 0 || s.npages > pages_per_arena * 1024 || s.elemsize == 0 ||
        s.elemsize > bytes || nelems == 0 || nelems > bytes / s.elemsize || freeindex > nelems ||
        s.base % L.page_size != 0) {
      c.warn("mspan " + to_hex(s.mspan) + ": implausible (base " + to_hex(s.base) + ", npages " +
             std::to_string(s.npages) + ", elemsize " + std::to_string(s.elemsize) + ", nelems " +
             std::to_string(nelems) + "); skipped");
      continue;
    }
    s.nelems = static_cast<uint32_t>(nelems);
    // As the runtime computes mspan.divMul (mheap.go), for spans of more than one object.
    if (nelems > 1 && bytes < (uint64_t{1} << 32))
      s.div_mul = static_cast<uint32_t>(~uint32_t{0} / static_cast<uint32_t>(s.elemsize) + 1);
    s.freeindex = static_cast<uint32_t>(freeindex);
    uint64_t specials = L.span_specials.get(m);
    uint64_t alloc = L.span_alloc_bits.get(m);
    c.s.spans.push_back(std::move(s));
    c.meta.push_back({alloc, specials});
  }
  if (unreadable > 0) c.warn(std::to_string(unreadable) + " mspan descriptors unreadable");
}

// Sorts the spans by address, drops overlapping ones (a torn read), and builds the page table
// and the Green Tea flags from the arena copies.
void index_spans(Ctx& c, const std::vector<ArenaCopy>& arenas) {
  const auto& L = c.L;
  auto& spans = c.s.spans;
  std::vector<size_t> order(spans.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return spans[a].base < spans[b].base; });
  std::vector<Span> sorted;
  std::vector<Ctx::SpanMeta> meta;
  uint64_t end = 0;
  for (size_t i : order) {
    if (spans[i].base < end) {
      c.warn("mspan " + to_hex(spans[i].mspan) + " overlaps the span before it; skipped");
      continue;
    }
    end = spans[i].base + spans[i].bytes(L.page_size);
    sorted.push_back(std::move(spans[i]));
    meta.push_back(c.meta[i]);
  }
  spans = std::move(sorted);
  c.meta = std::move(meta);

  std::unordered_map<uint64_t, uint32_t> by_mspan;
  for (size_t i = 0; i < spans.size(); ++i) by_mspan[spans[i].mspan] = static_cast<uint32_t>(i);
  uint64_t pages_per_arena = L.heap_arena_bytes / L.page_size;
  for (const auto& a : arenas) {
    auto& pt = c.s.pages[a.index];
    pt.assign(pages_per_arena, 0);
    uint64_t arena_base = a.index * L.heap_arena_bytes + L.arena_base_offset;
    for (uint64_t i = 0; i < pages_per_arena; ++i) {
      auto it = by_mspan.find(word(a.bytes, L.arena_spans + i * 8));
      if (it == by_mspan.end()) continue;
      Span& s = spans[it->second];
      uint64_t page = arena_base + i * L.page_size;
      // A stale entry (the page was reused) must not claim a page outside its span.
      if (page < s.base || page >= s.base + s.bytes(L.page_size)) continue;
      pt[i] = it->second + 1;
      if (page == s.base && L.arena_inline_mark_pages) {
        auto flags = load<uint8_t>(a.bytes, *L.arena_inline_mark_pages + i / 8);
        s.inline_mark_bits = flags && ((*flags >> (i % 8)) & 1);
      }
    }
    if (L.arena_bitmap) {
      auto* b = reinterpret_cast<const uint8_t*>(a.bytes.data()) + *L.arena_bitmap;
      c.s.arena_bitmaps[a.index].assign(b, b + L.heap_arena_bytes / 64);
    }
  }
}

void read_alloc_bits(Ctx& c) {
  std::vector<target::Range> r;
  for (size_t i = 0; i < c.s.spans.size(); ++i)
    r.push_back({Addr(c.meta[i].alloc_bits), (c.s.spans[i].nelems + 63) / 64 * 8});
  auto got = c.read(r);
  size_t bad = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    if (!got[i].ok() || r[i].addr.is_null()) {
      ++bad;
      continue;
    }
    auto* b = reinterpret_cast<const uint8_t*>(got[i]->data());
    c.s.spans[i].alloc_bits.assign(b, b + (c.s.spans[i].nelems + 7) / 8);
  }
  if (bad > 0)
    c.warn(std::to_string(bad) +
           " spans without readable allocation bits (all their slots are "
           "taken as allocated)");
}

// Copies span memory in runs of adjacent spans, into one huge-page buffer per run, in reads of
// kReadChunk (the fastest block size measured for process_vm_readv, docs/PERFORMANCE.md).
constexpr uint64_t kReadChunk = 16 << 20;

bool copy_into(Ctx& c, uint64_t start, std::byte* dst, uint64_t n) {
  for (uint64_t off = 0; off < n; off += kReadChunk) {
    uint64_t len = std::min(kReadChunk, n - off);
    c.s.reads++;
    if (!c.t.read_exact(Addr(start + off), std::span<std::byte>(dst + off, len)).ok()) return false;
  }
  return true;
}

void copy_span_memory(Ctx& c) {
  const uint64_t ps = c.L.page_size;
  auto& spans = c.s.spans;
  size_t unreadable = 0;
  for (size_t i = 0; i < spans.size();) {
    uint64_t start = spans[i].base, end = start + spans[i].bytes(ps);
    size_t j = i + 1;
    while (j < spans.size() && spans[j].base == end &&
           end + spans[j].bytes(ps) - start <= kSpanRunBytes)
      end += spans[j++].bytes(ps);
    std::byte* dst0 = nullptr;
    if (c.s.pool.size() - c.s.pool_used >= end - start) {
      dst0 = c.s.pool.data() + c.s.pool_used;
      c.s.pool_used += end - start;
    } else {
      auto block = HostBuffer::allocate(end - start);
      if (!block.ok()) {
        c.warn(block.error().message());
        return;
      }
      dst0 = block->data();
      c.s.blocks.push_back(std::move(*block));
    }
    if (copy_into(c, start, dst0, end - start)) {
      for (size_t k = i; k < j; ++k) spans[k].mem = dst0 + (spans[k].base - start);
      c.s.bytes_copied += end - start;
    } else {
      // One bad span must not cost the run: copy them one by one into the same buffer.
      for (size_t k = i; k < j; ++k) {
        std::byte* dst = dst0 + (spans[k].base - start);
        if (copy_into(c, spans[k].base, dst, spans[k].bytes(ps))) {
          spans[k].mem = dst;
          c.s.bytes_copied += spans[k].bytes(ps);
        } else {
          ++unreadable;
        }
      }
    }
    i = j;
  }
  if (unreadable > 0)
    c.warn(std::to_string(unreadable) +
           " in-use spans could not be read; their objects are "
           "counted but not scanned");
}

void read_segments(Ctx& c) {
  const auto& L = c.L;
  auto md = c.p.global("runtime.firstmoduledata");
  if (!md.ok()) {
    c.warn("runtime.firstmoduledata: " + md.error().message() + "; globals are not scanned");
    return;
  }
  uint64_t m = md->value();
  std::unordered_set<uint64_t> seen;
  while (m != 0 && seen.insert(m).second && seen.size() < 64) {
    auto b = c.t.read_bytes(Addr(m), L.md_size);
    c.s.reads++;
    if (!b.ok()) {
      c.warn("moduledata " + to_hex(m) + ": " + b.error().message());
      return;
    }
    struct Part {
      const char* name;
      Field lo, hi;
      uint64_t mask;
    };
    for (const Part& part : {Part{"data", L.md_data, L.md_edata, L.md_gcdatamask},
                             Part{"bss", L.md_bss, L.md_ebss, L.md_gcbssmask}}) {
      uint64_t lo = part.lo.get(*b), hi = part.hi.get(*b);
      uint64_t nbits = load<uint32_t>(*b, part.mask).value_or(0);
      uint64_t bits = word(*b, part.mask + 8);
      if (hi < lo || hi - lo > kMaxSegmentBytes || nbits > (hi - lo) / 8 + 64) {
        c.warn("moduledata " + to_hex(m) + ": implausible " + part.name + " segment");
        continue;
      }
      Segment seg;
      seg.name = part.name;
      seg.base = lo;
      auto bytes = c.t.read_bytes(Addr(lo), hi - lo);
      auto mask = c.t.read_bytes(Addr(bits), (nbits + 7) / 8);
      c.s.reads += 2;
      if (!bytes.ok() || !mask.ok()) {
        c.warn(std::string(part.name) + " segment at " + to_hex(lo) + ": " +
               (!bytes.ok() ? bytes.error() : mask.error()).message());
        continue;
      }
      c.s.bytes_copied += bytes->size() + mask->size();
      seg.bytes = std::move(*bytes);
      auto* mb = reinterpret_cast<const uint8_t*>(mask->data());
      seg.mask.assign(mb, mb + mask->size());
      c.s.segments.push_back(std::move(seg));
    }
    m = L.md_next.get(*b);
  }
}

// Walks every span's specials list, one batched read per list position.
void read_specials(Ctx& c) {
  const auto& L = c.L;
  uint64_t need = std::max<uint64_t>(L.special_size, L.specialfinalizer_fn + 8);
  if (L.specialcleanup_fn) need = std::max(need, *L.specialcleanup_fn + 8);
  if (L.specialcleanup_arg) need = std::max(need, *L.specialcleanup_arg + 8);
  if (L.specialweakhandle_handle) need = std::max(need, *L.specialweakhandle_handle + 8);
  struct Cursor {
    size_t span;
    uint64_t at;
  };
  std::vector<Cursor> cur;
  for (size_t i = 0; i < c.s.spans.size(); ++i)
    if (c.meta[i].specials != 0) cur.push_back({i, c.meta[i].specials});
  std::unordered_set<uint64_t> seen;
  while (!cur.empty()) {
    std::vector<target::Range> r;
    for (const auto& k : cur) r.push_back({Addr(k.at), need});
    auto got = c.read(r);
    std::vector<Cursor> next;
    for (size_t i = 0; i < cur.size(); ++i) {
      if (!got[i].ok()) {
        c.warn("special " + to_hex(cur[i].at) + ": " + got[i].error().message());
        continue;
      }
      if (!seen.insert(cur[i].at).second || seen.size() > kMaxSpecials) {
        c.warn("specials of span " + to_hex(c.s.spans[cur[i].span].base) +
               " loop or are too "
               "many; cut");
        continue;
      }
      Bytes b = *got[i];
      const Span& s = c.s.spans[cur[i].span];
      uint64_t kind = L.special_kind.get(b), off = L.special_offset.get(b);
      SpecialRoot root{SpecialRoot::Kind::kFinalizer};
      root.object = s.base + off / s.elemsize * s.elemsize;
      bool keep = true;
      if (kind == L.kind_finalizer) {
        root.fn = word(b, L.specialfinalizer_fn);
      } else if (kind == L.kind_cleanup && L.specialcleanup_fn) {
        root.kind = SpecialRoot::Kind::kCleanup;
        root.fn = word(b, *L.specialcleanup_fn);
        if (L.specialcleanup_arg) root.arg = word(b, *L.specialcleanup_arg);
      } else if (kind == L.kind_weak_handle && L.specialweakhandle_handle) {
        root.kind = SpecialRoot::Kind::kWeakHandle;
        root.handle = word(b, *L.specialweakhandle_handle);
      } else {
        keep = false;  // profile, reachable, pin counter, tiny block…: no roots
      }
      if (keep) c.s.specials.push_back(root);
      if (uint64_t n = L.special_next.get(b); n != 0) next.push_back({cur[i].span, n});
    }
    cur = std::move(next);
  }
}

// Walks a runtime list of off-heap blocks (finBlock, cleanupBlock) linked by alllink from the
// word at head_addr, calling visit with each block's bytes. Stops, with a warning, at a read
// error, a loop, or more blocks than any real program has.
template <typename Visit>
void walk_blocks(Ctx& c, const std::string& list, Addr head_addr, uint64_t size, uint64_t alllink,
                 const std::string& block, Visit visit) {
  auto head = c.t.read_word(head_addr);
  if (!head.ok()) {
    c.warn(list + ": " + head.error().message());
    return;
  }
  std::unordered_set<uint64_t> seen;
  for (uint64_t b = *head; b != 0;) {
    if (!seen.insert(b).second || seen.size() > kMaxFinBlocks) {
      c.warn(list + ": the blocks loop or are too many; cut");
      return;
    }
    auto blk = c.t.read_bytes(Addr(b), size);
    c.s.reads++;
    if (!blk.ok()) {
      c.warn(block + " " + to_hex(b) + ": " + blk.error().message());
      return;
    }
    visit(Bytes(*blk));
    b = word(*blk, alllink);
  }
}

void read_finalizer_queue(Ctx& c) {
  const auto& fb = c.L.finblock;
  if (!fb) return;
  auto allfin = c.p.global("runtime.allfin");
  if (!allfin.ok()) return;
  walk_blocks(c, "runtime.allfin", *allfin, fb->size, fb->alllink, "finBlock", [&](Bytes blk) {
    uint64_t cnt = fb->cnt.get(blk);
    uint64_t cap = (fb->size - fb->fin) / fb->finalizer_size;
    for (uint64_t i = 0; i < std::min(cnt, cap); ++i) {
      uint64_t f = fb->fin + i * fb->finalizer_size;
      SpecialRoot r{SpecialRoot::Kind::kQueuedFinalizer};
      r.fn = word(blk, f + fb->fn);
      r.arg = word(blk, f + fb->arg);
      if (r.fn != 0 || r.arg != 0) c.s.specials.push_back(r);
    }
  });
}

// Go 1.25+: markroot's fixedRootCleanups scans the first n cleanups of every block on
// gcCleanups.all, including those of a block whose cleanups are running (n drops to 0 only once
// the whole block has run), so this does the same.
void read_cleanup_queue(Ctx& c) {
  const auto& cb = c.L.cleanupblock;
  if (!cb) return;
  auto queue = c.p.global("runtime.gcCleanups");
  if (!queue.ok()) return;
  walk_blocks(c, "runtime.gcCleanups", *queue + cb->all, cb->size, cb->alllink, "cleanupBlock",
              [&](Bytes blk) {
                uint64_t n = cb->n.get(blk);
                uint64_t cap =
                    cb->size > cb->cleanups ? (cb->size - cb->cleanups) / cb->elem_size : 0;
                for (uint64_t i = 0; i < std::min(n, cap); ++i) {
                  uint64_t e = cb->cleanups + i * cb->elem_size;
                  SpecialRoot r{SpecialRoot::Kind::kQueuedCleanup};
                  // cleanupFn.call is an instantiation of a generic adapter: a static funcval.
                  r.fn = word(blk, e + cb->fn.value_or(0));
                  if (cb->arg) r.arg = word(blk, e + *cb->arg);
                  if (r.fn != 0 || r.arg != 0) c.s.specials.push_back(r);
                }
              });
}

// Large objects' types that are not in the executable (Go 1.22–1.23 types with a GC program get
// a fake type with the program unrolled, in a manual span): copy the type and its bitmap.
void read_side_types(Ctx& c) {
  const auto& L = c.L;
  const auto& elf = c.p.program().elf();
  for (const auto& s : c.s.spans) {
    if (s.large_type == 0 || c.s.side.count(s.large_type)) continue;
    std::byte probe[1];
    if (auto in_file = elf.read_vaddr(c.p.link_addr(s.large_type), probe);
        in_file.ok() && *in_file == 1)
      continue;
    auto t = c.t.read_bytes(Addr(s.large_type), L.type_struct_size);
    c.s.reads++;
    if (!t.ok()) continue;
    uint64_t ptrbytes = L.type_ptrbytes.get(*t), gcdata = L.type_gcdata.get(*t);
    uint64_t nbytes = (std::min(ptrbytes, s.bytes(L.page_size)) / 8 + 7) / 8;
    if (gcdata != 0 && !c.s.side.count(gcdata))
      if (auto m = c.t.read_bytes(Addr(gcdata), nbytes); m.ok()) c.s.side[gcdata] = std::move(*m);
    c.s.side[s.large_type] = std::move(*t);
  }
}

}  // namespace

const Span* HeapSnapshot::span_of(uint64_t p) const {
  uint64_t ai = (p - layout.arena_base_offset) >> arena_shift;
  if (ai != last_arena_) {
    auto it = pages.find(ai);
    if (it == pages.end()) return nullptr;
    last_arena_ = ai;
    last_pages_ = &it->second;
  }
  uint64_t pg = (p >> page_shift) & (last_pages_->size() - 1);
  uint32_t v = (*last_pages_)[pg];
  if (v == 0) return nullptr;
  const Span& s = spans[v - 1];
  return p < s.limit ? &s : nullptr;
}

Result<uint64_t> heap_in_use_estimate(const Process& p, const HeapLayout& layout) {
  GOREF_TRY(Addr mheap, p.global("runtime.mheap_"));
  GOREF_TRY(uint64_t pages, p.target().read_word(mheap + layout.mheap_pages_in_use.off));
  if (pages > (uint64_t{1} << 40) / layout.page_size)
    return Error(Errc::kBadFormat, "runtime.mheap_.pagesInUse is implausible");
  return pages * layout.page_size;
}

Result<HostBuffer> prepare_heap_pool(uint64_t bytes) {
  GOREF_TRY(auto b, HostBuffer::allocate(bytes));
  // One write per 4 KiB page faults it in (a huge page at its first write).
  for (size_t off = 0; off < b.size(); off += 4096) b.data()[off] = std::byte{0};
  return b;
}

Result<HeapSnapshot> snapshot_heap(const Process& p, const HeapLayout& layout, HostBuffer pool) {
  HeapSnapshot s;
  s.layout = layout;
  s.pool = std::move(pool);
  auto log2_exact = [](uint64_t v) -> std::optional<uint32_t> {
    if (v == 0 || (v & (v - 1)) != 0) return std::nullopt;
    return static_cast<uint32_t>(__builtin_ctzll(v));
  };
  auto as = log2_exact(layout.heap_arena_bytes), ps = log2_exact(layout.page_size);
  if (!as || !ps || *as <= *ps)
    return Error(Errc::kBadFormat, "heap arena and page sizes are not powers of two");
  s.arena_shift = *as;
  s.page_shift = *ps;
  Ctx c{p, s.layout, s, p.target(), {}};
  GOREF_TRY(Addr mheap, p.global("runtime.mheap_"));
  uint64_t need = std::max({layout.mheap_arenas, layout.mheap_all_arenas + 16,
                            layout.mheap_sweepgen.off + layout.mheap_sweepgen.size});
  GOREF_TRY(auto mh, p.target().read_bytes(mheap, need + 8));
  s.reads++;
  s.sweepgen = layout.mheap_sweepgen.get(mh);
  auto lg = log::get("heap");
  auto t = std::chrono::steady_clock::now();
  auto phase = [&](const char* what) {
    auto now = std::chrono::steady_clock::now();
    lg->debug("snapshot: {} in {:.1f} ms", what,
              std::chrono::duration<double, std::milli>(now - t).count());
    t = now;
  };
  GOREF_TRY(auto arenas, read_arenas(c, mh).context("runtime.mheap_ " + mheap.hex()));
  phase("arenas");
  read_spans(c, arenas);
  if (s.spans.empty()) return Error(Errc::kBadFormat, "runtime.mheap_: no in-use span found");
  phase("mspans");
  index_spans(c, arenas);
  phase("page table");
  read_alloc_bits(c);
  phase("alloc bits");
  copy_span_memory(c);
  s.pool.release_tail(s.pool_used);  // the estimate's margin
  phase("span memory");
  read_segments(c);
  read_specials(c);
  read_finalizer_queue(c);
  read_cleanup_queue(c);
  read_side_types(c);
  phase("segments and specials");
  return s;
}

}  // namespace goref::runtime
