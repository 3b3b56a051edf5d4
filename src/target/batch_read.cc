#include "goref/target/batch_read.h"

#include <algorithm>
#include <numeric>

namespace goref::target {

std::vector<Result<std::vector<std::byte>>> read_ranges(Memory& mem,
                                                        const std::vector<Range>& ranges,
                                                        uint64_t max_gap, uint64_t max_block,
                                                        BatchReadStats* stats) {
  BatchReadStats local;
  BatchReadStats& st = stats ? *stats : local;
  std::vector<size_t> order(ranges.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return ranges[a].addr < ranges[b].addr; });
  std::vector<Result<std::vector<std::byte>>> out(ranges.size(), std::vector<std::byte>{});
  std::vector<std::byte> block;
  for (size_t i = 0; i < order.size();) {
    const Range& first = ranges[order[i]];
    uint64_t start = first.addr.value();
    uint64_t end = start + first.len;
    size_t j = i + 1;
    while (j < order.size()) {
      const Range& r = ranges[order[j]];
      uint64_t r_end = r.addr.value() + r.len;
      uint64_t new_end = std::max(end, r_end);
      if (r.addr.value() > end + max_gap || new_end - start > max_block) break;
      end = new_end;
      ++j;
    }
    Result<size_t> got = size_t{0};
    if (j - i > 1) {
      block.resize(end - start);
      got = mem.read_some(Addr(start), block);
      ++st.reads;
    }
    for (size_t k = i; k < j; ++k) {
      const Range& r = ranges[order[k]];
      uint64_t off = r.addr.value() - start;
      if (j - i > 1 && got.ok() && off + r.len <= *got) {
        auto* p = block.data() + off;
        out[order[k]] = std::vector<std::byte>(p, p + r.len);
      } else {
        out[order[k]] = mem.read_bytes(r.addr, r.len);
        ++st.reads;
      }
      if (out[order[k]].ok()) st.bytes += r.len;
    }
    i = j;
  }
  return out;
}

}  // namespace goref::target
