#include "goref/target/live_target.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>

#include "goref/base/log.h"
#include "goref/target/proc_maps.h"
#include "goref/target/procfs.h"
#include "goref/target/ptrace_regs.h"

namespace goref::target {
namespace {

// Reads larger than this are split. The kernel caps one transfer at MAX_RW_COUNT (just under
// 2 GiB) and silently truncates beyond, which would look like an unreadable byte.
constexpr size_t kMaxTransfer = size_t{256} << 20;

// process_vm_readv is missing (ENOSYS) or refused by a seccomp filter (EPERM) on some hosts;
// once seen, go straight to /proc/PID/mem.
std::atomic<bool> g_vm_readv_unavailable{false};

Error read_error(Pid pid, Addr addr, int err) {
  switch (err) {
    case 0:  // EOF on /proc/PID/mem: the address space is gone
    case ESRCH:
      return Error(Errc::kNoSuchProcess,
                   "read at " + addr.hex() + ": process " + pid.str() + " exited");
    case EPERM:
    case EACCES:
      return ptrace_permission_error(pid, "read the memory of", err);
    default:
      // EFAULT (process_vm_readv), EIO (/proc/PID/mem) and EINVAL (an offset beyond off_t):
      // nothing is mapped there, or not readably.
      return Error(Errc::kUnmapped, "read at " + addr.hex() +
                                        ": address is not mapped in process " + pid.str() + " (" +
                                        std::strerror(err) + ")");
  }
}

}  // namespace

Result<std::unique_ptr<LiveTarget>> LiveTarget::attach(Pid pid, AttachOptions opts) {
  if (pid.value() <= 0)
    return Error(Errc::kNoSuchProcess, "process " + pid.str() + " does not exist");
  auto status = read_proc_file("/proc/" + pid.str() + "/status");
  if (!status) {
    if (status.error().code() == Errc::kNoSuchProcess)
      return Error(Errc::kNoSuchProcess, "process " + pid.str() + " does not exist");
    return std::move(status).error();
  }
  // /proc/TID also exists for a thread that is not a group leader; attaching "to" it would stop
  // the whole process under a misleading id.
  if (auto tgid = status_field(*status, "Tgid"); tgid && *tgid != pid.str())
    return Error(Errc::kUsage, pid.str() + " is a thread of process " + *tgid + "; use that pid");

  std::unique_ptr<LiveTarget> t(new LiveTarget(pid));
  if (opts.stop) {
    GOREF_TRY(t->stopper_, ThreadStopper::stop_all(pid));
    t->stop_started_ = t->stopper_->stop_started();
  }
  // O_RDONLY: goref has no business writing the target's memory, even by accident.
  t->mem_fd_ = ::open(("/proc/" + pid.str() + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (t->mem_fd_ < 0) {
    int err = errno;
    if (err == ENOENT || err == ESRCH)
      return Error(Errc::kNoSuchProcess, "process " + pid.str() + " exited");
    if (err == EACCES || err == EPERM)
      return ptrace_permission_error(pid, "read the memory of", err);
    return Error(Errc::kIo, "open /proc/" + pid.str() + "/mem: " + std::strerror(err));
  }
  GOREF_TRY(t->mappings_, read_proc_maps(pid));
  // The auxiliary vector: (type, value) pairs of native words, ended by AT_NULL. Without it the
  // executable is located by other means, so a failure is not fatal.
  if (auto aux = read_proc_file("/proc/" + pid.str() + "/auxv")) {
    for (size_t off = 0; off + 16 <= aux->size(); off += 16) {
      uint64_t kv[2];
      std::memcpy(kv, aux->data() + off, sizeof kv);
      if (kv[0] == 0) break;  // AT_NULL
      t->auxv_.emplace_back(kv[0], kv[1]);
    }
  } else {
    log::get("target")->debug("process {}: no auxv: {}", pid.value(), aux.error().message());
  }
  log::get("target")->debug("attached to {}: {} threads, {} mappings, stop={}", pid.value(),
                            t->threads().size(), t->mappings_.size(), opts.stop);
  return t;
}

LiveTarget::~LiveTarget() {
  auto r = detach();
  if (!r) {
    try {
      log::get("target")->warn("{}", r.error().message());
    } catch (...) {  // detaching matters more than reporting
    }
  }
  if (mem_fd_ >= 0) ::close(mem_fd_);
}

Result<void> LiveTarget::detach() {
  if (!stopper_) return {};
  auto r = stopper_->detach_all();
  stopper_.reset();
  stop_ended_ = std::chrono::steady_clock::now();
  return r;
}

std::chrono::nanoseconds LiveTarget::pause() const {
  if (!stop_started_) return std::chrono::nanoseconds(0);
  auto end = stop_ended_ ? *stop_ended_ : std::chrono::steady_clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(end - *stop_started_);
}

std::optional<uint64_t> LiveTarget::auxv(uint64_t type) const {
  for (const auto& [k, v] : auxv_)
    if (k == type) return v;
  return std::nullopt;
}

std::vector<Tid> LiveTarget::threads() const {
  if (stopper_) return stopper_->threads();
  auto tids = list_threads(pid_);
  return tids ? std::move(*tids) : std::vector<Tid>{};
}

Result<Registers> LiveTarget::registers(Tid tid) const {
  if (!stopper_)
    return Error(Errc::kUnsupported, "registers of thread " + tid.str() + ": process " +
                                         pid_.str() + " is not stopped");
  if (!stopper_->is_stopped(tid))
    return Error(Errc::kNotFound,
                 "thread " + tid.str() + " is not a stopped thread of process " + pid_.str());
  return ptrace_registers(tid);
}

size_t LiveTarget::read_proc_mem(Addr addr, std::span<std::byte> buf, int* err) const {
  size_t done = 0;
  *err = 0;
  while (done < buf.size()) {
    uint64_t at = addr.value() + done;
    if (at > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
      *err = EINVAL;  // pread cannot express the offset; no user mapping lives there
      break;
    }
    size_t want = std::min(buf.size() - done, kMaxTransfer);
    ssize_t n = ::pread(mem_fd_, buf.data() + done, want, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = errno;
      break;
    }
    if (n == 0) break;  // the mm is gone (*err stays 0)
    done += static_cast<size_t>(n);
  }
  return done;
}

Result<size_t> LiveTarget::read_some(Addr addr, std::span<std::byte> buf) {
  if (buf.empty()) return size_t{0};
  // Never let addr + size wrap around: [addr, 2^64) holds room + 1 bytes.
  uint64_t room = std::numeric_limits<uint64_t>::max() - addr.value();
  if (room < buf.size() - 1) buf = buf.first(static_cast<size_t>(room) + 1);

  size_t done = 0;
  int vm_err = 0;
  if (!g_vm_readv_unavailable.load(std::memory_order_relaxed)) {
    while (done < buf.size()) {
      size_t want = std::min(buf.size() - done, kMaxTransfer);
      struct iovec local = {buf.data() + done, want};
      struct iovec remote = {reinterpret_cast<void*>(static_cast<uintptr_t>(addr.value() + done)),
                             want};
      ssize_t n = ::process_vm_readv(pid_.value(), &local, 1, &remote, 1, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        vm_err = n < 0 ? errno : EFAULT;
        break;
      }
      done += static_cast<size_t>(n);
      if (static_cast<size_t>(n) < want) break;  // stopped at an unreadable page
    }
    if (done == buf.size()) return done;
    if (vm_err == ENOSYS || vm_err == EPERM) g_vm_readv_unavailable.store(true);
    // The task or its mm is gone: /proc/PID/mem has nothing more to say.
    if (vm_err == ESRCH) {
      if (done > 0) return done;
      return read_failed(addr, ESRCH);
    }
  }
  // /proc/PID/mem can read what process_vm_readv cannot (it does not need to pin pages, so e.g.
  // VM_IO mappings with an access method), and it finds the exact first unreadable byte.
  int err = 0;
  done += read_proc_mem(addr + done, buf.subspan(done), &err);
  if (done > 0) return done;
  return read_failed(addr, err);
}

Error LiveTarget::read_failed(Addr addr, int err) const {
  Error e = read_error(pid_, addr, err);
  if (e.code() == Errc::kNoSuchProcess) exited_.store(true, std::memory_order_relaxed);
  return e;
}

}  // namespace goref::target
