// Leaving the target running when goref dies. install_detach_on_signal() sets handlers for the
// terminating signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) and the crash signals (SIGSEGV, SIGBUS,
// SIGABRT) that PTRACE_DETACH every thread currently seized, using only async-signal-safe system
// calls, and then let the signal take its default action (or the disposition that was in place
// before: an ignored signal is left ignored, an earlier handler such as a sanitizer's is chained).
// The set of seized threads lives in a fixed-size lock-free registry (SeizedThreads) that the live
// backend keeps up to date.
//
// Why this is enough: when a tracer exits for any reason, the kernel detaches its tracees and
// resumes them (exit_ptrace), so even SIGKILL, which cannot be caught, leaves the target running.
// The handlers add what the kernel cannot do: they detach *before* a core dump of goref is
// written (which can take long while the target stays stopped), and they re-deliver a signal a
// thread was stopped with (signal-delivery-stop), which a kernel detach would drop.
//
// ptrace requests are only accepted from the thread that seized the tracee. Every LiveTarget
// must therefore be attached, used for registers and detached from one thread (the "tracer
// thread"); a handler running on another thread forwards the signal to that thread.
#pragma once

#include <sys/types.h>

#include "goref/base/ids.h"
#include "goref/base/result.h"

namespace goref::target {

// Installs the handlers (process-wide, idempotent). Call once, early, in the tracer thread.
[[nodiscard]] Result<void> install_detach_on_signal();
// Restores the handlers that were in place before install_detach_on_signal().
void uninstall_detach_on_signal();

// The registry of seized threads read by the handlers. Slots are claimed before PTRACE_SEIZE and
// released after PTRACE_DETACH, so a signal at any point finds every tid that might be seized
// (detaching a tid that is not seized just fails).
class SeizedThreads {
 public:
  static constexpr int kSlots = 16384;
  // Claims a slot for tid, recording the calling thread as the tracer thread. Returns the slot,
  // or -1 if the registry is full (the thread is then only detached by the kernel at exit).
  [[nodiscard]] static int add(Tid tid);
  // The signal to deliver when the thread is detached (0 for none).
  static void set_signal(int slot, int sig);
  static void remove(int slot);
  // How many slots are in use (for tests).
  [[nodiscard]] static int size();
};

}  // namespace goref::target
