#include "goref/runtime/stack_snapshot.h"

#include <time.h>

#include <algorithm>
#include <unordered_map>

#include "goref/target/batch_read.h"
#include "goref/target/target.h"

namespace goref::runtime {
namespace {

// Stack copies closer than this are read together, in blocks of at most kStackCoalesceBlock.
constexpr uint64_t kStackCoalesceGap = 4096;
constexpr uint64_t kStackCoalesceBlock = 4 << 20;

// Checks that [from, hi) is a plausible part of a stack whose bounds are [lo, hi).
Result<void> check_stack(uint64_t from, AddrRange bounds) {
  if (bounds.start >= bounds.end || bounds.size() > kMaxStackBytes)
    return Error(Errc::kBadFormat, "stack bounds [" + bounds.start.hex() + ", " + bounds.end.hex() +
                                       ") are not plausible");
  if (from < bounds.start.value() || from > bounds.end.value())
    return Error(Errc::kBadFormat, "sp " + to_hex(from) + " is outside the stack [" +
                                       bounds.start.hex() + ", " + bounds.end.hex() + ")");
  return {};
}

// Copies [from, hi) of a stack whose bounds are [lo, hi) in one read.
Result<unwind::StackImage> copy_stack(target::Target& t, uint64_t from, AddrRange bounds) {
  GOREF_CHECK(check_stack(from, bounds));
  unwind::StackImage img;
  img.lo = Addr(from);
  img.bytes.resize(bounds.end.value() - from);
  GOREF_CHECK(t.read_exact(img.lo, img.bytes).context("stack copy"));
  return img;
}

// The stack bounds of an M's g0 or gsignal (runtime.g structures that are not in allgs).
Result<AddrRange> g_stack_bounds(const Process& p, Addr g0) {
  const auto& L = p.layout().g;
  GOREF_TRY(uint64_t lo, p.target().read_word(g0 + L.stack_lo));
  GOREF_TRY(uint64_t hi, p.target().read_word(g0 + L.stack_hi));
  return AddrRange{Addr(lo), Addr(hi)};
}

// Fills s for one goroutine, except its image: *copy_from is where the copy of the goroutine's
// stack must start. Returns an error that names what was missing.
Result<void> locate(const Process& p, const Goroutine& g, const ThreadM* m, GoroutineStack& s,
                    uint64_t* copy_from) {
  auto& t = p.target();
  // unwinder.initAt: a saved syscall context wins over g.sched.
  if (g.syscallsp != 0) {
    s.source = StackStart::kSyscall;
    s.start = {g.syscallpc, g.syscallsp, g.syscallbp, 0};
  } else {
    s.source = StackStart::kSched;
    s.start = {g.sched.pc, g.sched.sp, g.sched.bp, g.sched.lr};
  }
  // traceback1: a thread inside the VDSO saved its context in m.vdsoPC/vdsoSP; this comes after
  // the syscall check to cover VDSO calls made after entersyscall.
  if (m && m->vdso_sp != 0) {
    s.source = StackStart::kVdso;
    s.start = {m->vdso_pc, m->vdso_sp, 0, 0};
  } else if (g.status == k_Grunning && g.syscallsp == 0) {
    // g.sched is stale while a goroutine runs: only its thread knows where it is.
    if (!m) return Error(Errc::kNotFound, "running, but no thread (M) runs it");
    GOREF_TRY(auto regs, t.registers(m->tid).context("thread " + m->tid.str()));
    s.thread_registers.assign(regs.gpr.begin(), regs.gpr.begin() + regs.ngpr);
    if (g.stack.contains(Addr(regs.sp))) {
      s.source = StackStart::kRegisters;
      s.start = {regs.pc, regs.sp, regs.fp, regs.lr};
    } else {
      GOREF_TRY(auto g0, g_stack_bounds(p, m->g0));
      GOREF_TRY(auto gsignal, g_stack_bounds(p, m->gsignal));
      s.thread_start = {regs.pc, regs.sp, regs.fp, regs.lr};
      if (g0.contains(Addr(regs.sp))) {
        s.source = StackStart::kG0;
        GOREF_TRY(s.thread_image, copy_stack(t, regs.sp, g0).context("g0 stack"));
        // systemstack and morestack left the goroutine's own context in g.sched.
        s.start = {g.sched.pc, g.sched.sp, g.sched.bp, g.sched.lr};
      } else if (gsignal.contains(Addr(regs.sp))) {
        s.source = StackStart::kSignal;
        GOREF_TRY(s.thread_image, copy_stack(t, regs.sp, gsignal).context("gsignal stack"));
        *copy_from = g.stack.start.value();
        return {};
      } else {
        return Error(Errc::kUnsupported, "thread " + m->tid.str() + " is at sp " + to_hex(regs.sp) +
                                             ", outside the goroutine's, g0's and gsignal's "
                                             "stacks (C code?)");
      }
    }
  }
  *copy_from = s.start.sp;
  return {};
}

int64_t monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

Result<StackSnapshot> snapshot_stacks(const Process& p) {
  StackSnapshot snap;
  GOREF_TRY(snap.all, read_goroutines(p));
  if (p.target().kind() == target::Kind::kLive) {
    snap.nanotime = monotonic_now();
  } else {
    // A core does not record when it was taken on the monotonic clock; the latest moment the
    // program itself recorded is a lower bound.
    snap.nanotime_estimated = true;
    for (const auto& g : snap.all.gs) snap.nanotime = std::max(snap.nanotime, g.waitsince);
  }
  if (auto fs = p.global("runtime.fingStatus"); fs.ok())
    if (auto v = p.target().read<uint32_t>(*fs); v.ok()) snap.fing_status = *v;

  std::unordered_map<uint64_t, const ThreadM*> m_by_addr;
  for (const auto& m : snap.all.ms) m_by_addr[m.addr.value()] = &m;
  snap.stacks.resize(snap.all.gs.size());
  std::vector<target::Range> ranges;
  std::vector<size_t> range_of;  // goroutine index of each range
  for (size_t i = 0; i < snap.all.gs.size(); ++i) {
    const auto& g = snap.all.gs[i];
    auto& s = snap.stacks[i];
    const ThreadM* m = nullptr;
    if (auto it = m_by_addr.find(g.m.value()); g.m && it != m_by_addr.end()) m = it->second;
    // An M that runs g must also name it as its curg; otherwise g.m is stale.
    if (m && m->curg != g.addr) m = nullptr;
    uint64_t from = 0;
    auto r = locate(p, g, m, s, &from);
    if (r.ok()) r = check_stack(from, g.stack);
    if (!r.ok()) {
      s.error = r.error().message();
      continue;
    }
    ranges.push_back({Addr(from), g.stack.end.value() - from});
    range_of.push_back(i);
  }
  // Stacks are allocated from spans of neighbouring memory: coalesced reads copy them with a
  // fraction of the system calls.
  auto copies = target::read_ranges(p.target(), ranges, kStackCoalesceGap, kStackCoalesceBlock);
  for (size_t k = 0; k < ranges.size(); ++k) {
    auto& s = snap.stacks[range_of[k]];
    if (!copies[k].ok()) {
      s.error = "stack copy: " + copies[k].error().message();
      continue;
    }
    s.image.lo = ranges[k].addr;
    s.image.bytes = std::move(*copies[k]);
    snap.bytes_copied += s.image.bytes.size() + s.thread_image.bytes.size();
  }
  return snap;
}

}  // namespace goref::runtime
