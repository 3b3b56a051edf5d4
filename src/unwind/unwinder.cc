#include "goref/unwind/unwinder.h"

#include "goref/base/addr.h"

namespace goref::unwind {

namespace {

// amd64: CALL pushes the return address, so the CFA is one word above sp + pcsp. arm64 keeps it
// in LR and pcsp counts the saved-LR slot itself.
uint64_t return_slot(target::Arch a) {
  return a == target::Arch::kAmd64 ? 8 : 0;
}

bool uses_lr(target::Arch a) {
  return a == target::Arch::kArm64;
}

// On arm64 the signal handler saves LR below the injected call's frame and the runtime skips
// alignUp(MinFrameSize = 8, StackAlign = 16) bytes after one (traceback.go, unwinder.next).
constexpr uint64_t kArm64InjectedCallSkip = 16;

Unwound& stop(Unwound& u, StopReason r, std::string detail) {
  u.stop = r;
  u.detail = std::move(detail);
  return u;
}

std::string at(size_t index, uint64_t pc, std::string_view fn = {}) {
  std::string s = "frame " + std::to_string(index) + " pc " + to_hex(pc);
  if (!fn.empty()) s += " (" + std::string(fn) + ")";
  return s;
}

}  // namespace

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kTopFrame:
      return "top frame";
    case StopReason::kStackSwitch:
      return "stack switch";
    case StopReason::kNoFunc:
      return "pc in no Go function";
    case StopReason::kNoPcsp:
      return "no pcsp table";
    case StopReason::kSpWrite:
      return "SP-writing function";
    case StopReason::kOutsideStack:
      return "outside the stack";
    case StopReason::kDepthLimit:
      return "depth limit";
    case StopReason::kBadFrame:
      return "bad frame";
  }
  return "?";
}

uint64_t Unwound::sym_pc(size_t i) const {
  const PhysFrame& f = frames.at(i);
  if (i == 0 || f.injected_call_below || f.pc <= f.entry) return f.pc;
  return f.pc - 1;
}

Unwinder::Unwinder(const binary::Pclntab& tab, uint64_t load_bias, target::Arch arch)
    : tab_(&tab), bias_(load_bias), arch_(arch) {
  auto c = CompiledPcsp::build(tab, CompiledPcsp::Mode::kEager);
  if (c.ok()) compiled_ = std::make_unique<CompiledPcsp>(std::move(*c));
  // FuncID numbering shifts between Go versions (internal/abi), names do not.
  special_.assign(tab.nfunc(), Special::kNone);
  for (size_t i = 0; i < tab.nfunc(); ++i) {
    std::string_view n = tab.func(i).name();
    if (!n.starts_with("runtime.")) continue;
    n.remove_prefix(8);
    if (n == "systemstack" || n == "morestack" || n == "mcall")
      special_[i] = Special::kStackSwitch;
    else if (n == "sigpanic" || n == "asyncPreempt" || n == "debugCallV2")
      special_[i] = Special::kInjected;
    else if (n == "cgocallback")
      special_[i] = Special::kCgocallback;
  }
}

std::optional<int32_t> Unwinder::sp_delta(const binary::Func& f, uint64_t link_pc, Method m) const {
  if (m == Method::kDecodePcsp || !compiled_) return f.pcsp_at(link_pc);
  return compiled_->lookup(f, link_pc);
}

Unwound Unwinder::unwind(const StackImage& stack, StartState start, Method m,
                         size_t max_frames) const {
  if (m == Method::kFramePointer) return unwind_fp(stack, start, max_frames);
  return unwind_pcsp(stack, start, m, max_frames);
}

// Mirrors unwinder.resolveInternal (the frame's CFA and return address) and unwinder.next (the
// caller's pc and sp). pcsp is looked up at the frame's pc itself, also when that is a return
// address, as the runtime does (funcspdelta(f, frame.pc)): the SP delta at the instruction after
// a CALL equals the one at the CALL.
Unwound Unwinder::unwind_pcsp(const StackImage& stack, StartState start, Method m,
                              size_t max_frames) const {
  Unwound u;
  const bool lr_arch = uses_lr(arch_);
  const uint64_t slot = return_slot(arch_);
  uint64_t pc = start.pc, sp = start.sp, lr = lr_arch ? start.lr : 0;
  bool injected_below = false;
  for (size_t i = 0;; ++i) {
    const bool innermost = i == 0;
    if (i >= max_frames) return stop(u, StopReason::kDepthLimit, std::to_string(i) + " frames");
    auto f = tab_->find_func(pc - bias_);
    if (!f) return stop(u, StopReason::kNoFunc, at(i, pc) + " is in no Go function");
    PhysFrame fr{pc, sp, 0, f->entry() + bias_, f->name(), injected_below};
    Special kind = f->index() < special_.size() ? special_[f->index()] : Special::kNone;
    if (f->pcsp() == 0) {
      u.frames.push_back(fr);
      return stop(u, StopReason::kNoPcsp, at(i, pc, fr.function) + ": no pcsp table");
    }
    if (kind == Special::kStackSwitch) {
      u.frames.push_back(fr);
      return stop(u, StopReason::kStackSwitch, at(i, pc, fr.function));
    }
    if (!stack.contains(Addr(sp), 0))
      return stop(u, StopReason::kOutsideStack,
                  at(i, pc, fr.function) + ": sp " + to_hex(sp) + " outside the stack [" +
                      stack.lo.hex() + ", " + stack.hi().hex() + ")");
    auto delta = sp_delta(*f, pc - bias_, m);
    if (!delta)
      return stop(u, StopReason::kBadFrame, at(i, pc, fr.function) + ": no pcsp entry at pc");
    // A frame cannot be larger than the stack holding it.
    if (*delta < 0 || static_cast<uint64_t>(*delta) > stack.bytes.size())
      return stop(u, StopReason::kBadFrame,
                  at(i, pc, fr.function) + ": SP delta " + std::to_string(*delta));
    uint64_t fp = sp + static_cast<uint64_t>(*delta) + slot;
    fr.fp = fp;
    u.frames.push_back(fr);

    uint8_t flag = f->flag();
    if (flag & binary::kFuncFlagTopFrame) return stop(u, StopReason::kTopFrame, {});
    // cgocallback writes SP but keeps both stacks unwindable (runtime: flag &^= SPWrite).
    if (!innermost && (flag & binary::kFuncFlagSPWrite) && kind != Special::kCgocallback)
      return stop(u, StopReason::kSpWrite, at(i, pc, fr.function));

    // The return address. amd64: the slot below the CFA. arm64: LR itself while the innermost
    // frame is a leaf or in its prologue (sp == fp), or as recovered after an injected call;
    // otherwise the LR saved at 0(sp).
    uint64_t ra;
    if (lr_arch && lr != 0 && (!innermost || sp == fp)) {
      ra = lr;
    } else {
      uint64_t slot_addr = lr_arch ? sp : fp - 8;
      auto w = stack.word(Addr(slot_addr));
      if (!w)
        return stop(u, StopReason::kOutsideStack,
                    at(i, pc, fr.function) + ": return address slot " + to_hex(slot_addr) +
                        " outside the stack");
      ra = *w;
    }
    if (ra == 0)
      return stop(u, StopReason::kBadFrame, at(i, pc, fr.function) + ": return address 0");

    const bool injected = kind == Special::kInjected;
    uint64_t next_sp = fp, next_lr = 0;
    if (lr_arch && injected) {
      auto x = stack.word(Addr(next_sp));
      if (!x)
        return stop(u, StopReason::kOutsideStack,
                    at(i, pc, fr.function) + ": saved LR outside the stack");
      next_sp += kArm64InjectedCallSkip;
      auto caller = tab_->find_func(ra - bias_);
      if (!caller)
        ra = *x;
      else if (sp_delta(*caller, ra - bias_, m) == 0)
        next_lr = *x;
    }
    // The runtime throws "traceback stuck" when a frame repeats; here sp must grow (an arm64
    // leaf at the innermost frame shares its caller's sp).
    if (next_sp < sp || (next_sp == sp && !(lr_arch && innermost)))
      return stop(
          u, StopReason::kBadFrame,
          at(i, pc, fr.function) + ": caller sp " + to_hex(next_sp) + " <= sp " + to_hex(sp));
    pc = ra;
    sp = next_sp;
    lr = next_lr;
    injected_below = injected;
  }
}

// Frame pointers (amd64): a Go function with a frame pushes BP right below its return address
// and points BP at it, so [bp] is the caller's bp, [bp+8] the return address and bp+16 the
// CFA. The innermost frame may be frameless or in its prologue or epilogue, so its CFA comes
// from pcsp; whether BP already points into it tells where the caller's bp is. The top frame's
// CFA (goexit has no frame pointer and no caller) also comes from pcsp.
Unwound Unwinder::unwind_fp(const StackImage& stack, StartState start, size_t max_frames) const {
  if (arch_ != target::Arch::kAmd64) {
    Unwound u;
    return stop(u, StopReason::kBadFrame, "frame-pointer unwinding is implemented for amd64 only");
  }
  // Frame 0 exactly as the pcsp method.
  Unwound u = unwind_pcsp(stack, start, Method::kCompiledPcsp, std::min<size_t>(max_frames, 1));
  if (u.stop != StopReason::kDepthLimit || u.frames.size() != 1 || max_frames <= 1) return u;
  u.detail.clear();
  const PhysFrame& f0 = u.frames[0];
  uint64_t cfa = f0.fp;
  uint64_t ra = *stack.word(Addr(cfa - 8));  // read successfully by unwind_pcsp
  uint64_t bp = start.fp;
  if (start.fp == cfa - 16) {
    auto w = stack.word(Addr(cfa - 16));
    if (!w) return stop(u, StopReason::kOutsideStack, at(0, f0.pc, f0.function) + ": saved bp");
    bp = *w;
  }
  auto f0_func = tab_->find_func(f0.entry - bias_);
  Special callee_kind = f0_func ? special_[f0_func->index()] : Special::kNone;
  for (size_t i = 1;; ++i) {
    if (i >= max_frames) return stop(u, StopReason::kDepthLimit, std::to_string(i) + " frames");
    uint64_t pc = ra, sp = cfa;
    const bool injected_below = callee_kind == Special::kInjected;
    auto f = tab_->find_func(pc - bias_);
    if (!f) return stop(u, StopReason::kNoFunc, at(i, pc) + " is in no Go function");
    PhysFrame fr{pc, sp, 0, f->entry() + bias_, f->name(), injected_below};
    Special kind = special_[f->index()];
    if (f->pcsp() == 0) {
      u.frames.push_back(fr);
      return stop(u, StopReason::kNoPcsp, at(i, pc, fr.function) + ": no pcsp table");
    }
    if (kind == Special::kStackSwitch) {
      u.frames.push_back(fr);
      return stop(u, StopReason::kStackSwitch, at(i, pc, fr.function));
    }
    uint8_t flag = f->flag();
    if (flag & binary::kFuncFlagTopFrame) {
      auto d = sp_delta(*f, pc - bias_, Method::kCompiledPcsp);
      if (!d || *d < 0 || static_cast<uint64_t>(*d) > stack.bytes.size())
        return stop(u, StopReason::kBadFrame, at(i, pc, fr.function) + ": top frame pcsp");
      fr.fp = sp + static_cast<uint64_t>(*d) + 8;
      u.frames.push_back(fr);
      return stop(u, StopReason::kTopFrame, {});
    }
    // bp must point into this frame: above sp (so the walk only goes up) and inside the copy.
    if (bp % 8 != 0 || bp + 16 <= sp)
      return stop(
          u, StopReason::kBadFrame,
          at(i, pc, fr.function) + ": frame pointer " + to_hex(bp) + " below sp " + to_hex(sp));
    auto saved_bp = stack.word(Addr(bp));
    auto ret = stack.word(Addr(bp + 8));
    if (!saved_bp || !ret)
      return stop(u, StopReason::kOutsideStack,
                  at(i, pc, fr.function) + ": frame pointer " + to_hex(bp) + " outside the stack");
    fr.fp = bp + 16;
    u.frames.push_back(fr);
    if ((flag & binary::kFuncFlagSPWrite) && kind != Special::kCgocallback)
      return stop(u, StopReason::kSpWrite, at(i, pc, fr.function));
    if (*ret == 0)
      return stop(u, StopReason::kBadFrame, at(i, pc, fr.function) + ": return address 0");
    ra = *ret;
    cfa = bp + 16;
    bp = *saved_bp;
    callee_kind = kind;
  }
}

std::optional<Mismatch> compare(const Unwound& a, const Unwound& b) {
  size_t n = std::min(a.frames.size(), b.frames.size());
  for (size_t i = 0; i < n; ++i) {
    const PhysFrame& x = a.frames[i];
    const PhysFrame& y = b.frames[i];
    auto frame = [](const PhysFrame& f) {
      return std::string(f.function) + " pc " + to_hex(f.pc) + " sp " + to_hex(f.sp) + " fp " +
             to_hex(f.fp);
    };
    if (x.pc != y.pc || x.sp != y.sp || x.fp != y.fp || x.entry != y.entry ||
        x.function != y.function || x.injected_call_below != y.injected_call_below)
      return Mismatch{i, frame(x) + " vs " + frame(y)};
  }
  if (a.frames.size() != b.frames.size())
    return Mismatch{
        n, std::to_string(a.frames.size()) + " frames vs " + std::to_string(b.frames.size())};
  if (a.stop != b.stop)
    return Mismatch{
        n, std::string(stop_reason_name(a.stop)) + " vs " + std::string(stop_reason_name(b.stop))};
  return std::nullopt;
}

}  // namespace goref::unwind
