// Opening what a command inspects: a live process (its executable read first, then attached and
// stopped, with detach-on-signal installed) or an executable and a core file. Shared by every
// command that reads a target, so they all fail with the same messages.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "goref/base/result.h"
#include "goref/runtime/program.h"
#include "goref/target/live_target.h"
#include "goref/target/target.h"

namespace goref::cli {

struct OpenedTarget {
  std::unique_ptr<runtime::Program> program;
  std::unique_ptr<target::Target> target;
  target::LiveTarget* live = nullptr;  // set for a live process: detach() it as soon as possible
  std::string what;                    // "process 123" / "core FILE", for messages
};

// pid > 0: a live process, read through /proc/PID/exe unless exe names an unstripped copy of the
// same build (checked by build ID); otherwise exe and core name the files. prepare (if set) runs
// once the program is open and before a live process is stopped: work that needs only the
// executable belongs there, not in the pause.
[[nodiscard]] Result<OpenedTarget> open_target(
    int pid, const std::string& exe, const std::string& core,
    const std::function<Result<void>(const runtime::Program&)>& prepare = {});

// The error of a command whose live target exited (ended, or was killed) while goref read it:
// whatever was read is incomplete, so nothing is written (outcome says what was not).
[[nodiscard]] Error exited_while_read(int pid, const std::string& outcome);

}  // namespace goref::cli
