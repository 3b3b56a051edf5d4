// goref annotate: charges the samples of a CPU profile that landed on bound checks and nil checks
// to runtime.boundcheck / runtime.nilcheck pseudo-frames, and prints where those samples are;
// --list-checks lists every check site of the executable instead.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

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

struct Executable {
  std::unique_ptr<binary::ElfFile> elf;
  std::unique_ptr<binary::Pclntab> tab;
  annotate::CheckIndex checks;
};

Result<Executable> open_executable(const std::string& path, bool verbose) {
  auto t0 = Clock::now();
  Executable x;
  GOREF_TRY(x.elf, binary::ElfFile::open(path));
  if (x.elf->is_core())
    return Error(Errc::kUsage, path + " is a core file; --exe takes the executable");
  auto tab = binary::Pclntab::open(*x.elf);
  if (!tab.ok()) return std::move(tab).error();
  x.tab = std::make_unique<binary::Pclntab>(std::move(*tab));
  GOREF_TRY(x.checks, annotate::CheckIndex::build(*x.elf, *x.tab));
  if (verbose) {
    size_t nb = 0, nn = 0;
    for (const auto& s : x.checks.sites()) (s.kind == annotate::CheckKind::kNil ? nn : nb)++;
    fmt::print(stderr,
               "goref: {} bound checks, {} nil checks in {} functions ({:.1f} MiB of code "
               "decoded in {:.0f} ms); {} of {} calls of bounds-panic functions are the failure "
               "side of a recognised check\n",
               nb, nn, x.checks.functions_decoded(), double(x.checks.bytes_decoded()) / 1048576.0,
               ms_since(t0), x.checks.panic_calls_reached(), x.checks.panic_calls());
  }
  return x;
}

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

std::string share(int64_t v, int64_t total) {
  return total > 0 ? fmt::format("{:.1f}%", 100.0 * double(v) / double(total)) : "-";
}

void print_summary(const annotate::AnnotateResult& r, const Executable& x, int top) {
  size_t nb = 0, nn = 0;
  for (const auto& s : x.checks.sites()) (s.kind == annotate::CheckKind::kNil ? nn : nb)++;
  fmt::print("{}: {} bound checks, {} nil checks in {} functions\n", x.elf->path(), nb, nn,
             x.checks.functions_decoded());
  fmt::print("profile: {} {} in all ({} locations in {})\n", r.total, r.value_type,
             r.locations_in_mapping, r.mapping_file.empty() ? "?" : r.mapping_file);
  fmt::print("  in bound checks  {:>10}  {:>6}\n", r.bounds, share(r.bounds, r.total));
  fmt::print("  in nil checks    {:>10}  {:>6}\n", r.nil, share(r.nil, r.total));
  if (r.lines.empty()) return;

  std::map<std::string, int64_t> by_fn;
  for (const auto& l : r.lines) by_fn[l.function] += l.value;
  std::vector<std::pair<std::string, int64_t>> fns(by_fn.begin(), by_fn.end());
  std::stable_sort(fns.begin(), fns.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  fmt::print("\ntop functions by check samples:\n");
  for (size_t i = 0; i < fns.size() && int(i) < top; ++i)
    fmt::print("  {:>10}  {:>6}  {}\n", fns[i].second, share(fns[i].second, r.total), fns[i].first);
  fmt::print("\ntop source lines by check samples:\n");
  for (size_t i = 0; i < r.lines.size() && int(i) < top; ++i) {
    const auto& l = r.lines[i];
    fmt::print("  {:>10}  {:>6}  {:<6}  {}:{}  {}\n", l.value, share(l.value, r.total),
               annotate::check_kind_name(l.kind), l.file, l.line, l.function);
  }
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
  print_summary(r, x, o.top);
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
