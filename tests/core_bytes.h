// Little helpers to build ELF note and core bytes by hand in unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "goref/base/bytes.h"

namespace goref::testing_core {

class Buf {
 public:
  Buf& u32(uint32_t v) { return raw(&v, 4); }
  Buf& u64(uint64_t v) { return raw(&v, 8); }
  Buf& i32(int32_t v) { return raw(&v, 4); }
  Buf& str(std::string_view s) {  // with its NUL
    raw(s.data(), s.size());
    b_.push_back(std::byte{0});
    return *this;
  }
  Buf& zeros(size_t n) {
    b_.resize(b_.size() + n);
    return *this;
  }
  Buf& fill(size_t n, char c) {
    b_.insert(b_.end(), n, std::byte(c));
    return *this;
  }
  Buf& pad4() { return zeros((4 - b_.size() % 4) % 4); }
  Buf& bytes(Bytes b) {
    b_.insert(b_.end(), b.begin(), b.end());
    return *this;
  }
  [[nodiscard]] size_t size() const { return b_.size(); }
  [[nodiscard]] Bytes span() const { return b_; }
  std::vector<std::byte>& vec() { return b_; }

 private:
  Buf& raw(const void* p, size_t n) {
    auto* c = static_cast<const std::byte*>(p);
    b_.insert(b_.end(), c, c + n);
    return *this;
  }
  std::vector<std::byte> b_;
};

// One note as Linux writes it: header, name with NUL padded to 4, descriptor padded to 4.
inline void add_note(Buf& seg, std::string_view name, uint32_t type, Bytes desc) {
  seg.u32(static_cast<uint32_t>(name.size() + 1)).u32(static_cast<uint32_t>(desc.size())).u32(type);
  seg.str(name).pad4().bytes(desc).pad4();
}

}  // namespace goref::testing_core
