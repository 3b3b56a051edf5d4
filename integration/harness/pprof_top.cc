#include "harness/pprof_top.h"

#include <regex>
#include <sstream>

#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {

Result<PprofTop> pprof_top(const std::string& profile) {
  GOREF_TRY(auto tc, go_toolchain(go_versions().back()));
  auto r = run_command(
      {tc.go(), "tool", "pprof", "-top", "-sample_index=samples", "-nodecount=1000", profile});
  if (r.exit_code != 0) return Error(Errc::kIo, "go tool pprof " + profile + ": " + r.err);
  PprofTop t;
  t.text = r.out;
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex(R"(of (\d+) total)"))) t.total = std::stol(m[1]);
  // Rows: "  flat  flat%  sum%  cum  cum%  NAME", NAME possibly with spaces ("f (inline)").
  static const std::regex row(R"(^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.+)$)");
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);)
    if (std::regex_match(l, m, row)) t.rows[m[3]] = {std::stol(m[1]), std::stol(m[2])};
  return t;
}

}  // namespace goref::testing
