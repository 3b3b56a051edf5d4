// Process: a Go program as it is in one target (live or core): the Program, where it is loaded,
// and the runtime layout. Reads of runtime globals go through here, so every address is adjusted
// for the load bias exactly once.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "goref/base/addr.h"
#include "goref/base/result.h"
#include "goref/runtime/layout.h"
#include "goref/runtime/program.h"
#include "goref/target/target.h"

namespace goref::runtime {

class Process {
 public:
  // t and prog must outlive the Process.
  [[nodiscard]] static Result<std::unique_ptr<Process>> open(target::Target& t,
                                                             const Program& prog);

  [[nodiscard]] target::Target& target() const { return t_; }
  [[nodiscard]] const Program& program() const { return prog_; }
  [[nodiscard]] const Layout& layout() const { return layout_; }
  [[nodiscard]] uint64_t load_bias() const { return bias_; }

  // Runtime address of a package-level variable; kNotFound names it and says what is missing.
  [[nodiscard]] Result<Addr> global(std::string_view name) const;
  // A link-time address (pclntab, DWARF) as a runtime address, and back.
  [[nodiscard]] Addr runtime_addr(uint64_t link) const { return Addr(link + bias_); }
  [[nodiscard]] uint64_t link_addr(uint64_t runtime) const { return runtime - bias_; }

  // A Go string {ptr, len} at addr, at most max_len bytes (longer ones are cut and marked "…").
  [[nodiscard]] Result<std::string> read_go_string(Addr addr, size_t max_len = 4096) const;

 private:
  Process(target::Target& t, const Program& p) : t_(t), prog_(p) {}
  target::Target& t_;
  const Program& prog_;
  Layout layout_;
  uint64_t bias_ = 0;
};

}  // namespace goref::runtime
