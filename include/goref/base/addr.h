// Addr: an address in the target's address space. It is a plain 64-bit value with checked
// arithmetic helpers; it never converts to or from a host pointer, so target memory can only be
// reached through a target::Memory read.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace goref {

class Addr {
 public:
  constexpr Addr() = default;
  constexpr explicit Addr(uint64_t v) : v_(v) {}
  // A host pointer is never a target address.
  template <class T>
  Addr(T*) = delete;

  [[nodiscard]] constexpr uint64_t value() const { return v_; }
  [[nodiscard]] constexpr bool is_null() const { return v_ == 0; }
  constexpr explicit operator bool() const { return v_ != 0; }

  [[nodiscard]] constexpr Addr operator+(uint64_t off) const { return Addr(v_ + off); }
  [[nodiscard]] constexpr Addr operator-(uint64_t off) const { return Addr(v_ - off); }
  // Distance between two addresses; the caller ensures *this >= o.
  [[nodiscard]] constexpr uint64_t operator-(Addr o) const { return v_ - o.v_; }
  constexpr Addr& operator+=(uint64_t off) {
    v_ += off;
    return *this;
  }
  constexpr auto operator<=>(const Addr&) const = default;

  // Alignment helpers; align must be a power of two.
  [[nodiscard]] constexpr Addr align_down(uint64_t align) const { return Addr(v_ & ~(align - 1)); }
  [[nodiscard]] constexpr Addr align_up(uint64_t align) const {
    return Addr((v_ + align - 1) & ~(align - 1));
  }

  // "0x4b6b5f"
  [[nodiscard]] std::string hex() const;

 private:
  uint64_t v_ = 0;
};

// A half-open range [start, end) of target addresses.
struct AddrRange {
  Addr start;
  Addr end;
  [[nodiscard]] constexpr uint64_t size() const { return end > start ? end - start : 0; }
  [[nodiscard]] constexpr bool contains(Addr a) const { return a >= start && a < end; }
  // True if [a, a+len) lies entirely inside the range (overflow-safe).
  [[nodiscard]] constexpr bool contains(Addr a, uint64_t len) const {
    return a >= start && a <= end && len <= end - a;
  }
  constexpr bool operator==(const AddrRange&) const = default;
};

std::string to_hex(uint64_t v);

}  // namespace goref

template <>
struct std::hash<goref::Addr> {
  size_t operator()(goref::Addr a) const noexcept { return std::hash<uint64_t>{}(a.value()); }
};
