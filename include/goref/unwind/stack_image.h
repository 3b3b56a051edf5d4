// StackImage: a host copy of one goroutine (or g0) stack, [lo, lo + bytes.size()), taken by the
// caller in one target read, so unwinding never goes back to the target. StartState: the
// registers unwinding starts from. All reads of the image are bounds-checked; an address outside
// the copy yields nullopt, never a host pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "goref/base/addr.h"

namespace goref::unwind {

struct StackImage {
  Addr lo;
  std::vector<std::byte> bytes;

  [[nodiscard]] Addr hi() const { return lo + bytes.size(); }
  // True if [a, a+len) lies inside the copy (overflow-safe).
  [[nodiscard]] bool contains(Addr a, uint64_t len) const {
    return a >= lo && a - lo <= bytes.size() && len <= bytes.size() - (a - lo);
  }
  // The little-endian 64-bit word at a, or nullopt when any byte of it is outside the copy.
  [[nodiscard]] std::optional<uint64_t> word(Addr a) const {
    if (!contains(a, 8)) return std::nullopt;
    uint64_t v;
    std::memcpy(&v, bytes.data() + (a - lo), sizeof v);
    return v;
  }
};

// Where unwinding starts, as runtime addresses. lr is used only on link-register architectures
// (arm64) and is 0 on amd64; fp (rbp / x29) only by the frame-pointer method.
struct StartState {
  uint64_t pc = 0, sp = 0, fp = 0, lr = 0;
};

}  // namespace goref::unwind
