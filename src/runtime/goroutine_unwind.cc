#include "goref/runtime/goroutine_unwind.h"

#include "goref/target/arch.h"

namespace goref::runtime {

using unwind::StopReason;
using unwind::Unwinder;
using unwind::Unwound;

std::string stop_text(const Unwound& u) {
  std::string s = "unwinding stopped: " + std::string(unwind::stop_reason_name(u.stop));
  if (!u.detail.empty()) s += ": " + u.detail;
  return s;
}

namespace {

// The runtime's initAt for a start pc of 0 (a call through a nil func value): the caller's pc
// is at sp.
unwind::StartState fix_nil_pc(unwind::StartState s, const unwind::StackImage& img,
                              target::Arch arch) {
  if (s.pc != 0) return s;
  if (auto w = img.word(Addr(s.sp))) {
    s.pc = *w;
    if (arch == target::Arch::kAmd64)
      s.sp += 8;
    else
      s.lr = 0;
  }
  return s;
}

// A thread in a signal handler: the handler's frames lead up to runtime.sigtramp, whose CFA
// locates the kernel's signal frame and the registers it saved when the goroutine was
// interrupted. These are where the goroutine's own frames start.
Result<unwind::StartState> interrupted_context(const Process& p, const Unwinder& u,
                                               const GoroutineStack& s, Unwinder::Method method,
                                               size_t max_frames) {
  auto off = target::signal_frame_offsets(p.target().arch());
  if (!off)
    return Error(Errc::kUnsupported, "in a signal handler (not unwound on this architecture)");
  Unwound sig = u.unwind(s.thread_image, s.thread_start, method, max_frames);
  if (sig.stop != StopReason::kTopFrame || sig.frames.empty() ||
      sig.frames.back().function != "runtime.sigtramp")
    return Error(Errc::kBadFormat,
                 "in a signal handler whose frames do not lead to "
                 "runtime.sigtramp: " +
                     stop_text(sig));
  uint64_t cfa = sig.frames.back().fp;
  auto pc = s.thread_image.word(Addr(cfa + off->pc));
  auto sp = s.thread_image.word(Addr(cfa + off->sp));
  auto fp = s.thread_image.word(Addr(cfa + off->fp));
  if (!pc || !sp || !fp)
    return Error(Errc::kBadFormat, "in a signal handler: the signal frame at " + to_hex(cfa) +
                                       " is outside the gsignal stack copy");
  if (!s.image.contains(Addr(*sp), 0))
    return Error(Errc::kUnsupported, "interrupted by a signal at sp " + to_hex(*sp) +
                                         ", outside the goroutine's stack (on g0?)");
  return unwind::StartState{*pc, *sp, *fp, 0};
}

}  // namespace

GoroutineFrames unwind_goroutine(const Process& p, const GoroutineStack& s, const Unwinder& u,
                                 Unwinder::Method method, size_t max_frames) {
  GoroutineFrames f;
  if (!s.error.empty()) {
    f.error = s.error;
    return f;
  }
  f.start = s.start;
  f.trap = s.source == StackStart::kRegisters;
  if (s.source == StackStart::kG0) {
    f.g0 = u.unwind(s.thread_image, s.thread_start, method, max_frames);
    if (f.g0.stop != StopReason::kStackSwitch) {
      f.error = "g0 stack: " + stop_text(f.g0);
      return f;
    }
  } else if (s.source == StackStart::kSignal) {
    auto ctx = interrupted_context(p, u, s, method, max_frames);
    if (!ctx.ok()) {
      f.error = ctx.error().message();
      return f;
    }
    f.start = *ctx;
    f.trap = true;
  }
  f.start = fix_nil_pc(f.start, s.image, p.target().arch());
  f.own = u.unwind(s.image, f.start, method, max_frames);
  if (f.own.stop != StopReason::kTopFrame) f.error = stop_text(f.own);
  return f;
}

}  // namespace goref::runtime
