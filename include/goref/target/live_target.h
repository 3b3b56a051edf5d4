// LiveTarget: a running process on this machine. attach() stops every thread with ptrace (see
// ThreadStopper) so memory, mappings and registers form one consistent snapshot; the threads run
// on when the LiveTarget is destroyed or detach() is called. Memory is read with
// process_vm_readv in large blocks, falling back to /proc/PID/mem (opened read-only) where that
// fails; nothing is ever written to the target.
//
// ptrace requests must come from the thread that seized the tracee: attach, registers, detach
// and destruction happen on one thread. Memory reads (read_some) are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "goref/base/ids.h"
#include "goref/base/result.h"
#include "goref/target/target.h"
#include "goref/target/thread_stopper.h"

namespace goref::target {

struct AttachOptions {
  // false: a read-only view without ptrace — memory through process_vm_readv, mappings and
  // threads from /proc, while the process keeps running (reads may then see torn data).
  // registers() fails with Errc::kUnsupported.
  bool stop = true;
};

class LiveTarget final : public Target {
 public:
  // Stops every thread of pid (unless opts.stop is false) and reads /proc/PID/maps.
  // Errc::kNoSuchProcess if pid does not exist, Errc::kPermission with advice when ptrace is
  // refused. On error nothing is left attached.
  [[nodiscard]] static Result<std::unique_ptr<LiveTarget>> attach(Pid pid, AttachOptions opts = {});

  ~LiveTarget() override;  // detaches every thread (the process runs on); never throws
  LiveTarget(const LiveTarget&) = delete;
  LiveTarget& operator=(const LiveTarget&) = delete;

  // Lets the threads run again. Idempotent. Reads still work afterwards; registers() does not.
  [[nodiscard]] Result<void> detach();
  // How long the threads were (or, while attached, have been so far) stopped; zero without stop.
  [[nodiscard]] std::chrono::nanoseconds pause() const;
  [[nodiscard]] bool stopped() const { return stopper_ != nullptr; }

  Result<size_t> read_some(Addr addr, std::span<std::byte> buf) override;
  Kind kind() const override { return Kind::kLive; }
  Arch arch() const override { return host_arch(); }
  Pid pid() const override { return pid_; }
  const std::vector<Mapping>& mappings() const override { return mappings_; }
  // While stopped, the stopped threads; otherwise the current /proc/PID/task. Leader first.
  std::vector<Tid> threads() const override;
  Result<Registers> registers(Tid tid) const override;
  [[nodiscard]] bool exited() const override { return exited_.load(std::memory_order_relaxed); }
  std::string executable_path() const override { return "/proc/" + pid_.str() + "/exe"; }
  // From /proc/PID/auxv, read at attach.
  std::optional<uint64_t> auxv(uint64_t type) const override;

 private:
  explicit LiveTarget(Pid pid) : pid_(pid) {}
  // pread of /proc/PID/mem from addr; how many bytes were read, or the errno of the first
  // failing call when nothing was.
  size_t read_proc_mem(Addr addr, std::span<std::byte> buf, int* err) const;

  // A read error; notes in exited_ that the address space is gone.
  Error read_failed(Addr addr, int err) const;

  Pid pid_;
  mutable std::atomic<bool> exited_{false};
  int mem_fd_ = -1;  // /proc/PID/mem, O_RDONLY
  std::unique_ptr<ThreadStopper> stopper_;
  std::vector<Mapping> mappings_;
  std::vector<std::pair<uint64_t, uint64_t>> auxv_;  // (type, value), up to AT_NULL
  std::optional<std::chrono::steady_clock::time_point> stop_started_;
  std::optional<std::chrono::steady_clock::time_point> stop_ended_;
};

}  // namespace goref::target
