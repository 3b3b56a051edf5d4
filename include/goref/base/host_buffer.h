// HostBuffer: a large, page-aligned block of host memory for copies of target memory (the heap
// snapshot). It is mapped with transparent huge pages requested, because first-touch page faults
// on 4 KiB pages, not the copy itself, dominate the time to copy a large heap, and that time is
// the target's pause. Move-only; unmapped on destruction.
#pragma once

#include <cstddef>
#include <utility>

#include "goref/base/result.h"

namespace goref {

class HostBuffer {
 public:
  // n bytes (rounded up to a whole page), not zero-filled by us (the kernel gives zero pages).
  [[nodiscard]] static Result<HostBuffer> allocate(size_t n);
  HostBuffer() = default;
  HostBuffer(HostBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();

  // Gives the pages after the first `keep` bytes back to the kernel (they read as zero after).
  void release_tail(size_t keep);

  [[nodiscard]] std::byte* data() const { return p_; }
  [[nodiscard]] size_t size() const { return n_; }

 private:
  std::byte* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace goref
