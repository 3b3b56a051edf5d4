#include "cli/checks_common.h"

#include "cli/timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace goref::cli {
namespace {

std::string share(int64_t v, int64_t total) {
  return total > 0 ? fmt::format("{:.1f}%", 100.0 * double(v) / double(total)) : "-";
}

}  // namespace

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

void print_check_summary(const annotate::AnnotateResult& r, const annotate::CheckIndex& checks,
                         const std::string& exe, int top) {
  size_t nb = 0, nn = 0;
  for (const auto& s : checks.sites()) (s.kind == annotate::CheckKind::kNil ? nn : nb)++;
  fmt::print("{}: {} bound checks, {} nil checks in {} functions\n", exe, nb, nn,
             checks.functions_decoded());
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

}  // namespace goref::cli
