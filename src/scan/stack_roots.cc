#include "goref/scan/stack_roots.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "goref/base/bytes.h"
#include "goref/base/log.h"
#include "goref/binary/dwarf.h"
#include "goref/binary/pclntab.h"
#include "goref/runtime/goroutine_unwind.h"
#include "goref/runtime/goroutines.h"

namespace goref::scan {
namespace {

using runtime::Process;

// A stack object record (runtime.stackObjectRecord), located in one frame.
struct StackObject {
  uint64_t addr = 0, size = 0;
  int64_t ptrdata = 0;  // negative up to Go 1.23: gcdata is a GC program (scanned conservatively)
  uint64_t gcdata = 0;  // link-time address of the pointer mask
  RefTree::NodeId node = RefTree::kNone;
  bool scanned = false;
};

// A stackmap {n int32; nbit int32; bytedata [...]uint8}: bitmap idx (empty when nbit is 0: no
// pointer slots), or nullopt when it cannot be read or idx is out of range.
std::optional<std::vector<uint8_t>> stack_map(const Process& p, uint64_t at, int32_t idx,
                                              uint32_t& nbit) {
  nbit = 0;
  std::byte hdr[8];
  const auto& elf = p.program().elf();
  if (auto r = elf.read_vaddr(at, hdr); !r.ok() || *r != 8) return std::nullopt;
  auto n = load<int32_t>(hdr, 0).value_or(0);
  auto nb = load<int32_t>(hdr, 4).value_or(0);
  if (idx < 0 || idx >= n || nb < 0 || nb > (1 << 24)) return std::nullopt;
  if (nb == 0) return std::vector<uint8_t>{};
  uint64_t len = (static_cast<uint64_t>(nb) + 7) / 8;
  std::vector<uint8_t> bits(len);
  auto out = std::as_writable_bytes(std::span<uint8_t>(bits));
  if (auto r = elf.read_vaddr(at + 8 + static_cast<uint64_t>(idx) * len, out); !r.ok() || *r != len)
    return std::nullopt;
  nbit = static_cast<uint32_t>(nb);
  return bits;
}

class GoroutineScan {
 public:
  GoroutineScan(const Process& p, const runtime::GoroutineStack& s, Marker& m, uint64_t rodata)
      : p_(p), s_(s), m_(m), rodata_(rodata) {}

  // A pointer found on the stack: to the heap, or to a stack object of this goroutine.
  void found(uint64_t v, RefTree::NodeId node) {
    if (v == 0) return;
    if (v >= s_.image.lo.value() && v < s_.image.hi().value()) {
      for (auto& o : objects_)
        if (v >= o.addr && v < o.addr + o.size && !o.scanned) {
          o.scanned = true;
          pending_.push_back(&o);
        }
      return;
    }
    m_.mark_from(v, node);
  }
  void conservative(uint64_t lo, uint64_t hi, RefTree::NodeId node) {
    for (uint64_t a = lo & ~uint64_t{7}; a + 8 <= hi; a += 8)
      if (auto w = s_.image.word(Addr(a))) found(*w, node);
  }
  void bitmap(uint64_t base, const std::vector<uint8_t>& bits, uint32_t nbit,
              RefTree::NodeId node) {
    for (uint32_t i = 0; i < nbit; ++i)
      if ((bits[i / 8] >> (i % 8)) & 1)
        if (auto w = s_.image.word(Addr(base + uint64_t{i} * 8))) found(*w, node);
  }
  void add_objects(const binary::Func& f, uint64_t varp, uint64_t argp, uint64_t sp,
                   RefTree::NodeId node) {
    auto fd = f.funcdata(binary::kFuncdataStackObjects);
    if (!fd) return;
    const auto& elf = p_.program().elf();
    std::byte cnt[8];
    if (auto r = elf.read_vaddr(*fd, cnt); !r.ok() || *r != 8) return;
    uint64_t n = std::min<uint64_t>(load<uint64_t>(cnt, 0).value_or(0), 4096);
    std::vector<std::byte> recs(n * 16);
    if (auto r = elf.read_vaddr(*fd + 8, recs); !r.ok() || *r != recs.size()) return;
    for (uint64_t i = 0; i < n; ++i) {
      auto off = load<int32_t>(recs, i * 16).value_or(0);
      auto size = load<int32_t>(recs, i * 16 + 4).value_or(0);
      StackObject o;
      o.addr = (off < 0 ? varp : argp) + static_cast<uint64_t>(static_cast<int64_t>(off));
      if (o.addr < sp || size <= 0) continue;
      o.size = static_cast<uint64_t>(size);
      o.ptrdata = load<int32_t>(recs, i * 16 + 8).value_or(0);
      o.gcdata = rodata_ + load<uint32_t>(recs, i * 16 + 12).value_or(0);
      o.node = node;
      objects_.push_back(o);
    }
  }
  // Stack objects referred to from the stack, and those they refer to in turn.
  void drain_objects() {
    const auto& elf = p_.program().elf();
    while (!pending_.empty()) {
      StackObject* o = pending_.back();
      pending_.pop_back();
      if (o->ptrdata <= 0) {
        if (o->ptrdata < 0) conservative(o->addr, o->addr + o->size, o->node);
        continue;
      }
      uint64_t words = static_cast<uint64_t>(o->ptrdata) / 8;
      std::vector<uint8_t> bits((words + 7) / 8);
      auto out = std::as_writable_bytes(std::span<uint8_t>(bits));
      if (auto r = elf.read_vaddr(o->gcdata, out); !r.ok() || *r != bits.size()) {
        conservative(o->addr, o->addr + o->size, o->node);
        continue;
      }
      bitmap(o->addr, bits, static_cast<uint32_t>(words), o->node);
    }
  }
  size_t object_count() const { return objects_.size(); }
  void reserve(size_t n) { objects_.reserve(n); }

 private:
  const Process& p_;
  const runtime::GoroutineStack& s_;
  Marker& m_;
  uint64_t rodata_;
  // Pointers into objects_ are kept in pending_: it is filled completely before the first
  // pointer is taken (all frames are collected before any is scanned).
  std::vector<StackObject> objects_;
  std::vector<StackObject*> pending_;
};

// Local values are assembled in host memory and walked from addresses in the kernel half of the
// address space, which no user-space pointer of the target can alias.
constexpr uint64_t kScratchBase = 0xffff'f000'0000'0000;
constexpr uint64_t kMaxLocalBytes = 1 << 20;

// Walks the DWARF-described locals of one frame, each under "pkg.Func.var".
size_t walk_locals(const binary::Dwarf& d, const unwind::PhysFrame& pf, uint64_t link_pc,
                   const runtime::GoroutineStack& gs, TypedWalker& w, MemView& mem, RefTree& tree,
                   std::unordered_map<uint64_t, std::vector<binary::FrameVariable>>& cache) {
  auto it = cache.find(link_pc);
  if (it == cache.end()) {
    auto vars = d.frame_variables(link_pc);
    log::get("scan")->debug(
        "{} at {:#x}: {}", pf.function, link_pc,
        vars.ok() ? std::to_string(vars->size()) + " variables in DWARF" : vars.error().message());
    it = cache.emplace(link_pc, vars.ok() ? std::move(*vars) : std::vector<binary::FrameVariable>{})
             .first;
  }
  size_t walked = 0;
  std::vector<std::byte> value;
  for (const auto& v : it->second) {
    auto ti = d.info(v.type);
    if (!ti.ok() || ti->size == 0 || ti->size > kMaxLocalBytes) continue;
    value.assign(ti->size, std::byte{0});
    bool any = false;
    uint64_t off = 0;
    for (const auto& piece : v.pieces) {
      uint64_t len = piece.size ? piece.size : ti->size;
      if (off + len > value.size()) break;
      uint64_t at = pf.fp + static_cast<uint64_t>(piece.cfa_offset);
      if (piece.in_frame && gs.image.contains(Addr(at), len)) {
        std::memcpy(value.data() + off, gs.image.bytes.data() + (at - gs.image.lo.value()), len);
        any = true;
      }
      off += len;
    }
    if (!any) continue;
    mem.set_scratch(kScratchBase, value);
    std::string fn = v.function.empty() ? std::string(pf.function) : v.function;
    w.walk(kScratchBase, v.type, tree.root(fn + "." + v.name));
    ++walked;
  }
  mem.set_scratch(0, {});
  return walked;
}

// The link-time pc a frame's stack map and variable locations are looked up at: inside the call
// it is making (return address - 1), as the runtime's scanframeworker does, unless at entry.
uint64_t target_pc(const Process& p, const unwind::PhysFrame& pf) {
  uint64_t pc = p.link_addr(pf.pc);
  return pc != p.link_addr(pf.entry) ? pc - 1 : pc;
}

bool injected(std::string_view fn) {
  return fn == "runtime.asyncPreempt" || fn == "runtime.debugCallV2";
}

}  // namespace

StackRootStats mark_stacks(const Process& p, const runtime::StackSnapshot& stacks,
                           const unwind::Unwinder& u, Marker& m, RefTree& tree, TypedWalker* walker,
                           MemView* mem) {
  std::unordered_map<uint64_t, std::vector<binary::FrameVariable>> locals_cache;
  const binary::Dwarf* dwarf = p.program().dwarf();
  StackRootStats st;
  const auto& L = m.snapshot().layout;
  const auto& tab = p.program().pclntab();
  // moduledata.rodata as linked (a PIE's file holds it as a relocation): stack object masks
  // are read from the executable at link-time addresses.
  uint64_t rodata =
      p.program().elf().read_pointer(tab.moduledata().addr + L.md_rodata.off).value_or(0);
  const bool lr_arch = p.target().arch() != target::Arch::kAmd64;
  for (size_t gi = 0; gi < stacks.all.gs.size(); ++gi) {
    const auto& g = stacks.all.gs[gi];
    if (g.status == runtime::k_Gdead) continue;
    ++st.goroutines;
    auto f = runtime::unwind_goroutine(p, stacks.stacks[gi], u,
                                       unwind::Unwinder::Method::kCompiledPcsp, 100000);
    if (!f.error.empty()) ++st.incomplete;
    GoroutineScan scan(p, stacks.stacks[gi], m, rodata);
    if (walker && mem && dwarf)
      for (const auto& pf : f.own.frames) {
        if (pf.fp == 0) continue;
        st.typed_locals += walk_locals(*dwarf, pf, target_pc(p, pf), stacks.stacks[gi], *walker,
                                       *mem, tree, locals_cache);
      }
    struct Todo {
      uint64_t lo, hi;  // conservative range, or empty
      uint64_t varp, argp;
      std::vector<uint8_t> locals, args;
      uint32_t nlocals = 0, nargs = 0;
      RefTree::NodeId node;
    };
    std::vector<Todo> todo;
    const auto& fr = f.own.frames;
    for (size_t i = 0; i < fr.size(); ++i) {
      const auto& pf = fr[i];
      ++st.frames;
      Todo t{};
      t.node = tree.root(pf.function.empty() ? std::string_view("?") : pf.function);
      auto fn = tab.find_func(p.link_addr(pf.pc));
      bool cons = (i == 0 && f.trap) || injected(pf.function) ||
                  (i > 0 && injected(fr[i - 1].function)) || !fn || pf.fp == 0;
      if (!cons) {
        // scanframeworker's frame geometry: varp below the return address (amd64) and the
        // saved frame pointer; arguments from fp (plus the LR slot on link-register arches).
        uint64_t varp = lr_arch ? pf.fp : pf.fp - 8;
        if (varp > pf.sp) varp -= 8;
        uint64_t argp = pf.fp + (lr_arch ? 8 : 0);
        int32_t idx = fn->pcdata_at(binary::kPcdataStackMapIndex, target_pc(p, pf)).value_or(-1);
        if (idx == -1) idx = 0;
        t.varp = varp;
        t.argp = argp;
        uint64_t minsize = lr_arch ? 8 : 0;
        if (varp - pf.sp > minsize) {
          auto lm = fn->funcdata(binary::kFuncdataLocalsPointerMaps);
          std::optional<std::vector<uint8_t>> bits;
          if (lm) bits = stack_map(p, *lm, idx, t.nlocals);
          if (bits)
            t.locals = std::move(*bits);
          else
            cons = true;  // the runtime would throw "missing stackmap": scan it all instead
        }
        if (auto am = fn->funcdata(binary::kFuncdataArgsPointerMaps))
          t.args = stack_map(p, *am, idx, t.nargs).value_or(std::vector<uint8_t>{});
        if (!cons) scan.add_objects(*fn, varp, argp, pf.sp, t.node);
      }
      if (cons) {
        ++st.conservative_frames;
        t.lo = pf.sp;
        t.hi = pf.fp != 0 ? pf.fp : stacks.stacks[gi].image.hi().value();
      }
      todo.push_back(std::move(t));
    }
    st.stack_objects += scan.object_count();
    // A running goroutine's registers, conservatively (the runtime would have it at a safe
    // point; goref stopped it anywhere). Charged to its innermost frame.
    if (!stacks.stacks[gi].thread_registers.empty()) {
      RefTree::NodeId node = todo.empty() ? tree.root("runtime.registers") : todo.front().node;
      for (uint64_t v : stacks.stacks[gi].thread_registers) scan.found(v, node);
    }
    for (const auto& t : todo) {
      if (t.hi > t.lo) {
        scan.conservative(t.lo, t.hi, t.node);
      } else {
        if (t.nlocals) scan.bitmap(t.varp - uint64_t{t.nlocals} * 8, t.locals, t.nlocals, t.node);
        if (t.nargs) scan.bitmap(t.argp, t.args, t.nargs, t.node);
      }
      scan.drain_objects();
    }
  }
  return st;
}

}  // namespace goref::scan
