// The shape every goref subcommand shares: it registers its options on a CLI11 subcommand and
// provides a run function. run returns the process exit code, or an Error that main prints as
// one line and maps to an exit code (see exit_code.h).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "goref/base/result.h"

namespace goref::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<Result<int>()> run;
};

Command add_info_command(CLI::App& root);
Command add_stacks_command(CLI::App& root);
Command add_attach_command(CLI::App& root);
Command add_core_command(CLI::App& root);
Command add_annotate_command(CLI::App& root);
Command add_cpu_command(CLI::App& root);
Command add_debug_hold_command(CLI::App& root);

}  // namespace goref::cli
