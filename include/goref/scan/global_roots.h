// Package-level variables as roots: every word of each module's data and bss that the GC's
// pointer masks (moduledata.gcdatamask/gcbssmask) mark as a pointer, charged to the variable
// DWARF places there ("main.registry"), or to "data segment"/"bss segment" where DWARF names no
// variable. Runtime-internal variables are a separate pass, so that the user's variables, the
// goroutines and the finalizers claim what they retain before runtime bookkeeping does.
#pragma once

#include <string>
#include <vector>

#include "goref/binary/dwarf.h"
#include "goref/runtime/process.h"
#include "goref/scan/marker.h"

namespace goref::scan {

class GlobalIndex {
 public:
  explicit GlobalIndex(const runtime::Process& p);
  [[nodiscard]] size_t size() const { return vars_.size(); }

  struct Var {
    uint64_t lo, hi;
    std::string name;
    binary::TypeRef type;
    [[nodiscard]] bool runtime_internal() const;
  };
  [[nodiscard]] const std::vector<Var>& vars() const { return vars_; }
  // The variable containing runtime address a, or null.
  [[nodiscard]] const Var* var_at(uint64_t a) const;

 private:
  std::vector<Var> vars_;  // sorted by lo, not overlapping
};

enum class GlobalPass {
  kUser,     // variables outside the runtime
  kRuntime,  // runtime.* and internal/* variables, and words no variable covers
};

// Marks from the pointer words of the pass's variables that are still unmarked (after the typed
// walk, only what DWARF does not describe). Returns the number of pointer words scanned.
size_t mark_globals(const GlobalIndex& idx, GlobalPass pass, Marker& m, RefTree& tree);

// The typed walk of every variable outside the runtime, each under a root of its name.
class TypedWalker;
void walk_user_globals(const GlobalIndex& idx, TypedWalker& w, RefTree& tree);

}  // namespace goref::scan
