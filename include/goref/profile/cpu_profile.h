// CpuProfileBuilder: a CPU profile in the layout the Go runtime's profiler writes — sample types
// samples/count and cpu/nanoseconds, period cpu/nanoseconds — from sampled call chains. As in
// Go's profiles, a leaf location's address is the interrupted pc and a caller's is its return
// address - 1 (inside the call), so the two never share a location and `goref annotate` can
// tell where a leaf sample landed. Each address of a symbolized mapping gets the logical frames
// the symbolizer returns, inlined calls as extra Lines, innermost first.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "goref/profile/pprof.h"

namespace goref::profile {

struct SymbolizedFrame {
  std::string function;
  std::string file;
  int64_t line = 0;
};

struct CpuMapping {
  uint64_t start = 0, limit = 0, offset = 0;
  std::string file;
  std::string build_id;
  // Given a location address in this mapping, its frames, innermost first (empty: unknown).
  std::function<std::vector<SymbolizedFrame>(uint64_t addr)> symbolize;
};

class CpuProfileBuilder {
 public:
  explicit CpuProfileBuilder(int64_t period_ns) : period_ns_(period_ns) {}
  void add_mapping(CpuMapping m) { mappings_.push_back(std::move(m)); }
  // One sample: pcs leaf first (the interrupted pc, then return addresses), and the CPU time it
  // stands for.
  void add(std::span<const uint64_t> pcs, int64_t cpu_ns);
  [[nodiscard]] Profile build(int64_t time_nanos, int64_t duration_nanos) const;
  [[nodiscard]] uint64_t samples() const { return nsamples_; }

 private:
  int64_t period_ns_;
  std::vector<CpuMapping> mappings_;
  struct Values {
    int64_t count = 0, ns = 0;
  };
  std::map<std::vector<uint64_t>, Values> stacks_;  // location addresses, leaf first
  uint64_t nsamples_ = 0;
};

}  // namespace goref::profile
