// Parsing of /proc/PID/maps: one Mapping per line, in the kernel's (ascending, non-overlapping)
// order. The text is treated as untrusted input: a malformed line is an error naming the line,
// never a guess.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "goref/base/ids.h"
#include "goref/base/result.h"
#include "goref/target/target.h"

namespace goref::target {

// One /proc/PID/maps line with the fields Mapping does not carry.
struct ProcMapsEntry {
  Mapping mapping;      // path without the " (deleted)" suffix
  bool shared = false;  // 's' in the fourth permission column, 'p' (private) otherwise
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  // The backing file was unlinked after it was mapped (the kernel appends " (deleted)"). Only
  // recognised for file-backed lines (inode != 0), so "[anon: x (deleted)]" stays verbatim.
  bool deleted = false;
};

// Parses one line (without the trailing newline):
//   "7f12a000-7f12c000 r-xp 00002000 fe:00 247026    /usr/lib/my lib.so (deleted)"
// The path is everything after the padding that follows the inode, spaces included.
[[nodiscard]] Result<ProcMapsEntry> parse_proc_maps_line(std::string_view line);

// Parses a whole maps file. Lines must be in ascending, non-overlapping order, as the kernel
// writes them; an empty trailing line is allowed.
[[nodiscard]] Result<std::vector<ProcMapsEntry>> parse_proc_maps(std::string_view text);

// Reads and parses /proc/PID/maps. Errc::kNoSuchProcess if the process is gone.
[[nodiscard]] Result<std::vector<Mapping>> read_proc_maps(Pid pid);

}  // namespace goref::target
