// abi.FuncID: the small number the compiler stores in every _func (and inlinedCall) to mark the
// runtime functions tracebacks and the GC treat specially. The numbering is an iota list that
// gained entries over time, so a raw value means different functions in different Go versions;
// func_id() maps it to one enum for all supported versions.
#pragma once

#include <cstdint>
#include <string_view>

namespace goref::runtime {

enum class FuncId : uint8_t {
  kNormal,
  kAbort,
  kAsmcgocall,
  kAsyncPreempt,
  kCgocallback,
  kCorostart,  // Go 1.22+
  kDebugCallV2,
  kGcBgMarkWorker,
  kGoexit,
  kGogo,
  kGopanic,
  kHandleAsyncEvent,
  kMcall,
  kMorestack,
  kMstart,
  kPanicwrap,
  kRt0Go,
  kRunfinq,  // up to Go 1.24
  kRuntimeMain,
  kRunFinalizers,  // Go 1.25+ (runfinq renamed)
  kRunCleanups,    // Go 1.25+
  kSigpanic,
  kSystemstack,
  kSystemstackSwitch,
  kWrapper,  // compiler-generated code: method wrappers, hash and eq functions
  kUnknown,  // a value beyond the version's list (a corrupt table)
};

// The FuncId of raw value `raw` in a program built by Go 1.<go_minor> (21 … 27).
[[nodiscard]] FuncId func_id(uint8_t raw, int go_minor);

}  // namespace goref::runtime
