// goref debug-hold PID (hidden): attaches, stops every thread, prints STOPPED and waits for a
// signal. It exists so tests can check what happens to the target when goref is interrupted or
// killed while the target is stopped.
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "goref/target/detach_on_signal.h"
#include "goref/target/live_target.h"

namespace goref::cli {

Command add_debug_hold_command(CLI::App& root) {
  auto pid = std::make_shared<int>(0);
  auto* app = root.add_subcommand("debug-hold", "");
  app->group("");  // hidden from --help
  app->add_option("pid", *pid, "process id")->required();
  return {app, [pid]() -> Result<int> {
            GOREF_CHECK(target::install_detach_on_signal());
            GOREF_TRY(auto live, target::LiveTarget::attach(Pid(*pid)));
            std::printf("STOPPED\n");
            std::fflush(stdout);
            for (;;) pause();
          }};
}

}  // namespace goref::cli
