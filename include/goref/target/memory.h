// target::Memory: read-only access to a target's address space. There is deliberately no write
// operation anywhere in the target layer: goref never modifies the memory of the program it
// inspects, and a backend cannot be asked to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "goref/base/addr.h"
#include "goref/base/result.h"

namespace goref::target {

class Memory {
 public:
  virtual ~Memory() = default;

  // Copies target memory starting at addr into buf. Returns how many bytes, counted from addr,
  // were readable (possibly fewer than buf.size(): a read stops at the first unreadable byte).
  // Returns an error only when not even the first byte could be read.
  [[nodiscard]] virtual Result<size_t> read_some(Addr addr, std::span<std::byte> buf) = 0;

  // The whole of buf, or an error naming the address ("short read at 0x…: 100 of 4096 bytes").
  [[nodiscard]] Result<void> read_exact(Addr addr, std::span<std::byte> buf);

  // One trivially copyable value.
  template <class T>
  [[nodiscard]] Result<T> read(Addr addr) {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    GOREF_CHECK(read_exact(addr, std::as_writable_bytes(std::span<T, 1>(&v, 1))));
    return v;
  }

  // n bytes into a new vector. n is the caller's responsibility: bound it before calling when it
  // comes from target data.
  [[nodiscard]] Result<std::vector<std::byte>> read_bytes(Addr addr, size_t n);

  // A pointer-sized word (pointer size is 8 on every supported architecture).
  [[nodiscard]] Result<uint64_t> read_word(Addr addr) { return read<uint64_t>(addr); }

  // There is no write. Declared deleted so an attempt reads as intent, not as a missing overload.
  void write(Addr, std::span<const std::byte>) = delete;
};

}  // namespace goref::target
