// The kernel's elf_gregset_t (NT_PRSTATUS pr_reg) per architecture: user_regs_struct on amd64,
// user_pt_regs on arm64. Decoded from bytes, so a core from either architecture can be read on
// any host. This is the only place that knows those layouts.
#pragma once

#include <cstddef>

#include "goref/base/bytes.h"
#include "goref/base/result.h"
#include "goref/target/arch.h"

namespace goref::target {

// Size in bytes of pr_reg for arch.
[[nodiscard]] size_t gregset_size(Arch arch);

// Registers from a pr_reg block of gregset_size(arch) bytes. On amd64 tls_base is fs_base (part of
// user_regs_struct); on arm64 it is left 0 (tpidr_el0 is in the separate NT_ARM_TLS note).
[[nodiscard]] Result<Registers> registers_from_gregset(Arch arch, Bytes reg);

}  // namespace goref::target
