// goref annotate: charges the samples of a CPU profile that landed on bound checks and nil checks
// to runtime.boundcheck / runtime.nilcheck pseudo-frames, and prints where those samples are;
// --list-checks lists every check site of the executable instead.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "cli/checks_common.h"
#include "cli/command.h"
#include "cli/exit_code.h"
#include "cli/timing.h"
#include "goref/annotate/annotate_profile.h"
#include "goref/annotate/check_index.h"
#include "goref/binary/elf_file.h"
#include "goref/binary/pclntab.h"
#include "goref/profile/pprof.h"

namespace goref::cli {
namespace {

struct AnnotateOptions {
  std::string exe;
  std::string profile;
  std::string out;
  bool list_checks = false;
  bool verbose = false;
  int top = 10;
};

// One --list-checks line. The position is the one in the function the check was compiled in
// (the outermost frame), as the compiler's -d=ssa/check_bce report gives it; a check inside an
// inlined call also names the inlined function and its own line, as pprof shows it.
std::string list_line(const binary::Pclntab& tab, const annotate::CheckSite& s) {
  auto frames = tab.symbolize(s.branch);
  std::string line = fmt::format("{}\t{:#x}\t", annotate::check_kind_name(s.kind), s.pc);
  if (frames.empty()) return line + "?\t?:0\n";
  const auto& outer = frames.back();
  line += fmt::format("{}\t{}:{}", outer.function, outer.file, outer.line);
  if (frames.size() > 1)
    line += fmt::format("\tinlined {} {}:{}", frames.front().function, frames.front().file,
                        frames.front().line);
  return line + "\n";
}

Result<int> list_checks(const Executable& x) {
  std::string out;
  for (const auto& s : x.checks.sites()) out += list_line(*x.tab, s);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

std::string default_output(const std::string& in) {
  std::filesystem::path p(in);
  std::string stem = p.filename().string();
  for (std::string_view ext : {".gz", ".pb", ".pprof", ".prof", ".out"})
    if (stem.size() > ext.size() && stem.ends_with(ext)) stem.resize(stem.size() - ext.size());
  return (p.parent_path() / (stem + ".annotated.pb.gz")).string();
}

Result<int> run_annotate(const AnnotateOptions& o) {
  GOREF_TRY(auto x, open_executable(o.exe, o.verbose));
  if (o.list_checks) return list_checks(x);
  if (o.profile.empty())
    return Error(Errc::kUsage, "give a CPU profile to annotate, or --list-checks");
  auto prof = profile::read_profile_file(o.profile);
  if (!prof.ok()) return std::move(prof).error().context(o.profile);
  GOREF_TRY(auto r, annotate::annotate_profile(*prof, *x.elf, *x.tab, x.checks));
  std::string out = o.out.empty() ? default_output(o.profile) : o.out;
  GOREF_CHECK(profile::write_profile_file(*prof, out));
  print_check_summary(r, x.checks, x.elf->path(), o.top);
  if (r.locations_mismatched > 0)
    fmt::print(stderr,
               "goref: warning: {} sampled locations name functions {} does not have at those "
               "addresses; was the profile taken of this build?\n",
               r.locations_mismatched, o.exe);
  fmt::print(stderr, "goref: annotated profile written to {} (view: go tool pprof -top {})\n", out,
             out);
  return kExitOk;
}

}  // namespace

Command add_annotate_command(CLI::App& root) {
  auto o = std::make_shared<AnnotateOptions>();
  auto* app = root.add_subcommand(
      "annotate",
      "charge CPU profile samples on bound checks and nil checks to runtime.boundcheck and "
      "runtime.nilcheck pseudo-frames");
  app->add_option("--exe", o->exe, "the executable the profile was taken of")->required();
  app->add_option("profile", o->profile, "a pprof CPU profile (gzip or not)");
  app->add_option("-o,--output", o->out,
                  "where to write the annotated profile (default: PROFILE.annotated.pb.gz)");
  app->add_flag("--list-checks", o->list_checks,
                "list every check site of the executable: kind, pc, function, file:line");
  app->add_flag("-v,--verbose", o->verbose,
                "print how many checks were found, and whether every bounds-panic call was "
                "matched to one");
  app->add_option("--top", o->top, "how many functions and lines the summary lists")
      ->capture_default_str();
  return {app, [o] { return run_annotate(*o); }};
}

}  // namespace goref::cli
