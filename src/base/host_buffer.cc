#include "goref/base/host_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace goref {

namespace {
constexpr size_t kHugePage = 2 << 20;
}

Result<HostBuffer> HostBuffer::allocate(size_t n) {
  if (n == 0) return HostBuffer();
  size_t len = (n + kHugePage - 1) / kHugePage * kHugePage;
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return Error(Errc::kIo, "cannot map " + std::to_string(len >> 20) +
                                " MiB of host memory for the copy: " + std::strerror(errno));
  // Advisory: where THP is off this is a no-op and the copy is only slower.
  (void)::madvise(p, len, MADV_HUGEPAGE);
  HostBuffer b;
  b.p_ = static_cast<std::byte*>(p);
  b.n_ = len;
  return b;
}

void HostBuffer::release_tail(size_t keep) {
  size_t from = (keep + 4095) / 4096 * 4096;
  if (p_ != nullptr && from < n_) (void)::madvise(p_ + from, n_ - from, MADV_DONTNEED);
}

HostBuffer::~HostBuffer() {
  if (p_ != nullptr) ::munmap(p_, n_);
}

}  // namespace goref
