#include "goref/runtime/funcid.h"

#include <array>
#include <span>

namespace goref::runtime {
namespace {

using F = FuncId;

// internal/abi/symtab.go's iota lists, in order. Go 1.22 inserted corostart after cgocallback;
// Go 1.25 replaced runfinq with runFinalizers and runCleanups after runtime_main.
constexpr std::array kGo121 = {F::kNormal,
                               F::kAbort,
                               F::kAsmcgocall,
                               F::kAsyncPreempt,
                               F::kCgocallback,
                               F::kDebugCallV2,
                               F::kGcBgMarkWorker,
                               F::kGoexit,
                               F::kGogo,
                               F::kGopanic,
                               F::kHandleAsyncEvent,
                               F::kMcall,
                               F::kMorestack,
                               F::kMstart,
                               F::kPanicwrap,
                               F::kRt0Go,
                               F::kRunfinq,
                               F::kRuntimeMain,
                               F::kSigpanic,
                               F::kSystemstack,
                               F::kSystemstackSwitch,
                               F::kWrapper};
constexpr std::array kGo122 = {F::kNormal,      F::kAbort,
                               F::kAsmcgocall,  F::kAsyncPreempt,
                               F::kCgocallback, F::kCorostart,
                               F::kDebugCallV2, F::kGcBgMarkWorker,
                               F::kGoexit,      F::kGogo,
                               F::kGopanic,     F::kHandleAsyncEvent,
                               F::kMcall,       F::kMorestack,
                               F::kMstart,      F::kPanicwrap,
                               F::kRt0Go,       F::kRunfinq,
                               F::kRuntimeMain, F::kSigpanic,
                               F::kSystemstack, F::kSystemstackSwitch,
                               F::kWrapper};
constexpr std::array kGo125 = {F::kNormal,
                               F::kAbort,
                               F::kAsmcgocall,
                               F::kAsyncPreempt,
                               F::kCgocallback,
                               F::kCorostart,
                               F::kDebugCallV2,
                               F::kGcBgMarkWorker,
                               F::kGoexit,
                               F::kGogo,
                               F::kGopanic,
                               F::kHandleAsyncEvent,
                               F::kMcall,
                               F::kMorestack,
                               F::kMstart,
                               F::kPanicwrap,
                               F::kRt0Go,
                               F::kRuntimeMain,
                               F::kRunFinalizers,
                               F::kRunCleanups,
                               F::kSigpanic,
                               F::kSystemstack,
                               F::kSystemstackSwitch,
                               F::kWrapper};

}  // namespace

FuncId func_id(uint8_t raw, int go_minor) {
  std::span<const FuncId> list = go_minor <= 21   ? std::span<const FuncId>(kGo121)
                                 : go_minor <= 24 ? std::span<const FuncId>(kGo122)
                                                  : std::span<const FuncId>(kGo125);
  return raw < list.size() ? list[raw] : FuncId::kUnknown;
}

}  // namespace goref::runtime
