// `go tool pprof -top -sample_index=samples` of a profile, parsed: the total and each row's flat
// and cum sample counts, for tests that check a CPU profile the way a user reads it.
#pragma once

#include <map>
#include <string>

#include "goref/base/result.h"

namespace goref::testing {

struct PprofRow {
  long flat = -1, cum = -1;
};

struct PprofTop {
  long total = -1;
  std::map<std::string, PprofRow> rows;  // by the name pprof prints, e.g. "f (inline)"
  std::string text;                      // pprof's output, for failure messages
  [[nodiscard]] PprofRow row(const std::string& name) const {
    auto it = rows.find(name);
    return it == rows.end() ? PprofRow{} : it->second;
  }
};

// Runs pprof from the newest toolchain; an error if it fails.
Result<PprofTop> pprof_top(const std::string& profile);

}  // namespace goref::testing
