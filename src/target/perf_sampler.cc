#include "goref/target/perf_sampler.h"

#include <linux/perf_event.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "goref/target/procfs.h"

namespace goref::target {
namespace {

// The CPUs the kernel has online ("0-3,6"), where the target's threads can run.
std::vector<int> online_cpus() {
  std::vector<int> out;
  std::ifstream in("/sys/devices/system/cpu/online");
  std::string text;
  if (std::getline(in, text)) {
    std::stringstream ss(text);
    for (std::string part; std::getline(ss, part, ',');) {
      int lo = 0, hi = 0;
      if (std::sscanf(part.c_str(), "%d-%d", &lo, &hi) == 2) {
        for (int c = lo; c <= hi && c < 4096; ++c) out.push_back(c);
      } else if (std::sscanf(part.c_str(), "%d", &lo) == 1) {
        out.push_back(lo);
      }
    }
  }
  if (out.empty())
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_CONF) && c < 4096; ++c) out.push_back(int(c));
  return out;
}

std::string paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  std::string v;
  return std::getline(in, v) ? v : "unknown";
}

Error open_error(int err, Pid pid) {
  std::string what = "perf_event_open for process " + pid.str() + ": " + std::strerror(err);
  switch (err) {
    case EACCES:
    case EPERM:
      return Error(Errc::kPermission,
                   what + ". /proc/sys/kernel/perf_event_paranoid is " + paranoid() +
                       "; sampling another process's user space needs it at 2 or lower and "
                       "ptrace access to the process (same user, or CAP_SYS_PTRACE), or "
                       "CAP_PERFMON. In a container, the seccomp profile may block "
                       "perf_event_open (Docker's default does): allow it, or run privileged");
    case ENOSYS:
      return Error(Errc::kUnsupported,
                   what +
                       ": the kernel or a seccomp filter does not offer perf_event_open. In a "
                       "container, allow it in the seccomp profile, or run privileged");
    case ENOENT:
    case ENODEV:
    case EOPNOTSUPP:
      return Error(Errc::kUnsupported, what + ": this kernel has no software CPU clock event");
    case EMFILE:
    case ENFILE:
      return Error(Errc::kIo, what +
                                  ": one event per thread and CPU is needed; raise the open "
                                  "file limit (ulimit -n)");
    default:
      return Error(Errc::kIo, what);
  }
}

// Go keeps frame pointers on amd64 and arm64, so the kernel's user call chains are Go's stacks.
perf_event_attr sample_attr(uint32_t hz) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_CPU_CLOCK;
  a.freq = 1;
  a.sample_freq = hz;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.exclude_callchain_kernel = 1;
  a.watermark = 1;
  a.wakeup_watermark = 64 << 10;
  return a;
}

}  // namespace

Result<std::unique_ptr<PerfSampler>> PerfSampler::start(Pid pid, uint32_t hz) {
  std::unique_ptr<PerfSampler> s(new PerfSampler(pid, hz));
  s->cpus_ = online_cpus();
  s->buffers_.resize(s->cpus_.size());
  GOREF_CHECK(s->add_new_threads());
  if (s->tids_.empty())
    return Error(Errc::kNoSuchProcess, "process " + pid.str() + " has no threads to sample");
  return s;
}

PerfSampler::~PerfSampler() {
  for (auto& b : buffers_)
    if (b.base) munmap(b.base, b.size + size_t(sysconf(_SC_PAGESIZE)));
  for (int fd : fds_) close(fd);
}

Result<void> PerfSampler::add_new_threads() {
  GOREF_TRY(auto tids, list_threads(pid_));
  for (Tid t : tids)
    if (!tids_.count(t)) GOREF_CHECK(open_thread(t));
  return {};
}

Result<void> PerfSampler::open_thread(Tid tid) {
  perf_event_attr a = sample_attr(hz_);
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  // 1 MiB per CPU on small machines; a quarter of that where there are many CPUs.
  const size_t data = (cpus_.size() <= 16 ? 256 : 64) * page;
  for (size_t i = 0; i < cpus_.size(); ++i) {
    int fd = int(syscall(SYS_perf_event_open, &a, tid.value(), cpus_[i], -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) {
      // The thread exited between the listing and now: nothing to sample.
      if (errno == ESRCH) return {};
      return open_error(errno, pid_);
    }
    fds_.push_back(fd);
    Buffer& b = buffers_[i];
    if (!b.base) {
      void* m = mmap(nullptr, page + data, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED)
        return Error(Errc::kIo, "mapping the perf ring buffer: " + std::string(strerror(errno)) +
                                    " (perf_event_mlock_kb may be too small)");
      b = {fd, m, data};
    } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, b.fd) != 0) {
      return Error(Errc::kIo,
                   "redirecting a perf event to its CPU's buffer: " + std::string(strerror(errno)));
    }
  }
  tids_.insert(tid);
  return {};
}

Result<bool> PerfSampler::poll(int timeout_ms, const Sink& sink) {
  std::vector<pollfd> pfds;
  for (const auto& b : buffers_)
    if (b.base) pfds.push_back({b.fd, POLLIN, 0});
  if (::poll(pfds.data(), pfds.size(), timeout_ms) < 0 && errno != EINTR)
    return Error(Errc::kIo, "poll: " + std::string(strerror(errno)));
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].base) drain(i, sink);
  auto more = add_new_threads();
  if (!more.ok()) {
    if (more.error().code() == Errc::kNoSuchProcess) return false;
    return more.error();
  }
  return true;
}

void PerfSampler::drain(size_t i, const Sink& sink) {
  Buffer& b = buffers_[i];
  auto* meta = static_cast<perf_event_mmap_page*>(b.base);
  const auto* data = static_cast<const unsigned char*>(b.base) + sysconf(_SC_PAGESIZE);
  uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  std::vector<unsigned char> rec;
  // Copies n bytes at ring offset `at`, which may wrap past the end of the data area.
  auto copy = [&](uint64_t at, size_t n, unsigned char* out) {
    size_t off = size_t(at % b.size);
    size_t first = std::min(n, b.size - off);
    std::memcpy(out, data + off, first);
    std::memcpy(out + first, data, n - first);
  };
  while (head - tail >= sizeof(perf_event_header)) {
    perf_event_header h;
    copy(tail, sizeof h, reinterpret_cast<unsigned char*>(&h));
    if (h.size < sizeof h || h.size > head - tail) break;  // never trust a length blindly
    rec.resize(h.size);
    copy(tail, h.size, rec.data());
    tail += h.size;
    auto u64 = [&](size_t off) {
      uint64_t v = 0;
      if (off + 8 <= rec.size()) std::memcpy(&v, rec.data() + off, 8);
      return v;
    };
    size_t off = sizeof h;
    if (h.type == PERF_RECORD_LOST) {
      lost_ += u64(off + 8);
    } else if (h.type == PERF_RECORD_THROTTLE) {
      ++throttled_;
    } else if (h.type == PERF_RECORD_SAMPLE) {
      // ip, pid/tid, period, callchain (nr, ips[nr]): the order of PERF_SAMPLE_* bits.
      uint64_t ip = u64(off);
      uint32_t tid = 0;
      if (off + 16 <= rec.size()) std::memcpy(&tid, rec.data() + off + 12, 4);
      uint64_t period = u64(off + 16);
      uint64_t nr = u64(off + 24);
      size_t ips = off + 32;
      if (nr > (rec.size() - std::min(rec.size(), ips)) / 8) continue;
      scratch_.clear();
      for (uint64_t k = 0; k < nr; ++k) {
        uint64_t pc = u64(ips + 8 * k);
        if (pc >= uint64_t(PERF_CONTEXT_MAX)) continue;  // context markers
        scratch_.push_back(pc);
      }
      if (scratch_.empty()) scratch_.push_back(ip);
      sink({Tid(pid_t(tid)), period, scratch_});
    }
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

}  // namespace goref::target
