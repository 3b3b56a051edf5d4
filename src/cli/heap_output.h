// What goref attach/core print and write from a HeapAnalysis: the terminal summary (total
// attributed, the top roots and paths by bytes), the same as JSON for scripts, and the pprof
// reference profile (one sample per reference path, leaf first, root last).
#pragma once

#include <string>

#include "goref/base/result.h"
#include "goref/scan/analyze.h"

namespace goref::cli {

struct HeapOutputOptions {
  size_t top = 10;
  std::string title;  // "process 123 (go1.26.10)"
};

[[nodiscard]] std::string format_heap_text(const scan::HeapAnalysis& a, const HeapOutputOptions& o);
[[nodiscard]] std::string format_heap_json(const scan::HeapAnalysis& a, const HeapOutputOptions& o);
// Writes the gzip pprof profile (inuse_objects/count, inuse_space/bytes).
[[nodiscard]] Result<void> write_heap_profile(const scan::HeapAnalysis& a, const std::string& path,
                                              const std::string& comment);

}  // namespace goref::cli
