// Parsing of the notes in an ELF core's PT_NOTE segment (Linux, 64-bit, little-endian): the note
// list itself, NT_PRSTATUS (thread id and the raw general-register block), NT_PRPSINFO (process
// id), NT_FILE (which file backs which address range) and NT_AUXV. Pure functions over byte spans
// holding untrusted data: every count and size is bounded by the bytes actually present.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "goref/base/addr.h"
#include "goref/base/bytes.h"
#include "goref/base/ids.h"
#include "goref/base/result.h"

namespace goref::target::notes {

// Note types (include/uapi/linux/elf.h). The type number alone is ambiguous across owners (GDB
// writes its own types), so a note is identified by owner name and type together.
inline constexpr uint32_t kNtPrstatus = 1;       // owner "CORE"
inline constexpr uint32_t kNtPrpsinfo = 3;       // owner "CORE"
inline constexpr uint32_t kNtAuxv = 6;           // owner "CORE"
inline constexpr uint32_t kNtFile = 0x46494c45;  // owner "CORE"
inline constexpr uint32_t kNtArmTls = 0x401;     // owner "LINUX"

// Auxiliary vector keys goref uses (include/uapi/linux/auxvec.h).
inline constexpr uint64_t kAtNull = 0;
inline constexpr uint64_t kAtPagesz = 6;
inline constexpr uint64_t kAtEntry = 9;

struct Note {
  std::string_view name;  // owner, without the terminating NUL
  uint32_t type = 0;
  Bytes desc;  // a view into the segment bytes
};

struct NoteList {
  std::vector<Note> notes;
  // Set when the segment ends inside a note (a header, name or descriptor running past the end):
  // the notes before it are kept, the rest is ignored.
  bool truncated = false;
};

// Splits a PT_NOTE segment into notes. Names and descriptors are padded to 4 bytes, as Linux and
// GDB write them for 64-bit cores.
[[nodiscard]] NoteList split_notes(Bytes segment);

// One NT_FILE entry: [start, end) of the target's address space is mapped from path at offset.
struct FileEntry {
  AddrRange range;
  uint64_t offset = 0;  // in bytes (the note stores it in pages)
  std::string path;     // as the target saw it (its mount namespace), not necessarily the host's
};

struct FileNote {
  uint64_t page_size = 0;
  std::vector<FileEntry> entries;
};

// NT_FILE: count, page size, count × (start, end, offset in pages), then count NUL-terminated
// paths. A count the descriptor cannot hold, an entry with end < start, a page size that is not a
// power of two or a missing path is an error (kBadFormat), never a partial read past the end.
[[nodiscard]] Result<FileNote> parse_file_note(Bytes desc);

// struct elf_prstatus on 64-bit Linux: pr_pid (the thread id) at 32 and pr_reg at 112; pr_reg's
// size depends on the architecture (see core_regs.h) and is passed in.
struct PrStatus {
  Tid tid{0};
  Bytes reg;  // the elf_gregset_t, gregset_size bytes
};
[[nodiscard]] Result<PrStatus> parse_prstatus(Bytes desc, size_t gregset_size);

// struct elf_prpsinfo on 64-bit Linux: pr_pid (the thread group id) at 24.
[[nodiscard]] std::optional<Pid> parse_prpsinfo_pid(Bytes desc);

// NT_AUXV: (key, value) pairs of 64-bit words up to AT_NULL or the end of the descriptor.
using Auxv = std::vector<std::pair<uint64_t, uint64_t>>;
[[nodiscard]] Auxv parse_auxv(Bytes desc);
[[nodiscard]] std::optional<uint64_t> auxv_lookup(const Auxv& auxv, uint64_t key);

}  // namespace goref::target::notes
