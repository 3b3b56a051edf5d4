// Goroutine tracebacks as the runtime itself prints them (runtime/traceback.go: traceback1,
// traceback2, showframe, goroutineheader, printcreatedby, isSystemGoroutine), computed from a
// StackSnapshot: the physical frames from the unwinder, the logical frames with inlined calls
// expanded through the inline tree, which of them the runtime's default dump shows, where it
// elides the middle of a deep stack, the header's status and wait time, and who created the
// goroutine. Formatting is the caller's; names are as the runtime prints them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "goref/runtime/funcid.h"
#include "goref/runtime/process.h"
#include "goref/runtime/stack_snapshot.h"
#include "goref/unwind/unwinder.h"

namespace goref::runtime {

// runtime.tracebackInnerFrames / tracebackOuterFrames (the same in Go 1.21–1.27).
inline constexpr size_t kTracebackInnerFrames = 50;
inline constexpr size_t kTracebackOuterFrames = 50;

struct LogicalFrame {
  std::string function;      // as the runtime prints it: "main.f[...]", "panic" for runtime.gopanic
  std::string raw_function;  // the pclntab name
  std::string file;
  int line = 0;
  bool inlined = false;  // a call inlined into the next frame (printed as "(...)")
  std::string args;      // physical frames: the argument words as printArgs prints them
  uint64_t pc = 0;       // the physical frame's pc (a return address for callers)
  uint64_t entry = 0;    // the physical function's entry; "+0x" offsets are pc - entry
  uint64_t sp = 0, fp = 0;
  FuncId id = FuncId::kNormal;
  // The runtime's default dump shows this frame (after its rule that an all-hidden stack is
  // shown whole).
  bool shown = true;
};

struct CreatedBy {
  std::string function;  // printed form, of the physical function containing gopc
  std::string file;
  int line = 0;
  uint64_t pc = 0, entry = 0;
  uint64_t goroutine = 0;  // parentGoid; 0 when unknown (the runtime then omits it)
};

struct GoroutineTrace {
  const Goroutine* g = nullptr;  // into the snapshot
  std::string status;            // "chan receive", "running", …
  int64_t wait_minutes = 0;      // as goroutineheader computes it
  bool system = false;           // a runtime goroutine, hidden from the default dump
  StackStart source = StackStart::kSched;
  std::vector<LogicalFrame> frames;  // every logical frame, innermost first
  size_t shown_count = 0;
  std::optional<CreatedBy> created_by;
  // Non-empty when the frames are incomplete: why the walk stopped before a top frame.
  std::string error;
  // --verify: where the frame-pointer walk disagrees with the pcsp walk; empty if it agrees.
  std::string verify_mismatch;
  bool verify_skipped = false;  // no frame pointer to start the second walk from
};

struct TracebackOptions {
  unwind::Unwinder::Method method = unwind::Unwinder::Method::kCompiledPcsp;
  bool verify = false;  // also walk frame pointers and report the first difference
  size_t max_frames = 100000;
};

namespace detail {
class Symbolizer;
}

// Traces the goroutines of a snapshot one at a time, sharing symbolization between them. A
// caller that writes each trace and drops it holds one goroutine's frames at a time instead of
// all of them (100,000 goroutines 20 frames deep are about half a gigabyte of frames). The
// unwinder must be built for p's pclntab and load bias; p, snap and u must outlive the tracer,
// and snap its traces (GoroutineTrace::g points into it).
class GoroutineTracer {
 public:
  GoroutineTracer(const Process& p, const StackSnapshot& snap, const unwind::Unwinder& u,
                  const TracebackOptions& opts);
  ~GoroutineTracer();
  GoroutineTracer(const GoroutineTracer&) = delete;
  GoroutineTracer& operator=(const GoroutineTracer&) = delete;

  [[nodiscard]] size_t size() const;  // goroutines in the snapshot
  [[nodiscard]] GoroutineTrace trace(size_t i);

 private:
  const Process& p_;
  const StackSnapshot& snap_;
  const unwind::Unwinder& u_;
  TracebackOptions opts_;
  std::unique_ptr<detail::Symbolizer> sym_;
};

// Traces every goroutine of the snapshot (a GoroutineTracer run over all of them).
[[nodiscard]] std::vector<GoroutineTrace> trace_goroutines(const Process& p,
                                                           const StackSnapshot& snap,
                                                           const unwind::Unwinder& u,
                                                           const TracebackOptions& opts);

// funcNameForPrint: a generic function's shape arguments replaced by "[...]".
[[nodiscard]] std::string func_name_for_print(std::string_view name);

// The runtime's showfuncinfo at the default traceback level: whether a frame is shown.
[[nodiscard]] bool show_frame(std::string_view name, FuncId id, bool first_frame, FuncId callee);

}  // namespace goref::runtime
