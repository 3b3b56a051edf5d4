#include "goref/target/detach_on_signal.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace goref::target {
namespace {

// A slot holds (signal << 32) | tid, or 0 when free. 64-bit atomics are lock-free on every
// supported architecture, which is what makes them usable from a signal handler.
std::array<std::atomic<uint64_t>, SeizedThreads::kSlots> g_slots{};
std::atomic<pid_t> g_tracer_tid{0};
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<pid_t>::is_always_lock_free);

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT};
constexpr int kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);
struct sigaction g_old[kNumSignals];
std::atomic<bool> g_installed{false};

pid_t raw_gettid() {
  return static_cast<pid_t>(::syscall(SYS_gettid));
}

bool any_seized() {
  for (auto& slot : g_slots)
    if (slot.load(std::memory_order_acquire) != 0) return true;
  return false;
}

void detach_all_from_handler() {
  for (auto& slot : g_slots) {
    uint64_t v = slot.load(std::memory_order_acquire);
    if (v == 0) continue;
    pid_t tid = static_cast<pid_t>(v & 0xffffffffu);
    long sig = static_cast<long>(v >> 32);
    // The raw system call: the glibc wrapper is a thin one too, but syscall() keeps it obvious
    // that nothing here allocates or locks.
    ::syscall(SYS_ptrace, PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(sig));
    slot.store(0, std::memory_order_release);
  }
}

extern "C" void on_fatal_signal(int sig) {
  int saved_errno = errno;
  pid_t tracer = g_tracer_tid.load(std::memory_order_acquire);
  pid_t self = raw_gettid();
  if (tracer != 0 && tracer != self && any_seized() &&
      ::syscall(SYS_tgkill, ::getpid(), tracer, sig) == 0) {
    // Only the tracer thread can detach, so the signal was handed over to it. For a fault in
    // this thread the instruction faults again on return and is forwarded again until the
    // tracer thread ends the process. (If the tracer thread is gone, or nothing is seized, the
    // signal is handled here.)
    errno = saved_errno;
    return;
  }
  detach_all_from_handler();
  // Terminate as if goref had no handler: put back the disposition found at install time (the
  // default action, or a handler installed earlier, e.g. a sanitizer's), unblock the signal (the
  // handler runs with it blocked) and raise it again.
  for (int i = 0; i < kNumSignals; ++i)
    if (kSignals[i] == sig) ::sigaction(sig, &g_old[i], nullptr);
  sigset_t set;
  ::sigemptyset(&set);
  ::sigaddset(&set, sig);
  ::syscall(SYS_tgkill, ::getpid(), self, sig);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  // A synchronous fault that was not fatal here returns and re-executes the faulting instruction
  // under the restored disposition.
  errno = saved_errno;
}

}  // namespace

int SeizedThreads::add(Tid tid) {
  g_tracer_tid.store(raw_gettid(), std::memory_order_release);
  uint64_t v = static_cast<uint32_t>(tid.value());
  // Start probing at a slot derived from the tid so adds stay O(1) for thousands of threads.
  size_t start = static_cast<uint32_t>(tid.value()) % kSlots;
  for (size_t i = 0; i < kSlots; ++i) {
    auto& slot = g_slots[(start + i) % kSlots];
    uint64_t expected = 0;
    if (slot.compare_exchange_strong(expected, v, std::memory_order_acq_rel))
      return static_cast<int>((start + i) % kSlots);
  }
  return -1;
}

void SeizedThreads::set_signal(int slot, int sig) {
  if (slot < 0 || slot >= kSlots) return;
  uint64_t v = g_slots[slot].load(std::memory_order_acquire);
  if (v == 0) return;
  g_slots[slot].store((v & 0xffffffffu) | (static_cast<uint64_t>(static_cast<uint32_t>(sig)) << 32),
                      std::memory_order_release);
}

void SeizedThreads::remove(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  g_slots[slot].store(0, std::memory_order_release);
}

int SeizedThreads::size() {
  int n = 0;
  for (auto& slot : g_slots) n += slot.load(std::memory_order_relaxed) != 0;
  return n;
}

Result<void> install_detach_on_signal() {
  if (g_installed.load()) return {};
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fatal_signal;
  // Block the other handled signals while one is handled, so a second Ctrl-C cannot interrupt a
  // detach half-way.
  ::sigemptyset(&sa.sa_mask);
  for (int s : kSignals) ::sigaddset(&sa.sa_mask, s);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < kNumSignals; ++i) {
    int err = 0;
    if (::sigaction(kSignals[i], nullptr, &g_old[i]) != 0) {
      err = errno;
    } else if (g_old[i].sa_handler == SIG_IGN && !(g_old[i].sa_flags & SA_SIGINFO)) {
      // An ignored signal (SIGHUP under nohup, SIGINT in a background job) stays ignored: it
      // cannot end goref, so there is nothing to detach for.
      continue;
    } else if (::sigaction(kSignals[i], &sa, nullptr) != 0) {
      err = errno;
    }
    if (err != 0) {
      for (int j = 0; j < i; ++j) ::sigaction(kSignals[j], &g_old[j], nullptr);
      return Error(Errc::kIo,
                   "sigaction(" + std::to_string(kSignals[i]) + "): " + std::strerror(err));
    }
  }
  g_installed.store(true);
  return {};
}

void uninstall_detach_on_signal() {
  if (!g_installed.exchange(false)) return;
  for (int i = 0; i < kNumSignals; ++i) ::sigaction(kSignals[i], &g_old[i], nullptr);
}

}  // namespace goref::target
