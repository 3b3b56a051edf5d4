// ThreadStopper: stops every thread of a process with ptrace and lets them all go again when it
// is destroyed. Threads are seized with PTRACE_SEIZE (no signal is sent, so the process cannot
// observe a SIGSTOP) and stopped with PTRACE_INTERRUPT; the task list is scanned again until a
// scan finds no thread that is not already stopped, because running threads can create threads
// while we attach. A thread that vanishes meanwhile is skipped.
//
// ptrace requests are only accepted from the thread that seized the tracee, so a ThreadStopper
// must be created, queried and destroyed on one thread. Each seized tid is entered in the
// SeizedThreads registry so the signal handlers of detach_on_signal.h can release it.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "goref/base/ids.h"
#include "goref/base/result.h"

namespace goref::target {

class ThreadStopper {
 public:
  // Seizes and stops every thread of pid. On error no thread is left seized.
  [[nodiscard]] static Result<std::unique_ptr<ThreadStopper>> stop_all(Pid pid);

  ~ThreadStopper();  // detach_all(); never throws
  ThreadStopper(const ThreadStopper&) = delete;
  ThreadStopper& operator=(const ThreadStopper&) = delete;

  // Detaches every thread; each resumes in the state it would be in without us (a signal it was
  // stopped with is delivered, a group stop stays in effect). Threads that died while stopped
  // are reaped. Idempotent. An error lists threads that could not be detached.
  [[nodiscard]] Result<void> detach_all();

  // The stopped threads, the thread-group leader first (empty after detach_all()).
  [[nodiscard]] std::vector<Tid> threads() const;
  [[nodiscard]] bool is_stopped(Tid tid) const;
  [[nodiscard]] Pid pid() const { return pid_; }
  // When the first thread was asked to stop.
  [[nodiscard]] std::chrono::steady_clock::time_point stop_started() const { return started_; }

 private:
  struct Thread {
    Tid tid;
    int slot;     // in SeizedThreads, -1 if the registry was full
    int pending;  // signal to deliver on detach (from a signal-delivery-stop), 0 for none
  };
  explicit ThreadStopper(Pid pid) : pid_(pid) {}
  [[nodiscard]] Result<void> seize_round(const std::vector<Tid>& fresh);

  Pid pid_;
  std::chrono::steady_clock::time_point started_{};
  std::vector<Thread> threads_;  // stopped, in seize order (the leader, if seized, first)
  // Seized but never seen stopped: exiting when seized, or stuck; detach_all() releases them.
  std::vector<Thread> unstopped_;
};

}  // namespace goref::target
