// Small readers of /proc files used by the live backend: whole-file reads (procfs files report
// size 0, so they are read until EOF), the thread list of a process, a thread's scheduler state
// and "Key: value" lines of status files. They report a vanished process as
// Errc::kNoSuchProcess.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "goref/base/ids.h"
#include "goref/base/result.h"

namespace goref::target {

// The whole file (capped at 256 MiB: a maps file of a huge process is a few MiB).
[[nodiscard]] Result<std::string> read_proc_file(const std::string& path);

// The tids in /proc/PID/task, the thread-group leader first, the others ascending.
[[nodiscard]] Result<std::vector<Tid>> list_threads(Pid pid);

// The state letter of /proc/PID/task/TID/stat ('R', 'S', 't', 'T', 'Z', ...), if readable.
[[nodiscard]] std::optional<char> thread_state(Pid pid, Tid tid);

// The value of "Key:\tvalue" in a status file (leading blanks removed), if present.
[[nodiscard]] std::optional<std::string> status_field(std::string_view status_text,
                                                      std::string_view key);

// The error for a refused ptrace attach or /proc/PID/mem open (EPERM/EACCES), saying what to do:
// who may trace whom, the Kubernetes recipe, the Yama ptrace_scope in force, and whether another
// tracer (a debugger) already holds the process.
[[nodiscard]] Error ptrace_permission_error(Pid pid, std::string_view what, int err);

}  // namespace goref::target
