// goref attach PID | goref core EXE CORE: which variables keep the heap alive. The target is
// stopped only while its goroutines, stacks, in-use spans and data/bss are copied; the marking
// and attribution run on the copies after it has been let go. Everything that needs only the
// executable (DWARF layouts, the variable index, the unwinder's tables) is prepared before the
// target is stopped.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "cli/exit_code.h"
#include "cli/heap_output.h"
#include "cli/open_target.h"
#include "cli/timing.h"
#include "goref/base/host_buffer.h"
#include "goref/runtime/heap_layout.h"
#include "goref/runtime/heap_snapshot.h"
#include "goref/runtime/process.h"
#include "goref/runtime/stack_snapshot.h"
#include "goref/scan/analyze.h"
#include "goref/target/live_target.h"
#include "goref/unwind/unwinder.h"

namespace goref::cli {
namespace {

struct HeapOptions {
  int pid = 0;
  std::string exe, core;
  std::string out = "goref.heap.pb.gz";
  std::string format = "text";
  size_t top = 10;
  int max_depth = 256;
  bool verbose = false;
};

// Sizes and faults in the buffer for the heap copy while the process still runs, from its
// mheap_.pagesInUse read without stopping it (racy, hence the margin). Any failure only means
// the copy allocates as it goes.
HostBuffer heap_pool(int pid, const runtime::Program& prog, const runtime::HeapLayout& layout) {
  target::AttachOptions ao;
  ao.stop = false;
  auto view = target::LiveTarget::attach(Pid(pid), ao);
  if (!view.ok()) return {};
  auto proc = runtime::Process::open(**view, prog);
  if (!proc.ok()) return {};
  auto bytes = runtime::heap_in_use_estimate(**proc, layout);
  if (!bytes.ok()) return {};
  auto pool = runtime::prepare_heap_pool(*bytes + *bytes / 32 + (16 << 20));
  return pool.ok() ? std::move(*pool) : HostBuffer{};
}

Result<int> run_heap(const HeapOptions& o) {
  const auto t0 = Clock::now();
  std::optional<runtime::HeapLayout> layout;
  HostBuffer pool;
  GOREF_TRY(auto opened,
            open_target(o.pid, o.exe, o.core, [&](const runtime::Program& prog) -> Result<void> {
              GOREF_TRY(layout, runtime::resolve_heap_layout(prog));
              if (o.pid > 0) pool = heap_pool(o.pid, prog, *layout);
              return {};
            }));
  auto& target = *opened.target;
  const auto& prog = *opened.program;

  // Everything below until detach runs while a live target is stopped.
  auto copy = [&]() -> Result<std::pair<runtime::StackSnapshot, runtime::HeapSnapshot>> {
    GOREF_TRY(auto proc, runtime::Process::open(target, prog));
    GOREF_TRY(auto stacks, runtime::snapshot_stacks(*proc));
    GOREF_TRY(auto heap, runtime::snapshot_heap(*proc, *layout, std::move(pool)));
    return std::pair{std::move(stacks), std::move(heap)};
  };
  auto copied = copy();
  double pause_ms = 0;
  if (opened.live) {
    auto detached = opened.live->detach();
    if (opened.live->exited()) return exited_while_read(o.pid, "no profile was written");
    GOREF_CHECK(std::move(detached));
    pause_ms = std::chrono::duration<double, std::milli>(opened.live->pause()).count();
  }
  if (!copied.ok()) return std::move(copied).error().context(opened.what);
  auto& [stacks, heap] = *copied;

  const auto t1 = Clock::now();
  GOREF_TRY(auto proc, runtime::Process::open(target, prog));
  unwind::Unwinder unwinder(prog.pclntab(), proc->load_bias(), target.arch());
  auto analysis = scan::analyze_heap(*proc, heap, stacks, unwinder, o.max_depth);
  for (const auto& w : stacks.all.warnings) analysis.warnings.push_back(w);
  double analyze_ms = ms_since(t1);

  HeapOutputOptions ho;
  ho.top = o.top;
  ho.title = opened.what + " (" + prog.build_info().version + ")";
  std::string text =
      o.format == "json" ? format_heap_json(analysis, ho) : format_heap_text(analysis, ho);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (!o.out.empty() && o.out != "-") {
    GOREF_CHECK(write_heap_profile(analysis, o.out, "goref heap reference profile of " + ho.title)
                    .context("writing " + o.out));
    fmt::print(stderr, "goref: reference profile written to {} (view: go tool pprof -http=: {})\n",
               o.out, o.out);
  }
  if (o.verbose) {
    if (opened.live)
      fmt::print(stderr,
                 "goref: target stopped for {:.2f} ms ({:.1f} MiB of heap in {} spans, {:.1f} "
                 "MiB of stacks, {} reads)\n",
                 pause_ms, heap.bytes_copied / 1048576.0, heap.spans.size(),
                 stacks.bytes_copied / 1048576.0, heap.reads);
    fmt::print(stderr,
               "goref: analysed in {:.2f} ms ({} frames, {} scanned conservatively, {} stack "
               "objects; {} global pointer words; {} specials); {:.2f} ms in all\n",
               analyze_ms, analysis.stacks.frames, analysis.stacks.conservative_frames,
               analysis.stacks.stack_objects, analysis.global_words, analysis.specials,
               ms_since(t0));
  }
  return analysis.warnings.empty() ? kExitOk : kExitPartial;
}

void add_common(CLI::App* app, HeapOptions& o) {
  app->add_option("-o,--output", o.out,
                  "where to write the gzip pprof reference profile (\"-\": none)")
      ->capture_default_str();
  app->add_option("--format", o.format, "summary on stdout: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app->add_option("--top", o.top, "how many roots the text summary lists")->capture_default_str();
  app->add_option("--max-depth", o.max_depth,
                  "named levels of a reference path; deeper objects are charged as "
                  "$sub_objects$ of the last level")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app->add_flag("-v,--verbose", o.verbose, "print how long the target was stopped, and timings");
}

}  // namespace

Command add_attach_command(CLI::App& root) {
  auto o = std::make_shared<HeapOptions>();
  auto* app = root.add_subcommand(
      "attach", "Which variables keep a running Go program's heap alive (a pprof profile)");
  app->add_option("pid", o->pid, "process id of a running Go program")->required();
  app->add_option("--exe", o->exe,
                  "an unstripped copy of the program's executable (same build), when the "
                  "running one has no DWARF");
  add_common(app, *o);
  return {app, [o] { return run_heap(*o); }};
}

Command add_core_command(CLI::App& root) {
  auto o = std::make_shared<HeapOptions>();
  auto* app = root.add_subcommand(
      "core", "Which variables keep the heap alive, from an executable and its core file");
  app->add_option("exe", o->exe, "the executable the core was dumped from")->required();
  app->add_option("core", o->core, "the core file")->required();
  add_common(app, *o);
  return {app, [o] { return run_heap(*o); }};
}

}  // namespace goref::cli
