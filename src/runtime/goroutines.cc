#include "goref/runtime/goroutines.h"

#include <unordered_set>

#include "goref/base/bytes.h"
#include "goref/target/batch_read.h"

namespace goref::runtime {
namespace {

// g structures closer than this are read together, in blocks of at most kGCoalesceBlock.
constexpr uint64_t kGCoalesceGap = 4096;
constexpr uint64_t kGCoalesceBlock = 1 << 20;

// Reads a [N]string global into host strings; N from the variable's size.
std::vector<std::string> read_string_array(const Process& p, std::string_view name,
                                           std::vector<std::string>& warnings) {
  std::vector<std::string> out;
  auto addr = p.global(name);
  auto size = p.program().global_size(name);
  if (!addr.ok() || !size) {
    warnings.push_back(std::string(name) + ": not found; statuses are shown by number");
    return out;
  }
  size_t n = std::min<uint64_t>(*size / 16, 256);
  for (size_t i = 0; i < n; ++i) {
    auto s = p.read_go_string(*addr + i * 16, 128);
    out.push_back(s.ok() ? *s : std::string("?"));
  }
  return out;
}

Result<std::vector<ThreadM>> read_ms(const Process& p) {
  std::vector<ThreadM> ms;
  GOREF_TRY(Addr allm, p.global("runtime.allm"));
  GOREF_TRY(uint64_t mp, p.target().read_word(allm));
  const auto& L = p.layout().m;
  uint64_t need = std::max({L.procid, L.curg, L.g0, L.gsignal, L.alllink, L.vdso_pc}) + 8;
  std::unordered_set<uint64_t> seen;
  std::vector<std::byte> buf(need);
  while (mp != 0) {
    if (!seen.insert(mp).second || ms.size() > 100000)
      return Error(Errc::kBadFormat, "runtime.allm: the list of Ms loops at " + to_hex(mp));
    GOREF_CHECK(p.target().read_exact(Addr(mp), buf).context("runtime.m " + to_hex(mp)));
    ThreadM m;
    m.addr = Addr(mp);
    m.tid = Tid(static_cast<pid_t>(load<uint64_t>(buf, L.procid).value_or(0)));
    m.curg = Addr(load<uint64_t>(buf, L.curg).value_or(0));
    m.g0 = Addr(load<uint64_t>(buf, L.g0).value_or(0));
    m.gsignal = Addr(load<uint64_t>(buf, L.gsignal).value_or(0));
    m.vdso_sp = load<uint64_t>(buf, L.vdso_sp).value_or(0);
    m.vdso_pc = load<uint64_t>(buf, L.vdso_pc).value_or(0);
    ms.push_back(m);
    mp = load<uint64_t>(buf, L.alllink).value_or(0);
  }
  return ms;
}

Goroutine decode_g(Addr addr, Bytes b, const GLayout& L) {
  Goroutine g;
  g.addr = addr;
  auto u64 = [&](uint64_t off) { return load<uint64_t>(b, off).value_or(0); };
  uint32_t st = load<uint32_t>(b, L.atomicstatus).value_or(0);
  g.scan = (st & k_Gscan) != 0;
  g.status = st & ~k_Gscan;
  g.goid = u64(L.goid);
  g.waitreason = load<uint8_t>(b, L.waitreason).value_or(0);
  g.waitsince = static_cast<int64_t>(u64(L.waitsince));
  g.locked_to_thread = u64(L.lockedm) != 0;
  g.parent_goid = L.parent_goid ? u64(*L.parent_goid) : 0;
  g.gopc = u64(L.gopc);
  g.startpc = u64(L.startpc);
  g.m = Addr(u64(L.m));
  g.stack = {Addr(u64(L.stack_lo)), Addr(u64(L.stack_hi))};
  g.sched = {u64(L.sched_sp), u64(L.sched_pc), u64(L.sched_bp), u64(L.sched_lr), u64(L.sched_ctxt)};
  g.syscallsp = u64(L.syscallsp);
  g.syscallpc = u64(L.syscallpc);
  g.syscallbp = L.syscallbp ? u64(*L.syscallbp) : 0;
  if (L.running_cleanups) g.running_cleanups = load<uint8_t>(b, *L.running_cleanups).value_or(0);
  return g;
}

}  // namespace

Result<Goroutines> read_goroutines(const Process& p) {
  Goroutines out;
  auto& t = p.target();
  GOREF_TRY(Addr allglen_addr, p.global("runtime.allglen"));
  GOREF_TRY(Addr allgs_addr, p.global("runtime.allgs"));
  GOREF_TRY(out.allglen, t.read_word(allglen_addr).context("runtime.allglen"));
  GOREF_TRY(uint64_t allgs_ptr, t.read_word(allgs_addr).context("runtime.allgs"));
  if (out.allglen > kMaxGoroutines)
    return Error(Errc::kBadFormat,
                 "runtime.allglen is " + std::to_string(out.allglen) + ": not plausible");

  // The array of *g in one read.
  std::vector<uint64_t> ptrs(out.allglen);
  GOREF_CHECK(t.read_exact(Addr(allgs_ptr), std::as_writable_bytes(std::span(ptrs)))
                  .context("runtime.allgs array at " + to_hex(allgs_ptr)));

  // The g structures, coalesced: they are allocated together, so a few large reads fetch them.
  const auto& L = p.layout().g;
  std::vector<target::Range> ranges;
  ranges.reserve(ptrs.size());
  for (uint64_t gp : ptrs)
    if (gp != 0) ranges.push_back({Addr(gp), L.size});
  auto bufs = target::read_ranges(t, ranges, kGCoalesceGap, kGCoalesceBlock);
  out.gs.reserve(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (!bufs[i].ok()) {
      // The process is gone: every other read fails the same way.
      if (bufs[i].error().code() == Errc::kNoSuchProcess)
        return std::move(bufs[i]).error().context("goroutine at " + ranges[i].addr.hex());
      out.warnings.push_back("goroutine at " + ranges[i].addr.hex() + ": " +
                             bufs[i].error().message());
      continue;
    }
    Goroutine g = decode_g(ranges[i].addr, *bufs[i], L);
    // The runtime skips dead goroutines everywhere (and, from Go 1.26, dead ones that an
    // extra M keeps for cgo callbacks).
    if (g.status == k_Gdead || g.status == k_Gdeadextra) continue;
    out.gs.push_back(g);
  }

  auto ms = read_ms(p);
  if (ms.ok())
    out.ms = std::move(ms).value();
  else
    out.warnings.push_back("threads: " + ms.error().message());
  out.status_strings = read_string_array(p, "runtime.gStatusStrings", out.warnings);
  out.wait_reasons = read_string_array(p, "runtime.waitReasonStrings", out.warnings);
  return out;
}

std::string status_string(const Goroutines& all, const Goroutine& g) {
  std::string s;
  if (g.status < all.status_strings.size())
    s = all.status_strings[g.status];
  else
    s = "???";
  // Go 1.26 also shows the wait reason of a leaked goroutine.
  if ((g.status == k_Gwaiting || g.status == k_Gleaked) && g.waitreason != 0) {
    if (g.waitreason < all.wait_reasons.size())
      s = all.wait_reasons[g.waitreason];
    else
      s = "wait reason " + std::to_string(g.waitreason);
  }
  return s;
}

}  // namespace goref::runtime
