// Bound checks and nil checks in the machine code of one Go function, recognised by decoding the
// function from its entry (never backwards: x86 cannot be decoded backwards). A bound check is a
// compare followed by an unsigned conditional jump whose failing side leads, through padding and
// argument moves only, to a call of a bounds-panic function; a nil check is the explicit probing
// load the compiler emits when no memory access of its own faults on nil. The code is untrusted:
// undecodable bytes are skipped, never followed.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "goref/base/bytes.h"
#include "goref/base/result.h"
#include "goref/target/arch.h"

namespace goref::annotate {

enum class CheckKind : uint8_t { kBounds, kNil };

std::string_view check_kind_name(CheckKind k);  // "bounds" / "nil"

struct CheckSite {
  CheckKind kind = CheckKind::kBounds;
  uint64_t pc = 0;  // the compare (bounds) or the probe (nil)
  // The conditional jump (bounds; = pc for nil). Its source line is the check's own: a compare
  // may be shared with an earlier condition on the line before and rematerialised for the check.
  uint64_t branch = 0;
  // The bytes whose samples count as the check: alignment padding directly before the compare,
  // the compare and the conditional jump (bounds); the probe alone (nil).
  uint64_t begin = 0, end = 0;
};

// The runtime's bounds-panic entry points, by name; the union over Go 1.21–1.27: the per-kind
// stubs (runtime.panicIndex … runtime.panicSliceConvert, up to 1.25), runtime.panicBounds
// (1.26+), and the goPanic* functions some call sites reach directly.
[[nodiscard]] bool is_bounds_panic_function(std::string_view name);

struct FunctionChecks {
  std::vector<CheckSite> sites;  // in address order, disjoint
  // Calls of bounds-panic functions in the code, and how many of them are the failure side of
  // a recognised check: every call the compiler emits is, so a difference means a code shape
  // the recogniser does not know.
  uint32_t panic_calls = 0, panic_calls_reached = 0;
};

// Check sites in code (the bytes of one function, starting at link-time address addr).
// panic_entries: the entry addresses of the bounds-panic functions, sorted. kUnsupported for an
// architecture without a recogniser (arm64 for now).
[[nodiscard]] Result<FunctionChecks> find_check_sites(target::Arch arch, Bytes code, uint64_t addr,
                                                      std::span<const uint64_t> panic_entries);

namespace detail {
FunctionChecks find_check_sites_amd64(Bytes code, uint64_t addr,
                                      std::span<const uint64_t> panic_entries);
}

}  // namespace goref::annotate
