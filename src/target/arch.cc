#include "goref/target/arch.h"

namespace goref::target {

std::string_view arch_name(Arch a) {
  switch (a) {
    case Arch::kAmd64:
      return "amd64";
    case Arch::kArm64:
      return "arm64";
  }
  return "unknown";
}

Arch host_arch() {
#if defined(__x86_64__)
  return Arch::kAmd64;
#elif defined(__aarch64__)
  return Arch::kArm64;
#else
#error "goref supports amd64 and arm64 hosts"
#endif
}

}  // namespace goref::target
