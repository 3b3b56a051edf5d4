// target::Target: a process to inspect — live (ptrace), a core file, or a fake for tests.
// It exposes memory, the memory map, the threads and their registers, and the executable.
// It knows nothing about Go.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "goref/base/addr.h"
#include "goref/base/ids.h"
#include "goref/base/result.h"
#include "goref/target/arch.h"
#include "goref/target/memory.h"

namespace goref::target {

// One mapping of the target's address space, as in /proc/PID/maps or a core's NT_FILE note.
struct Mapping {
  AddrRange range;
  bool read = false;
  bool write = false;
  bool exec = false;
  uint64_t offset = 0;  // offset in the backing file
  std::string path;     // backing file, "[stack]", "[vdso]", or empty for anonymous memory
};

enum class Kind { kLive, kCore, kFake };

class Target : public Memory {
 public:
  [[nodiscard]] virtual Kind kind() const = 0;
  [[nodiscard]] virtual Arch arch() const = 0;
  // The process id (for a core, the one recorded in it).
  [[nodiscard]] virtual Pid pid() const = 0;
  // Mappings sorted by start address, not overlapping.
  [[nodiscard]] virtual const std::vector<Mapping>& mappings() const = 0;
  // Threads, the thread-group leader first.
  [[nodiscard]] virtual std::vector<Tid> threads() const = 0;
  [[nodiscard]] virtual Result<Registers> registers(Tid tid) const = 0;
  // A path at which goref can open the target's executable (/proc/PID/exe for a live process,
  // which works across mount namespaces).
  [[nodiscard]] virtual std::string executable_path() const = 0;

  // A value from the process's ELF auxiliary vector (AT_ENTRY, AT_PHDR, ...): /proc/PID/auxv for
  // a live process, NT_AUXV for a core. It is how the executable's load address is found without
  // trusting paths, which differ across mount namespaces.
  [[nodiscard]] virtual std::optional<uint64_t> auxv(uint64_t type) const;

  // True once a memory read found the process gone (a live process that exited or was killed
  // while goref read it): every read since then failed, so what was read is incomplete.
  [[nodiscard]] virtual bool exited() const { return false; }

  // The mapping containing addr, if any.
  [[nodiscard]] const Mapping* find_mapping(Addr addr) const;
};

}  // namespace goref::target
