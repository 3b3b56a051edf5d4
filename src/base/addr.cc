#include "goref/base/addr.h"

#include <cstdio>

namespace goref {

std::string to_hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Addr::hex() const {
  return to_hex(v_);
}

}  // namespace goref
