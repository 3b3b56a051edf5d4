#include "goref/binary/pcvalue.h"

namespace goref::binary {

bool PcValueDecoder::next(PcValueRun& run) {
  if (done_) return false;
  if (pc_ >= limit_) {
    done_ = true;
    return false;
  }
  // The runtime treats a zero value delta as the end marker except on the first step, which it
  // recognises by pc == entry (runtime.step's `first`); the same rule is kept here.
  bool first = pc_ == entry_;
  auto uv = read_uvarint(tab_, off_);
  if (!uv) {
    // Running off the data without an end marker is malformed, but the runs decoded so far are
    // what the runtime would have used.
    done_ = corrupt_ = true;
    return false;
  }
  if (uv->value == 0 && !first) {
    done_ = true;
    return false;
  }
  auto pcd = read_uvarint(tab_, off_ + uv->length);
  if (!pcd || uv->value > UINT32_MAX || pcd->value > UINT32_MAX) {
    done_ = corrupt_ = true;
    return false;
  }
  off_ += uv->length + pcd->length;
  auto u = static_cast<uint32_t>(uv->value);
  // Zigzag, in unsigned arithmetic so that a corrupt table cannot cause signed overflow.
  val_ += (0u - (u & 1)) ^ (u >> 1);
  uint64_t start = pc_;
  pc_ += pcd->value * quantum_;
  run = PcValueRun{start, pc_, static_cast<int32_t>(val_)};
  return true;
}

std::optional<int32_t> pcvalue(Bytes pctab, uint64_t off, uint64_t entry, uint64_t targetpc,
                               uint32_t quantum, uint64_t limit) {
  if (targetpc < entry || targetpc >= limit) return std::nullopt;
  PcValueDecoder d(pctab, off, entry, quantum, limit);
  PcValueRun run;
  while (d.next(run))
    if (targetpc < run.end) return run.value;
  return std::nullopt;
}

}  // namespace goref::binary
