// What goref annotate and goref cpu --annotate share: a Go executable opened with its function
// table and check index, and the text summary of an annotated profile (how many samples landed
// on bound checks and nil checks, in which functions and source lines).
#pragma once

#include <memory>
#include <string>

#include "goref/annotate/annotate_profile.h"
#include "goref/annotate/check_index.h"
#include "goref/binary/elf_file.h"
#include "goref/binary/pclntab.h"

namespace goref::cli {

struct Executable {
  std::unique_ptr<binary::ElfFile> elf;
  std::unique_ptr<binary::Pclntab> tab;
  annotate::CheckIndex checks;
};

// Opens path and indexes its checks; with verbose, reports the count and the self-check of
// matched bounds-panic calls on stderr.
[[nodiscard]] Result<Executable> open_executable(const std::string& path, bool verbose);

void print_check_summary(const annotate::AnnotateResult& r, const annotate::CheckIndex& checks,
                         const std::string& exe, int top);

}  // namespace goref::cli
