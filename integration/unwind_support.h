// Test and benchmark support for the unwinders: reads goroutines straight from runtime.allgs with
// the DWARF layout of runtime.g (stack bounds, saved context, goid, status), copies their stacks
// and finds the load bias from a function entry the fixture printed. This is deliberately a
// small independent reader for tests, not goref's goroutine reader.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "goref/base/addr.h"
#include "goref/base/result.h"
#include "goref/binary/dwarf.h"
#include "goref/binary/pclntab.h"
#include "goref/target/batch_read.h"
#include "goref/target/memory.h"
#include "goref/unwind/stack_image.h"

namespace goref::testing {

struct GLayout {
  uint64_t size = 0, stack_lo = 0, stack_hi = 0, sched_sp = 0, sched_pc = 0, sched_bp = 0, goid = 0,
           status = 0, syscallsp = 0;
};

inline Result<GLayout> g_layout(const binary::Dwarf& dw) {
  auto t = dw.type("runtime.g");
  if (!t) return Error(Errc::kNotFound, "DWARF type runtime.g");
  GLayout l;
  GOREF_TRY(auto info, dw.info(*t));
  l.size = info.size;
  auto off = [&](const char* path) -> Result<uint64_t> {
    GOREF_TRY(auto m, dw.member(*t, path));
    return m.offset;
  };
  GOREF_TRY(l.stack_lo, off("stack.lo"));
  GOREF_TRY(l.stack_hi, off("stack.hi"));
  GOREF_TRY(l.sched_sp, off("sched.sp"));
  GOREF_TRY(l.sched_pc, off("sched.pc"));
  GOREF_TRY(l.sched_bp, off("sched.bp"));
  GOREF_TRY(l.goid, off("goid"));
  GOREF_TRY(l.status, off("atomicstatus"));
  GOREF_TRY(l.syscallsp, off("syscallsp"));
  if (l.size == 0 || l.size > 4096) return Error(Errc::kBadFormat, "runtime.g size");
  return l;
}

struct GInfo {
  uint64_t addr = 0, goid = 0, lo = 0, hi = 0, sp = 0, pc = 0, bp = 0, syscallsp = 0;
  uint32_t status = 0;
};

inline uint64_t word_at(const std::vector<std::byte>& b, uint64_t off) {
  uint64_t v = 0;
  std::memcpy(&v, b.data() + off, 8);
  return v;
}

struct Range {
  uint64_t addr = 0, len = 0;
};

// Reads many ranges with few reads (target::read_ranges); fails if any range fails. reads
// counts the reads made.
inline Result<std::vector<std::vector<std::byte>>> read_coalesced(target::Memory& mem,
                                                                  const std::vector<Range>& ranges,
                                                                  uint64_t max_gap,
                                                                  uint64_t max_block,
                                                                  size_t* reads) {
  std::vector<target::Range> rs;
  rs.reserve(ranges.size());
  for (const auto& r : ranges) rs.push_back({Addr(r.addr), r.len});
  target::BatchReadStats st;
  auto got = target::read_ranges(mem, rs, max_gap, max_block, &st);
  *reads += st.reads;
  std::vector<std::vector<std::byte>> out;
  out.reserve(got.size());
  for (auto& g : got) {
    if (!g.ok()) return std::move(g).error();
    out.push_back(std::move(*g));
  }
  return out;
}

// Every g in runtime.allgs (one read for the slice header, one for the pointers, then the gs:
// one read each, or coalesced reads when coalesce is set).
inline Result<std::vector<GInfo>> read_allgs(target::Memory& mem, const binary::Dwarf& dw,
                                             const GLayout& l, uint64_t bias,
                                             bool coalesce = false) {
  auto v = dw.variable("runtime.allgs");
  if (!v) return Error(Errc::kNotFound, "DWARF variable runtime.allgs");
  GOREF_TRY(auto hdr, mem.read_bytes(Addr(v->address + bias), 24));
  uint64_t ptr = word_at(hdr, 0), len = word_at(hdr, 8);
  if (len > (uint64_t{1} << 24)) return Error(Errc::kBadFormat, "allgs length");
  GOREF_TRY(auto ptrs, mem.read_bytes(Addr(ptr), len * 8));
  std::vector<GInfo> out;
  out.reserve(len);
  std::vector<std::vector<std::byte>> blocks;
  if (coalesce) {
    std::vector<Range> rs(len);
    for (uint64_t i = 0; i < len; ++i) rs[i] = {word_at(ptrs, i * 8), l.size};
    size_t reads = 0;
    GOREF_TRY(blocks, read_coalesced(mem, rs, 4096, 1 << 20, &reads));
  }
  std::vector<std::byte> g(l.size);
  for (uint64_t i = 0; i < len; ++i) {
    GInfo gi;
    gi.addr = word_at(ptrs, i * 8);
    if (coalesce)
      g = std::move(blocks[i]);
    else
      GOREF_CHECK(mem.read_exact(Addr(gi.addr), g));
    gi.lo = word_at(g, l.stack_lo);
    gi.hi = word_at(g, l.stack_hi);
    gi.sp = word_at(g, l.sched_sp);
    gi.pc = word_at(g, l.sched_pc);
    gi.bp = word_at(g, l.sched_bp);
    gi.goid = word_at(g, l.goid);
    gi.syscallsp = word_at(g, l.syscallsp);
    std::memcpy(&gi.status, g.data() + l.status, 4);
    out.push_back(gi);
  }
  return out;
}

// Copies [from, g.hi) in one read; from defaults to the stack's low bound.
inline Result<unwind::StackImage> copy_stack(target::Memory& mem, const GInfo& g,
                                             uint64_t from = 0) {
  if (from == 0) from = g.lo;
  if (from < g.lo || from > g.hi || g.hi - from > (uint64_t{1} << 30))
    return Error(Errc::kBadFormat, "stack bounds of goroutine " + std::to_string(g.goid));
  unwind::StackImage s;
  s.lo = Addr(from);
  GOREF_TRY(s.bytes, mem.read_bytes(Addr(from), g.hi - from));
  return s;
}

// Runtime minus link-time address, from a function's runtime entry the program printed.
inline Result<uint64_t> bias_from_entry(const binary::Pclntab& tab, std::string_view name,
                                        uint64_t runtime_entry) {
  for (size_t i = 0; i < tab.nfunc(); ++i) {
    auto f = tab.func(i);
    if (f.name() == name) return runtime_entry - f.entry();
  }
  return Error(Errc::kNotFound, "function " + std::string(name));
}

}  // namespace goref::testing
