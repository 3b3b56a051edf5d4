// CfiUnwinder: the same physical frames as Unwinder, computed from the executable's DWARF call
// frame information (.debug_frame, which the Go linker derives from pcsp) through libdw. It
// exists to cross-check the pcsp unwinder and to compare speed; it stops where Unwinder stops
// (top frames, stack switches, SPWrite functions, from the pclntab) and takes only the CFA and
// the return address from the CFI. amd64 only. Not safe for concurrent use.
#pragma once

#include <memory>
#include <string>

#include "goref/base/result.h"
#include "goref/binary/pclntab.h"
#include "goref/target/arch.h"
#include "goref/unwind/unwinder.h"

namespace goref::unwind {

class CfiUnwinder {
 public:
  // Opens exe's .debug_frame. Errc::kNoDwarf when the executable has none (built with -w or
  // stripped), kUnsupported for an architecture other than amd64. tab must outlive the result.
  [[nodiscard]] static Result<std::unique_ptr<CfiUnwinder>> open(const std::string& exe,
                                                                 const binary::Pclntab& tab,
                                                                 uint64_t load_bias,
                                                                 target::Arch arch);
  ~CfiUnwinder();
  CfiUnwinder(const CfiUnwinder&) = delete;
  CfiUnwinder& operator=(const CfiUnwinder&) = delete;

  [[nodiscard]] Unwound unwind(const StackImage& stack, StartState start,
                               size_t max_frames = 10000) const;

 private:
  struct Impl;
  explicit CfiUnwinder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace goref::unwind
