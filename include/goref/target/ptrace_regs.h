// Reading a ptrace-stopped thread's registers into the arch-neutral target::Registers. The
// implementation is per host architecture (regs_amd64.cc, regs_arm64.cc); this is the only
// place the kernel's register structures are known.
#pragma once

#include "goref/base/ids.h"
#include "goref/base/result.h"
#include "goref/target/arch.h"

namespace goref::target {

// The registers of tid, which the calling thread must have seized and stopped.
// Errc::kNoSuchProcess if the thread is gone.
[[nodiscard]] Result<Registers> ptrace_registers(Tid tid);

}  // namespace goref::target
