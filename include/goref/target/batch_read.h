// Reading many small ranges of target memory with few system calls. Ranges are sorted by
// address; neighbours less than max_gap apart are read as one block of at most max_block bytes
// and cut out of it. Where a block cannot be read whole (an unmapped gap between two ranges),
// its ranges are read one by one, so one bad range never hides the others.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "goref/base/addr.h"
#include "goref/base/result.h"
#include "goref/target/memory.h"

namespace goref::target {

struct Range {
  Addr addr;
  uint64_t len = 0;
};

struct BatchReadStats {
  size_t reads = 0;  // read calls made
  uint64_t bytes = 0;
};

// out[i] holds range i's bytes, or the error of reading it alone. The caller bounds every len.
[[nodiscard]] std::vector<Result<std::vector<std::byte>>> read_ranges(
    Memory& mem, const std::vector<Range>& ranges, uint64_t max_gap, uint64_t max_block,
    BatchReadStats* stats = nullptr);

}  // namespace goref::target
