#include "goref/target/memory.h"

#include <string>

#include "goref/target/target.h"

namespace goref::target {

Result<void> Memory::read_exact(Addr addr, std::span<std::byte> buf) {
  if (buf.empty()) return {};
  if (addr.value() + buf.size() < addr.value())
    return Error(Errc::kUnmapped, "read at " + addr.hex() + ": range wraps the address space");
  auto n = read_some(addr, buf);
  if (!n) return std::move(n).error();
  if (*n < buf.size())
    return Error(Errc::kShortRead, "short read at " + addr.hex() + ": " + std::to_string(*n) +
                                       " of " + std::to_string(buf.size()) + " bytes");
  return {};
}

Result<std::vector<std::byte>> Memory::read_bytes(Addr addr, size_t n) {
  std::vector<std::byte> v(n);
  GOREF_CHECK(read_exact(addr, v));
  return v;
}

std::optional<uint64_t> Target::auxv(uint64_t) const {
  return std::nullopt;
}

const Mapping* Target::find_mapping(Addr addr) const {
  const auto& m = mappings();
  size_t lo = 0, hi = m.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m[mid].range.end <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < m.size() && m[lo].range.contains(addr)) return &m[lo];
  return nullptr;
}

}  // namespace goref::target
