// Unwinder: the physical frames of one stack from a copy of its memory (StackImage), as the Go
// runtime's unwinder (runtime/traceback.go, unwinder.resolveInternal/next) computes them: the
// caller's sp (the frame's CFA) is sp + pcsp(pc) (+ the return address slot on amd64), the
// return address is read from the copy, and the caller's sp is the CFA. The walk never leaves
// the copy, never repeats a frame (sp strictly increases), is bounded by max_frames, and stops
// with a reason: a top frame (goexit, mstart, rt0_go), a stack switch (systemstack, morestack,
// mcall: the runtime layer continues on the other stack), or a corrupt or unknown frame.
//
// Three methods compute the same frames: the compiled pcsp table (CompiledPcsp, the default),
// a pcvalue decode per lookup, and frame pointers (Go keeps them on amd64 and arm64). Symbolizing
// and inline expansion are the caller's (Pclntab::symbolize at Unwound::sym_pc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "goref/binary/pclntab.h"
#include "goref/target/arch.h"
#include "goref/unwind/compiled_pcsp.h"
#include "goref/unwind/stack_image.h"

namespace goref::unwind {

enum class StopReason {
  kTopFrame,      // a function with FuncFlag TopFrame: goexit, mstart, rt0_go
  kStackSwitch,   // runtime.systemstack / runtime.morestack / runtime.mcall: the caller's frames
                  // are on another stack (the last frame's fp is 0)
  kNoFunc,        // a pc in no Go function (no frame is added for it)
  kNoPcsp,        // a function without a pcsp table (external code; its fp is 0)
  kSpWrite,       // a non-innermost function that writes SP (FuncFlag SPWrite)
  kOutsideStack,  // sp, fp or a slot to read is outside the image
  kDepthLimit,    // max_frames frames
  kBadFrame,      // corrupt: no pcsp entry at pc, negative or huge SP delta, return address 0,
                  // sp not increasing, a frame-pointer chain going down
};
[[nodiscard]] std::string_view stop_reason_name(StopReason r);

struct PhysFrame {
  uint64_t pc = 0;     // innermost: where it is; callers: the return address
  uint64_t sp = 0;     // the frame's sp
  uint64_t fp = 0;     // the frame's CFA = the caller's sp (amd64: sp + pcsp + 8); 0 if unknown
  uint64_t entry = 0;  // function entry (runtime address)
  std::string_view function;  // name from the pclntab; valid while the Pclntab lives
  // The callee was an injected call (sigpanic, asyncPreempt, debugCallV2): pc is where the
  // frame stopped, not a return address, so it is symbolized as is.
  bool injected_call_below = false;
};

struct Unwound {
  std::vector<PhysFrame> frames;  // innermost first
  StopReason stop = StopReason::kBadFrame;
  std::string detail;  // for stops other than kTopFrame: what was found where

  // The pc to symbolize frame i at, as the runtime's symPC: a return address minus 1 (inside
  // the call), except for the innermost frame, after an injected call, or at a function entry.
  [[nodiscard]] uint64_t sym_pc(size_t i) const;
};

class Unwinder {
 public:
  // tab: the executable's pclntab (link-time addresses); load_bias: runtime minus link-time
  // address (0 unless PIE). Builds the compiled pcsp table for every function; tab must
  // outlive the Unwinder.
  Unwinder(const binary::Pclntab& tab, uint64_t load_bias, target::Arch arch);

  enum class Method {
    kCompiledPcsp,  // SP deltas from the CompiledPcsp
    kDecodePcsp,    // SP deltas by a pcvalue decode per lookup (Func::pcsp_at)
    // Callers from the frame-pointer chain ([fp] = caller's fp, [fp+8] = return address). The
    // innermost frame may be in a prologue or frameless, so its CFA comes from pcsp; amd64 only.
    kFramePointer,
  };

  [[nodiscard]] Unwound unwind(const StackImage& stack, StartState start,
                               Method m = Method::kCompiledPcsp, size_t max_frames = 10000) const;

  [[nodiscard]] const CompiledPcsp* compiled() const { return compiled_.get(); }
  [[nodiscard]] const binary::Pclntab& pclntab() const { return *tab_; }
  [[nodiscard]] uint64_t load_bias() const { return bias_; }

  // How the walk treats a function, decided once per function from its name.
  enum class Special : uint8_t { kNone, kStackSwitch, kInjected, kCgocallback };

 private:
  [[nodiscard]] std::optional<int32_t> sp_delta(const binary::Func& f, uint64_t link_pc,
                                                Method m) const;
  [[nodiscard]] Unwound unwind_pcsp(const StackImage& stack, StartState start, Method m,
                                    size_t max_frames) const;
  [[nodiscard]] Unwound unwind_fp(const StackImage& stack, StartState start,
                                  size_t max_frames) const;

  const binary::Pclntab* tab_;
  uint64_t bias_;
  target::Arch arch_;
  std::unique_ptr<CompiledPcsp> compiled_;  // null if the pctab could not be read
  std::vector<Special> special_;            // by function index
};

// --verify: the first frame where two unwinds differ (pc, sp, fp or function), or a difference
// in frame count or stop reason.
struct Mismatch {
  size_t index = 0;
  std::string what;
};
[[nodiscard]] std::optional<Mismatch> compare(const Unwound& a, const Unwound& b);

}  // namespace goref::unwind
