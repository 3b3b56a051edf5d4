#include "goref/runtime/support.h"

#include <elf.h>

#include <string>

namespace goref::runtime {

Result<void> check_supported(const binary::BuildInfo& bi) {
  if (bi.major == 1 && bi.minor >= kMinGoMinor && bi.minor <= kMaxGoMinor) return {};
  return Error(Errc::kUnsupported, bi.raw_version + " is not supported: goref supports Go 1." +
                                       std::to_string(kMinGoMinor) + " through Go 1." +
                                       std::to_string(kMaxGoMinor));
}

Result<uint64_t> load_bias(const target::Target& t, const binary::ElfFile& exe) {
  if (!exe.is_pie()) return uint64_t{0};
  auto entry = t.auxv(AT_ENTRY);
  if (!entry)
    return Error(Errc::kNotFound,
                 "cannot locate the PIE executable in the target: no AT_ENTRY in its auxiliary "
                 "vector");
  // Both the ELF entry and AT_ENTRY point at the same instruction; bias is their difference.
  return *entry - exe.entry();
}

}  // namespace goref::runtime
