#include "goref/unwind/compiled_pcsp.h"

#include <algorithm>

#include "goref/binary/pcvalue.h"

namespace goref::unwind {

namespace {

// pcHeader fields (Go 1.20+): pctabOffset and pclnOffset, relative to the header. The pctab runs
// from the one to the other.
constexpr uint64_t kPctabOffsetField = 56;
constexpr uint64_t kPclnOffsetField = 64;
// A function larger than this is a corrupt table (the largest Go functions are a few MiB).
constexpr uint64_t kMaxFuncSize = uint64_t{1} << 30;
// Runs per function: one per SP change; more than this is a corrupt table.
constexpr size_t kMaxRunsPerFunc = size_t{1} << 20;

}  // namespace

Result<CompiledPcsp> CompiledPcsp::build(const binary::Pclntab& tab, Mode mode) {
  auto t0 = std::chrono::steady_clock::now();
  CompiledPcsp c;
  std::byte hdr[16];
  GOREF_TRY(size_t n, tab.read(tab.address() + kPctabOffsetField, hdr));
  if (n != sizeof hdr) return Error(Errc::kBadFormat, "pcHeader: short read of table offsets");
  auto pctab_off = *load<uint64_t>(hdr, 0);
  auto pcln_off = *load<uint64_t>(hdr, 8);
  if (pcln_off < pctab_off || pcln_off - pctab_off > (uint64_t{1} << 32))
    return Error(Errc::kBadFormat, "pcHeader: pctab offsets " + std::to_string(pctab_off) + ".." +
                                       std::to_string(pcln_off));
  c.pctab_.resize(pcln_off - pctab_off);
  GOREF_TRY(size_t got, tab.read(tab.address() + pctab_off, c.pctab_));
  if (got != c.pctab_.size()) return Error(Errc::kBadFormat, "pctab: short read");
  c.quantum_ = tab.pc_quantum();
  c.spans_.assign(tab.nfunc(), Span{});
  if (mode == Mode::kEager) {
    // Roughly three runs per function (prologue, body, epilogue) in Go code.
    c.ends_.reserve(tab.nfunc() * 4);
    c.deltas_.reserve(tab.nfunc() * 4);
    for (size_t i = 0; i < tab.nfunc(); ++i) c.build_one(tab.func(i));
    // Every function is decoded: the pctab copy is no longer needed.
    std::vector<std::byte>().swap(c.pctab_);
    c.ends_.shrink_to_fit();
    c.deltas_.shrink_to_fit();
  }
  c.build_time_ = std::chrono::steady_clock::now() - t0;
  return c;
}

void CompiledPcsp::build_one(const binary::Func& f) {
  Span& s = spans_[f.index()];
  if (s.count != kNotBuilt) return;
  ++built_;
  uint64_t entry = f.entry(), end = f.end();
  if (f.pcsp() == 0 || end <= entry || end - entry > kMaxFuncSize ||
      ends_.size() >= UINT32_MAX - kMaxRunsPerFunc) {
    s.count = kNoTable;
    return;
  }
  auto begin = static_cast<uint32_t>(ends_.size());
  binary::PcValueDecoder d(pctab_, f.pcsp(), entry, quantum_, end);
  binary::PcValueRun run;
  size_t n = 0;
  while (d.next(run) && n < kMaxRunsPerFunc) {
    // Runs are in pc order and bounded by the function (the decoder stops at `end`); a run
    // ending beyond it covers pcs of the next function, which this function never answers for.
    uint64_t run_end = std::min(run.end, end);
    if (run_end <= run.start) continue;  // zero-length step
    ends_.push_back(static_cast<uint32_t>(run_end - entry));
    deltas_.push_back(run.value);
    ++n;
  }
  if (d.corrupt() || n == 0 || n >= kMaxRunsPerFunc) {
    ends_.resize(begin);
    deltas_.resize(begin);
    s.count = kNoTable;
    return;
  }
  s.begin = begin;
  s.count = static_cast<uint32_t>(n);
}

std::optional<int32_t> CompiledPcsp::lookup(const binary::Func& f, uint64_t link_pc) const {
  if (f.index() >= spans_.size()) return std::nullopt;
  const Span& s = spans_[f.index()];
  if (s.count == kNotBuilt || s.count == kNoTable) return std::nullopt;
  uint64_t entry = f.entry();
  if (link_pc < entry || link_pc - entry >= kMaxFuncSize) return std::nullopt;
  auto off = static_cast<uint32_t>(link_pc - entry);
  const uint32_t* first = ends_.data() + s.begin;
  const uint32_t* last = first + s.count;
  // The run holding off is the first whose end is past it (as pcvalue: the value of the first
  // step whose new pc > targetpc). Most functions have a handful of runs: scan short ones.
  const uint32_t* it;
  if (s.count <= 8) {
    it = first;
    while (it != last && *it <= off) ++it;
  } else {
    it = std::upper_bound(first, last, off);
  }
  if (it == last) return std::nullopt;
  return deltas_[static_cast<size_t>(it - ends_.data())];
}

std::optional<int32_t> CompiledPcsp::sp_delta(const binary::Func& f, uint64_t link_pc) {
  if (f.index() >= spans_.size()) return std::nullopt;
  build_one(f);
  return lookup(f, link_pc);
}

size_t CompiledPcsp::memory_bytes() const {
  return pctab_.capacity() + spans_.capacity() * sizeof(Span) +
         ends_.capacity() * sizeof(uint32_t) + deltas_.capacity() * sizeof(int32_t);
}

}  // namespace goref::unwind
