// goref info: the quick "can goref analyse this?" answer for a process or an executable — Go
// version, experiments, build mode, cgo, DWARF and symbols, threads, and whether ptrace works.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/exit_code.h"
#include "cli/json.h"
#include "goref/binary/build_info.h"
#include "goref/binary/dwarf.h"
#include "goref/binary/elf_file.h"
#include "goref/binary/pclntab.h"
#include "goref/runtime/support.h"
#include "goref/target/core_target.h"
#include "goref/target/detach_on_signal.h"
#include "goref/target/live_target.h"

namespace goref::cli {
namespace {

struct InfoOptions {
  int pid = 0;
  std::string exe;
  std::string core;
  bool json = false;
};

// One line of output. Text shows value; JSON writes json (a JSON literal) if set, else the
// value as a string.
struct Field {
  std::string key;
  std::string value;
  std::string json = {};
};

Field flag_field(std::string key, bool b) {
  return {std::move(key), b ? "yes" : "no", b ? "true" : "false"};
}

void print(const std::vector<Field>& fields, bool json) {
  if (json) {
    std::string out = "{";
    for (size_t i = 0; i < fields.size(); ++i) {
      const auto& f = fields[i];
      out += fmt::format("{}\"{}\":", i ? "," : "", f.key);
      out += f.json.empty() ? "\"" + json_escape(f.value) + "\"" : f.json;
    }
    fmt::print("{}}}\n", out);
    return;
  }
  for (const auto& f : fields) fmt::print("{:<13} {}\n", f.key, f.value);
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

Result<int> run_info(const InfoOptions& o) {
  std::vector<Field> fields;
  std::string exe_path = o.exe;
  std::unique_ptr<target::LiveTarget> live;

  // For a process: stop it only long enough to prove ptrace works and count its threads; all
  // the file reading below happens with the process running.
  size_t nthreads = 0;
  double pause_ms = 0;
  if (o.pid > 0) {
    GOREF_CHECK(target::install_detach_on_signal());
    GOREF_TRY(live, target::LiveTarget::attach(Pid(o.pid)));
    nthreads = live->threads().size();
    GOREF_CHECK(live->detach());
    pause_ms = std::chrono::duration<double, std::milli>(live->pause()).count();
    exe_path = live->executable_path();
    std::error_code ec;
    auto resolved = std::filesystem::read_symlink(exe_path, ec);
    fields.push_back({"process", std::to_string(o.pid)});
    fields.push_back({"executable", ec ? exe_path : resolved.string()});
  } else if (!o.core.empty()) {
    GOREF_TRY(auto core, target::CoreTarget::open(o.core, o.exe));
    nthreads = core->threads().size();
    fields.push_back({"core", o.core});
    fields.push_back({"process", core->pid().str()});
    fields.push_back({"executable", exe_path});
    for (const auto& w : core->warnings()) fields.push_back({"warning", w});
  } else {
    fields.push_back({"executable", exe_path});
  }
  std::string what = o.pid > 0 ? "process " + std::to_string(o.pid) : exe_path;

  GOREF_TRY(auto elf, binary::ElfFile::open(exe_path));
  if (elf->is_core())
    return Error(Errc::kUsage, exe_path +
                                   " is a core file, not an executable; give the program "
                                   "that produced it with --exe");
  auto bi = binary::read_build_info(*elf);
  if (!bi.ok()) {
    if (bi.error().code() == Errc::kNotGo)
      return Error(Errc::kNotGo, what + " is not a Go program (its executable " + exe_path +
                                     " has no Go build info)");
    return std::move(bi).error().context(what);
  }

  fields.push_back({"go", bi->version});
  fields.push_back(
      {"experiments", bi->experiments.empty() ? "(defaults)" : join(bi->experiments, ",")});
  fields.push_back({"arch", std::string(target::arch_name(elf->arch()))});
  auto mode = bi->settings.count("-buildmode") ? bi->settings.at("-buildmode") : "exe";
  fields.push_back({"buildmode", mode});
  fields.push_back(flag_field("pie", elf->is_pie()));
  bool cgo = bi->settings.count("CGO_ENABLED") && bi->settings.at("CGO_ENABLED") == "1" &&
             elf->has_interp();
  fields.push_back(flag_field("cgo", cgo));
  if (auto id = elf->build_id()) fields.push_back({"build_id", *id});

  auto supported = runtime::check_supported(*bi);
  fields.push_back({"supported", supported.ok() ? "yes" : "no: " + supported.error().message()});

  auto pcln = binary::Pclntab::open(*elf);
  fields.push_back({"pclntab", pcln.ok() ? fmt::format("{} functions", pcln->nfunc())
                                         : "unreadable: " + pcln.error().message()});
  auto dwarf = binary::Dwarf::open(exe_path);
  fields.push_back({"dwarf", dwarf.ok() ? fmt::format("yes (DWARF {})", (*dwarf)->version())
                                        : "no: " + dwarf.error().message()});
  fields.push_back(flag_field("symbols", elf->has_symtab()));

  if (live || !o.core.empty())
    fields.push_back({"threads", std::to_string(nthreads), std::to_string(nthreads)});
  if (live) {
    fields.push_back({"ptrace", fmt::format("ok (all threads stopped for {:.2f} ms)", pause_ms)});
  }

  // What each command needs: stacks and annotate need the pclntab; the heap profile needs DWARF.
  bool can_stacks = supported.ok() && pcln.ok();
  bool can_heap = can_stacks && dwarf.ok();
  std::string verdict = can_heap     ? "goref can analyse this program"
                        : can_stacks ? "goroutine dumps only: the heap profile needs DWARF"
                                     : "goref cannot analyse this program";
  fields.push_back({"verdict", verdict});
  print(fields, o.json);
  return can_heap ? kExitOk : can_stacks ? kExitPartial : kExitFailed;
}

}  // namespace

Command add_info_command(CLI::App& root) {
  auto opts = std::make_shared<InfoOptions>();
  auto* app =
      root.add_subcommand("info", "Can goref analyse this? Go version, build, DWARF, ptrace");
  auto* pid = app->add_option("pid", opts->pid, "process id of a running Go program");
  auto* exe = app->add_option("--exe", opts->exe, "a Go executable (instead of a process)");
  auto* core = app->add_option("--core", opts->core, "a core file of a Go program (with --exe)");
  pid->excludes(exe);
  pid->excludes(core);
  core->needs(exe);
  app->add_flag("--json", opts->json, "print one JSON object");
  app->callback([app, pid, exe] {
    if (pid->count() == 0 && exe->count() == 0)
      throw CLI::ValidationError("info", "give a PID or --exe BIN");
    (void)app;
  });
  return {app, [opts] { return run_info(*opts); }};
}

}  // namespace goref::cli
