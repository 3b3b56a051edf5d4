#include "goref/target/thread_stopper.h"

#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <string>

#include "goref/base/log.h"
#include "goref/target/detach_on_signal.h"
#include "goref/target/procfs.h"

namespace goref::target {
namespace {

// A process may create threads while we attach, but only from threads that still run; each round
// stops what the previous scan missed. The bound only guards against a corrupt /proc.
constexpr size_t kMaxThreads = size_t{1} << 20;

// A seized thread that has not stopped after kStateCheckAfter is looked up in /proc: a dead or
// dying one never will. One that is alive is given up to kStopTimeout.
constexpr auto kStateCheckAfter = std::chrono::milliseconds(1);
constexpr auto kStopTimeout = std::chrono::seconds(10);

// How long detach_all() waits for threads that were killed while stopped to finish exiting.
constexpr auto kReapTimeout = std::chrono::seconds(2);

long do_ptrace(enum __ptrace_request req, Tid tid, long data = 0) {
  return ::ptrace(req, tid.value(), nullptr, reinterpret_cast<void*>(data));
}

// waitpid for one tracee; __WALL because non-leader threads are "clone" children.
pid_t wait_thread(Tid tid, int* status, int flags) {
  pid_t r;
  do {
    r = ::waitpid(tid.value(), status, flags | __WALL);
  } while (r < 0 && errno == EINTR);
  return r;
}

}  // namespace

Result<std::unique_ptr<ThreadStopper>> ThreadStopper::stop_all(Pid pid) {
  std::unique_ptr<ThreadStopper> s(new ThreadStopper(pid));
  s->started_ = std::chrono::steady_clock::now();
  std::set<pid_t> seen;
  for (int round = 0;; ++round) {
    auto tids = list_threads(pid);
    if (!tids) {
      if (tids.error().code() == Errc::kNoSuchProcess)
        return Error(Errc::kNoSuchProcess,
                     "process " + pid.str() +
                         (round == 0 ? " does not exist" : " exited while being attached"));
      return std::move(tids).error().context("attach to process " + pid.str());
    }
    std::vector<Tid> fresh;
    for (Tid t : *tids)
      if (seen.insert(t.value()).second) fresh.push_back(t);
    if (fresh.empty()) break;
    if (seen.size() > kMaxThreads)
      return Error(Errc::kIo, "process " + pid.str() + " has more than " +
                                  std::to_string(kMaxThreads) + " threads");
    GOREF_CHECK(s->seize_round(fresh));
    log::get("target")->debug("attach {}: round {} stopped {} new threads", pid.value(), round,
                              fresh.size());
  }
  if (s->threads_.empty())
    return Error(Errc::kNoSuchProcess, "process " + pid.str() + " exited while being attached");
  return s;
}

Result<void> ThreadStopper::seize_round(const std::vector<Tid>& fresh) {
  std::vector<Thread> waiting;
  std::optional<Error> failure;
  for (Tid tid : fresh) {
    int slot = SeizedThreads::add(tid);
    // No options: in particular not PTRACE_O_EXITKILL, the target must outlive goref.
    if (do_ptrace(PTRACE_SEIZE, tid) != 0) {
      int err = errno;
      SeizedThreads::remove(slot);
      if (err == ESRCH) continue;  // exited since the scan
      if (err == EPERM) {
        // The kernel refuses to seize a thread that is already exiting; that is not a
        // permission problem.
        auto st = thread_state(pid_, tid);
        if (!st || *st == 'Z' || *st == 'X') continue;
        failure = ptrace_permission_error(pid_, "attach to", err);
      } else {
        failure = Error(Errc::kIo, "PTRACE_SEIZE thread " + tid.str() + " of process " +
                                       pid_.str() + ": " + std::strerror(err));
      }
      break;
    }
    // ESRCH here means the thread is exiting; its exit is collected below.
    (void)do_ptrace(PTRACE_INTERRUPT, tid);
    waiting.push_back({tid, slot, 0});
  }

  // Collect every stop, even after a failure: only a stopped tracee can be detached cleanly.
  // Never block on one thread: a thread that is already exiting (a zombie; or every thread, when
  // the process is killed meanwhile) never reaches a stop, and a dying leader is only reported
  // once the other threads are reaped. So poll them all and, once a moment has passed, drop the
  // ones /proc shows dead or dying; detach_all() reaps what is left of them.
  std::vector<Thread> stopped;
  const auto begin = std::chrono::steady_clock::now();
  while (!waiting.empty()) {
    const bool look_at_state = std::chrono::steady_clock::now() - begin >= kStateCheckAfter;
    for (auto it = waiting.begin(); it != waiting.end();) {
      int status = 0;
      pid_t r = wait_thread(it->tid, &status, WNOHANG);
      if (r == 0) {
        if (look_at_state) {
          auto st = thread_state(pid_, it->tid);
          if (!st || *st == 'Z' || *st == 'X') {
            unstopped_.push_back(*it);
            it = waiting.erase(it);
            continue;
          }
        }
        ++it;
        continue;
      }
      if (r < 0 || !WIFSTOPPED(status)) {
        // Exited (or reaped elsewhere) before stopping: dropped.
        SeizedThreads::remove(it->slot);
        it = waiting.erase(it);
        continue;
      }
      // A stop with no event is a signal-delivery-stop: the signal was about to be delivered
      // (Go sends SIGURG to preempt); it is handed back on detach. PTRACE_EVENT_STOP is the
      // interrupt stop (SIGTRAP) or a group stop (SIGSTOP, ...) that stays in force by itself.
      if ((status >> 16) == 0) {
        it->pending = WSTOPSIG(status);
        SeizedThreads::set_signal(it->slot, it->pending);
      }
      stopped.push_back(*it);
      it = waiting.erase(it);
    }
    if (waiting.empty()) break;
    if (std::chrono::steady_clock::now() - begin >= kStopTimeout) {
      // Stuck in an uninterruptible sleep (a hung file system, say): give up rather than hang.
      if (!failure)
        failure =
            Error(Errc::kIo, "thread " + waiting.front().tid.str() + " of process " + pid_.str() +
                                 " did not stop within " + std::to_string(kStopTimeout.count()) +
                                 " s (uninterruptible sleep?)");
      for (Thread& th : waiting) unstopped_.push_back(th);
      break;
    }
    struct timespec pause = {0, 20 * 1000};
    ::nanosleep(&pause, nullptr);
  }
  // Keep the leader first overall.
  for (Thread& th : stopped) {
    if (th.tid.value() == pid_.value())
      threads_.insert(threads_.begin(), th);
    else
      threads_.push_back(th);
  }
  if (failure) return std::move(*failure);
  return {};
}

Result<void> ThreadStopper::detach_all() {
  std::vector<Thread> dying;
  std::string failures;
  threads_.insert(threads_.end(), unstopped_.begin(), unstopped_.end());
  unstopped_.clear();
  for (const Thread& th : threads_) {
    if (do_ptrace(PTRACE_DETACH, th.tid, th.pending) == 0) {
      SeizedThreads::remove(th.slot);
      continue;
    }
    int err = errno;
    if (err == ESRCH) {
      // Not in a ptrace stop although we never resumed it: it was killed (SIGKILL wakes a
      // stopped tracee) and is exiting. As its tracer we must reap it, or the process can never
      // be reaped by its parent.
      dying.push_back(th);
    } else {
      failures += " " + th.tid.str() + " (" + std::strerror(err) + ")";
      SeizedThreads::remove(th.slot);
    }
  }
  threads_.clear();

  // Reap the dying threads. They exit promptly, but the leader is only reported after the
  // others, and a blocking wait must never hang goref, so poll against a deadline.
  auto deadline = std::chrono::steady_clock::now() + kReapTimeout;
  while (!dying.empty()) {
    for (auto it = dying.begin(); it != dying.end();) {
      int status = 0;
      pid_t r = wait_thread(it->tid, &status, WNOHANG);
      bool done = r < 0 || (r > 0 && !WIFSTOPPED(status)) ||
                  (r > 0 && do_ptrace(PTRACE_DETACH, it->tid, it->pending) == 0);
      if (done) {
        SeizedThreads::remove(it->slot);
        it = dying.erase(it);
      } else {
        ++it;
      }
    }
    if (dying.empty() || std::chrono::steady_clock::now() >= deadline) break;
    struct timespec ms = {0, 1000 * 1000};
    ::nanosleep(&ms, nullptr);
  }
  for (const Thread& th : dying) {
    failures += " " + th.tid.str() + " (did not exit)";
    SeizedThreads::remove(th.slot);
  }
  if (!failures.empty())
    return Error(Errc::kIo, "detach from process " + pid_.str() + ": threads" + failures);
  return {};
}

ThreadStopper::~ThreadStopper() {
  auto r = detach_all();
  if (!r) {
    try {
      log::get("target")->warn("{}", r.error().message());
    } catch (...) {  // a destructor that detaches must not throw because logging failed
    }
  }
}

std::vector<Tid> ThreadStopper::threads() const {
  std::vector<Tid> out;
  out.reserve(threads_.size());
  for (const Thread& th : threads_) out.push_back(th.tid);
  return out;
}

bool ThreadStopper::is_stopped(Tid tid) const {
  return std::any_of(threads_.begin(), threads_.end(),
                     [&](const Thread& th) { return th.tid == tid; });
}

}  // namespace goref::target
