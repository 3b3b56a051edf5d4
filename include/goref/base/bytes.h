// Bounds-checked decoding of little-endian integers and varints from host byte buffers that hold
// untrusted data (copies of target memory, file sections). Nothing here reads past a span.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

namespace goref {

using Bytes = std::span<const std::byte>;

inline Bytes as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Reads a trivially copyable T at byte offset off, or nullopt if it does not fit.
template <class T>
[[nodiscard]] std::optional<T> load(Bytes b, uint64_t off) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (off > b.size() || sizeof(T) > b.size() - off) return std::nullopt;
  T v;
  std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

// Unsigned LEB128 as Go's encoding/binary.Uvarint writes it. At most 10 bytes.
struct Varint {
  uint64_t value;
  size_t length;
};
[[nodiscard]] std::optional<Varint> read_uvarint(Bytes b, uint64_t off);

// A forward cursor over a byte span; every read is bounds-checked and a failed read leaves the
// cursor in a failed state (ok() == false) so a parser can check once at the end.
class ByteCursor {
 public:
  explicit ByteCursor(Bytes b, uint64_t off = 0) : b_(b), off_(off) {}
  template <class T>
  T get() {
    auto v = load<T>(b_, off_);
    if (!v) {
      ok_ = false;
      return T{};
    }
    off_ += sizeof(T);
    return *v;
  }
  uint64_t uvarint() {
    auto v = read_uvarint(b_, off_);
    if (!v) {
      ok_ = false;
      return 0;
    }
    off_ += v->length;
    return v->value;
  }
  // n bytes as a string_view into the span (empty and failed if out of range).
  std::string_view str(uint64_t n) {
    if (off_ > b_.size() || n > b_.size() - off_) {
      ok_ = false;
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(b_.data()) + off_, n);
    off_ += n;
    return s;
  }
  void skip(uint64_t n) {
    if (off_ > b_.size() || n > b_.size() - off_)
      ok_ = false;
    else
      off_ += n;
  }
  [[nodiscard]] uint64_t offset() const { return off_; }
  [[nodiscard]] uint64_t remaining() const { return off_ <= b_.size() ? b_.size() - off_ : 0; }
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  Bytes b_;
  uint64_t off_;
  bool ok_ = true;
};

// A NUL-terminated string starting at off, at most max_len bytes; nullopt if unterminated.
[[nodiscard]] std::optional<std::string_view> read_cstr(Bytes b, uint64_t off,
                                                        size_t max_len = 1 << 16);

}  // namespace goref
