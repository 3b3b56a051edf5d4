// Which Go versions goref analyses, and how the executable sits in a target's address space.
// The supported range is one policy, stated once; commands check it before reading runtime data.
#pragma once

#include <cstdint>

#include "goref/base/result.h"
#include "goref/binary/build_info.h"
#include "goref/binary/elf_file.h"
#include "goref/target/target.h"

namespace goref::runtime {

inline constexpr int kMinGoMinor = 21;  // Go 1.21
inline constexpr int kMaxGoMinor = 27;  // Go 1.27

// Ok for Go 1.21 through 1.27; otherwise kUnsupported naming the version and the range.
[[nodiscard]] Result<void> check_supported(const binary::BuildInfo& bi);

// Load bias of the executable in the target: runtime address = link-time address + bias.
// 0 for a non-PIE executable. For PIE, AT_ENTRY from the auxiliary vector minus the ELF entry.
[[nodiscard]] Result<uint64_t> load_bias(const target::Target& t, const binary::ElfFile& exe);

}  // namespace goref::runtime
