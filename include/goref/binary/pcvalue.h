// Decoding of Go's pcvalue tables (pcsp, pcfile, pcln, pcdata): a sequence of (value delta,
// pc delta) varint pairs that maps pc ranges of one function to int32 values, as the runtime's
// pcvalue/step read them. The table bytes are untrusted: decoding stops at the end of the data,
// at a malformed varint, or once the pc passes the function's end; it never loops forever.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "goref/base/bytes.h"

namespace goref::binary {

// The value holds for pcs in [start, end).
struct PcValueRun {
  uint64_t start = 0, end = 0;
  int32_t value = 0;
};

class PcValueDecoder {
 public:
  // pctab: the pctab bytes; off: the table's offset in them (a _func's pcsp, pcfile, pcln or
  // pcdata entry); entry: the function's entry pc; quantum: the pc step (pcHeader.minLC: 1 on
  // amd64, 4 on arm64); limit: the function's end (runs starting there are not decoded).
  PcValueDecoder(Bytes pctab, uint64_t off, uint64_t entry, uint32_t quantum,
                 uint64_t limit = std::numeric_limits<uint64_t>::max())
      : tab_(pctab), off_(off), pc_(entry), entry_(entry), quantum_(quantum), limit_(limit) {}

  // Decodes the next run. False at the end marker, at the end of the data, on malformed data
  // (then corrupt() is true) or when the next run would start at or past limit.
  [[nodiscard]] bool next(PcValueRun& run);
  [[nodiscard]] bool corrupt() const { return corrupt_; }

 private:
  Bytes tab_;
  uint64_t off_;
  uint64_t pc_, entry_;
  uint32_t quantum_;
  uint64_t limit_;
  uint32_t val_ = static_cast<uint32_t>(-1);  // the runtime starts at -1
  bool done_ = false, corrupt_ = false;
};

// The value at targetpc, or nullopt when targetpc is before entry, at or past limit, past the
// end of the table, or the table is malformed.
[[nodiscard]] std::optional<int32_t> pcvalue(Bytes pctab, uint64_t off, uint64_t entry,
                                             uint64_t targetpc, uint32_t quantum,
                                             uint64_t limit = std::numeric_limits<uint64_t>::max());

}  // namespace goref::binary
