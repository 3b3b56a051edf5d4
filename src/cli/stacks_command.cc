// goref stacks PID | goref stacks --core EXE CORE: every goroutine's stack, as the runtime's own
// traceback prints it, without stopping the process for longer than it takes to copy the
// goroutines and their stacks. Everything that needs only the executable (the pclntab, DWARF
// layouts) is read before the target is stopped; unwinding and symbolizing run after it has
// been let go, on the copies.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_code.h"
#include "cli/open_target.h"
#include "cli/stacks_format.h"
#include "cli/timing.h"
#include "goref/runtime/process.h"
#include "goref/runtime/program.h"
#include "goref/runtime/stack_snapshot.h"
#include "goref/runtime/traceback.h"
#include "goref/unwind/unwinder.h"

namespace goref::cli {
namespace {

struct StacksOptions {
  int pid = 0;
  std::vector<std::string> core;  // EXE CORE
  std::string format = "text";
  bool all_frames = false;
  bool system = false;
  bool verify = false;
  bool verbose = false;
};

Result<int> run_stacks(const StacksOptions& o) {
  const auto t0 = Clock::now();
  GOREF_TRY(auto opened,
            open_target(o.pid, o.core.empty() ? "" : o.core[0], o.core.empty() ? "" : o.core[1]));
  auto& prog = opened.program;
  auto& target = opened.target;
  target::LiveTarget* live = opened.live;
  GOREF_TRY(auto proc, runtime::Process::open(*target, *prog));
  auto snap = runtime::snapshot_stacks(*proc);
  double pause_ms = 0;
  if (live) {
    auto detached = live->detach();
    if (live->exited()) return exited_while_read(o.pid, "no dump was written");
    GOREF_CHECK(std::move(detached));
    pause_ms = std::chrono::duration<double, std::milli>(live->pause()).count();
  }
  if (!snap.ok())
    return std::move(snap).error().context(o.pid > 0 ? "process " + std::to_string(o.pid)
                                                     : "core " + o.core[1]);
  for (const auto& w : snap->all.warnings) fmt::print(stderr, "goref: warning: {}\n", w);

  const auto t1 = Clock::now();
  unwind::Unwinder unwinder(prog->pclntab(), proc->load_bias(), target->arch());
  runtime::TracebackOptions topts;
  topts.verify = o.verify;
  runtime::GoroutineTracer tracer(*proc, *snap, unwinder, topts);

  // Goroutine by goroutine: a dump of 100,000 goroutines is hundreds of megabytes of frames and
  // text, which a debug container's memory limit may not allow at once.
  const bool json = o.format == "json";
  StacksFormatOptions fo{o.all_frames, o.system};
  std::string out(json ? kStacksJsonOpen : "");
  auto flush = [&] {
    std::fwrite(out.data(), 1, out.size(), stdout);
    out.clear();
  };
  size_t listed = 0, incomplete = 0, mismatched = 0, skipped = 0;
  for (size_t i = 0; i < tracer.size(); ++i) {
    auto t = tracer.trace(i);
    if (t.system && !o.system) continue;
    if (json)
      format_goroutine_json(t, listed == 0, out);
    else
      format_goroutine_text(t, fo, listed == 0, out);
    ++listed;
    if (out.size() >= (1 << 20)) flush();
    if (!t.error.empty()) ++incomplete;
    if (t.verify_skipped) ++skipped;
    if (!t.verify_mismatch.empty()) {
      ++mismatched;
      fmt::print(stderr, "goref: verify: goroutine {}: frame pointers and pcsp differ at {}\n",
                 t.g->goid, t.verify_mismatch);
    }
  }
  if (json) out += kStacksJsonClose;
  flush();
  std::fflush(stdout);

  if (o.verbose) {
    if (live)
      fmt::print(stderr,
                 "goref: target stopped for {:.2f} ms ({} goroutines, {:.1f} MiB of "
                 "stacks copied)\n",
                 pause_ms, snap->all.gs.size(), snap->bytes_copied / 1048576.0);
    fmt::print(stderr, "goref: unwound and symbolized in {:.2f} ms; {:.2f} ms in all\n",
               ms_since(t1), ms_since(t0));
  }
  if (o.verify)
    fmt::print(stderr,
               "goref: verify: {} of {} goroutines differ between the two unwinders ({} without "
               "a frame pointer to start from)\n",
               mismatched, listed, skipped);
  if (incomplete > 0)
    fmt::print(stderr, "goref: {} of {} goroutines have incomplete stacks (marked in the dump)\n",
               incomplete, listed);
  return incomplete > 0 || mismatched > 0 ? kExitPartial : kExitOk;
}

}  // namespace

Command add_stacks_command(CLI::App& root) {
  auto o = std::make_shared<StacksOptions>();
  auto* app = root.add_subcommand("stacks",
                                  "Every goroutine's stack, in the runtime's own traceback format");
  auto* pid = app->add_option("pid", o->pid, "process id of a running Go program");
  auto* core = app->add_option("--core", o->core, "an executable and a core file of it")
                   ->expected(2)
                   ->type_name("EXE CORE");
  pid->excludes(core);
  app->add_option("--format", o->format, "text (the runtime's format) or json")
      ->check(CLI::IsMember({"text", "json"}));
  app->add_flag("--all-frames", o->all_frames, "also show the runtime frames the runtime hides");
  app->add_flag("--system", o->system, "also list the runtime's own goroutines");
  app->add_flag("--verify", o->verify,
                "also unwind by frame pointers and report where the two unwinders differ");
  app->add_flag("-v,--verbose", o->verbose, "print how long the target was stopped");
  app->callback([pid, core] {
    if (pid->count() == 0 && core->count() == 0)
      throw CLI::ValidationError("stacks", "give a PID or --core EXE CORE");
  });
  return {app, [o] { return run_stacks(*o); }};
}

}  // namespace goref::cli
