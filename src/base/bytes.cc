#include "goref/base/bytes.h"

namespace goref {

std::optional<Varint> read_uvarint(Bytes b, uint64_t off) {
  uint64_t v = 0;
  unsigned shift = 0;
  for (size_t i = 0; i < 10; ++i) {
    if (off + i >= b.size()) return std::nullopt;
    auto byte = static_cast<uint8_t>(b[off + i]);
    if (i == 9 && byte > 1) return std::nullopt;  // overflows 64 bits
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return Varint{v, i + 1};
    shift += 7;
  }
  return std::nullopt;
}

std::optional<std::string_view> read_cstr(Bytes b, uint64_t off, size_t max_len) {
  if (off >= b.size()) return std::nullopt;
  size_t n = std::min<size_t>(max_len, b.size() - off);
  const char* p = reinterpret_cast<const char*>(b.data()) + off;
  const void* nul = std::memchr(p, 0, n);
  if (!nul) return std::nullopt;
  return std::string_view(p, static_cast<const char*>(nul) - p);
}

}  // namespace goref
