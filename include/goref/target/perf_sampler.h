// PerfSampler: samples the user-space call chains of every thread of a live process with
// perf_event_open — a software CPU clock per (thread, CPU), the kernel's frame-pointer call
// chains, one ring buffer per CPU. The target is never stopped or traced; its threads run on
// undisturbed but for the kernel's sampling interrupt. Threads started later are picked up by
// poll(), which rescans /proc/PID/task. Knows nothing about Go.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "goref/base/ids.h"
#include "goref/base/result.h"

namespace goref::target {

struct PerfSampleView {
  Tid tid{0};
  uint64_t period_ns = 0;  // CPU time this sample stands for
  // Leaf first: the interrupted pc, then return addresses, user space only.
  std::span<const uint64_t> pcs;
};

class PerfSampler {
 public:
  using Sink = std::function<void(const PerfSampleView&)>;

  // Opens and enables the events. Errors name the cause: kPermission with the
  // perf_event_paranoid value or seccomp, kNoSuchProcess, kUnsupported (no perf events).
  [[nodiscard]] static Result<std::unique_ptr<PerfSampler>> start(Pid pid, uint32_t hz);
  ~PerfSampler();
  PerfSampler(const PerfSampler&) = delete;
  PerfSampler& operator=(const PerfSampler&) = delete;

  // Waits up to timeout_ms for data, hands every sample to sink, and opens events for threads
  // that appeared since. Returns false once the process is gone (after the last samples).
  [[nodiscard]] Result<bool> poll(int timeout_ms, const Sink& sink);

  [[nodiscard]] size_t threads() const { return tids_.size(); }
  [[nodiscard]] uint64_t lost() const { return lost_; }
  [[nodiscard]] uint64_t throttled() const { return throttled_; }

 private:
  explicit PerfSampler(Pid pid, uint32_t hz) : pid_(pid), hz_(hz) {}
  [[nodiscard]] Result<void> open_buffers();
  [[nodiscard]] Result<void> add_new_threads();
  [[nodiscard]] Result<void> open_thread(Tid tid);
  void drain(size_t cpu, const Sink& sink);

  Pid pid_;
  uint32_t hz_;
  struct Buffer {
    int fd = -1;  // the event that owns the ring buffer (of the first thread on this CPU)
    void* base = nullptr;
    size_t size = 0;  // data area bytes (a power of two)
  };
  std::vector<int> cpus_;
  std::vector<Buffer> buffers_;  // per entry of cpus_
  std::vector<int> fds_;         // every event
  std::set<Tid> tids_;
  std::vector<uint64_t> scratch_;
  uint64_t lost_ = 0, throttled_ = 0;
};

}  // namespace goref::target
