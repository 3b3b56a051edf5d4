// CheckIndex: every bound check and nil check in one Go executable, found by decoding each
// function gopclntab lists, from its entry to the next function's. Needs neither .symtab nor
// DWARF: function bounds and the bounds-panic functions' addresses come from gopclntab.
// Addresses are link-time addresses (before a PIE's load bias).
#pragma once

#include <cstdint>
#include <vector>

#include "goref/annotate/check_sites.h"
#include "goref/base/result.h"

namespace goref::binary {
class ElfFile;
class Pclntab;
}  // namespace goref::binary

namespace goref::annotate {

class CheckIndex {
 public:
  [[nodiscard]] static Result<CheckIndex> build(const binary::ElfFile& elf,
                                                const binary::Pclntab& tab);

  // In address order, disjoint.
  [[nodiscard]] const std::vector<CheckSite>& sites() const { return sites_; }
  // The site whose [begin, end) holds pc, or nullptr.
  [[nodiscard]] const CheckSite* find(uint64_t pc) const;
  // How many bounds-panic functions the binary has (0 when built with -gcflags=-B, or a binary
  // without a single index expression).
  [[nodiscard]] size_t panic_functions() const { return npanic_; }
  [[nodiscard]] size_t functions_decoded() const { return nfuncs_; }
  // Calls of bounds-panic functions, and those on the failure side of a recognised check (see
  // FunctionChecks): equal unless the recogniser missed a shape.
  [[nodiscard]] uint64_t panic_calls() const { return panic_calls_; }
  [[nodiscard]] uint64_t panic_calls_reached() const { return panic_calls_reached_; }
  [[nodiscard]] uint64_t bytes_decoded() const { return nbytes_; }

 private:
  std::vector<CheckSite> sites_;
  size_t npanic_ = 0, nfuncs_ = 0;
  uint64_t nbytes_ = 0, panic_calls_ = 0, panic_calls_reached_ = 0;
};

}  // namespace goref::annotate
