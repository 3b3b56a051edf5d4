// Layout: the offsets of the runtime structures goref reads (g, m, gobuf), resolved once per
// program. Each offset comes from the program's DWARF by the runtime's own field names; without
// DWARF (a binary built with -w) it comes from a table measured on real binaries of each Go
// version, which the integration tests check against DWARF for every supported version.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "goref/base/result.h"
#include "goref/runtime/program.h"

namespace goref::runtime {

struct GLayout {
  uint64_t size = 0;
  uint64_t stack_lo = 0, stack_hi = 0;
  uint64_t m = 0;
  uint64_t sched_sp = 0, sched_pc = 0, sched_bp = 0, sched_lr = 0, sched_ctxt = 0;
  uint64_t syscallsp = 0, syscallpc = 0;
  std::optional<uint64_t> syscallbp;  // Go 1.23+
  uint64_t atomicstatus = 0;          // uint32
  uint64_t goid = 0;                  // uint64
  uint64_t waitsince = 0;             // int64, nanotime
  uint64_t waitreason = 0;            // uint8
  uint64_t lockedm = 0;
  std::optional<uint64_t> parent_goid;  // Go 1.21+
  uint64_t gopc = 0, startpc = 0;
  std::optional<uint64_t> running_cleanups;  // atomic.Bool, Go 1.25+
};

struct MLayout {
  uint64_t size = 0;
  uint64_t g0 = 0, procid = 0, gsignal = 0, curg = 0, alllink = 0;
  uint64_t vdso_sp = 0, vdso_pc = 0;
};

struct Layout {
  GLayout g;
  MLayout m;
  bool from_dwarf = false;  // false: every offset came from the fallback table
};

// Resolves the layout for prog. Fails only when DWARF lacks a field and the Go version has no
// fallback row (which the supported-version check rules out).
[[nodiscard]] Result<Layout> resolve_layout(const Program& prog);

// The fallback table alone, for a Go minor version (21 … 27); for tests and -w binaries.
[[nodiscard]] std::optional<Layout> fallback_layout(int go_minor);

}  // namespace goref::runtime
