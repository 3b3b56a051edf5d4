#include "harness/pprof_top.h"

#include <sstream>

#include "harness/fixture.h"
#include "harness/matrix.h"
#include "harness/text.h"

namespace goref::testing {

Result<PprofTop> pprof_top(const std::string& profile) {
  GOREF_TRY(auto tc, go_toolchain(go_versions().back()));
  auto r = run_command(
      {tc.go(), "tool", "pprof", "-top", "-sample_index=samples", "-nodecount=1000", profile});
  if (r.exit_code != 0) return Error(Errc::kIo, "go tool pprof " + profile + ": " + r.err);
  PprofTop t;
  t.text = r.out;
  t.total = number_before(r.out, " total");
  // Rows: "  flat  flat%  sum%  cum  cum%  NAME", NAME possibly with spaces ("f (inline)").
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) {
    std::istringstream ls(l);
    std::string flat, flat_pct, sum_pct, cum, cum_pct, name;
    if (!(ls >> flat >> flat_pct >> sum_pct >> cum >> cum_pct)) continue;
    auto is_count = [](const std::string& x) {
      return !x.empty() && x.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!is_count(flat) || !is_count(cum) || !cum_pct.ends_with("%")) continue;
    std::getline(ls >> std::ws, name);
    if (!name.empty()) t.rows[name] = {std::stol(flat), std::stol(cum)};
  }
  return t;
}

}  // namespace goref::testing
