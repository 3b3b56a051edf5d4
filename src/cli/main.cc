// goref's entry point: parses the command line, runs one subcommand, and turns errors into a
// single "goref: …" line and a documented exit code.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cli/command.h"
#include "cli/exit_code.h"
#include "goref/base/log.h"

int main(int argc, char** argv) {
  using namespace goref;
  CLI::App app{
      "goref: look inside a running Go process from the outside — what retains its heap, what "
      "every goroutine is doing."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "goref 0.1.0");
  std::string log_spec;
  app.add_option("--log", log_spec,
                 "log levels, e.g. debug or target:debug,binary:info (also GOREF_LOG)");

  std::vector<cli::Command> commands;
  commands.push_back(cli::add_info_command(app));
  commands.push_back(cli::add_stacks_command(app));
  commands.push_back(cli::add_attach_command(app));
  commands.push_back(cli::add_core_command(app));
  commands.push_back(cli::add_annotate_command(app));
  commands.push_back(cli::add_cpu_command(app));
  commands.push_back(cli::add_debug_hold_command(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? cli::kExitOk : cli::kExitUsage;
  }

  if (log_spec.empty())
    if (const char* env = std::getenv("GOREF_LOG")) log_spec = env;
  if (!log_spec.empty() && !log::configure(log_spec)) {
    std::fprintf(stderr, "goref: bad --log value '%s'\n", log_spec.c_str());
    return cli::kExitUsage;
  }

  for (auto& c : commands) {
    if (!c.app->parsed()) continue;
    auto rc = c.run();
    if (!rc.ok()) {
      std::fflush(stdout);
      std::fprintf(stderr, "goref: %s\n", rc.error().message().c_str());
      return cli::exit_code_for(rc.error());
    }
    return *rc;
  }
  return cli::kExitUsage;
}
