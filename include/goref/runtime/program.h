// Program: one Go executable as goref reads it — its ELF file, build info, gopclntab and (when
// present) DWARF — and the answers that need all of them: where a runtime global is (DWARF,
// else the symbol table) and the Go version policy. It knows nothing about a running process.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "goref/base/result.h"
#include "goref/binary/build_info.h"
#include "goref/binary/dwarf.h"
#include "goref/binary/elf_file.h"
#include "goref/binary/pclntab.h"

namespace goref::runtime {

class Program {
 public:
  // Opens exe. Errors: not ELF / not Go (kNotGo) / unsupported Go version (kUnsupported) /
  // unreadable pclntab. A missing DWARF is not an error here: dwarf() is null and
  // dwarf_error() says why.
  [[nodiscard]] static Result<std::unique_ptr<Program>> open(const std::string& exe_path);

  [[nodiscard]] const binary::ElfFile& elf() const { return *elf_; }
  [[nodiscard]] const binary::BuildInfo& build_info() const { return bi_; }
  [[nodiscard]] const binary::Pclntab& pclntab() const { return *pcln_; }
  [[nodiscard]] const binary::Dwarf* dwarf() const { return dwarf_.get(); }
  [[nodiscard]] const std::optional<Error>& dwarf_error() const { return dwarf_error_; }
  // Go minor version (21 for go1.21.13).
  [[nodiscard]] int go_minor() const { return bi_.minor; }

  // Link-time address of a package-level variable ("runtime.allgs"), from DWARF or, without
  // it, from .symtab. nullopt when neither has it (a -s -w binary).
  [[nodiscard]] std::optional<uint64_t> global(std::string_view name) const;
  // Size in bytes of a package-level variable, when DWARF or the symbol table know it.
  [[nodiscard]] std::optional<uint64_t> global_size(std::string_view name) const;

 private:
  Program() = default;
  std::unique_ptr<binary::ElfFile> elf_;
  binary::BuildInfo bi_;
  std::optional<binary::Pclntab> pcln_;
  std::unique_ptr<binary::Dwarf> dwarf_;
  std::optional<Error> dwarf_error_;
};

}  // namespace goref::runtime
