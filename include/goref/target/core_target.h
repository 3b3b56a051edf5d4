// CoreTarget: a Target over an ELF core file (from the kernel or gdb's gcore) and the executable
// it was produced from. Memory is a spliced view: the core's PT_LOAD bytes first; file-backed
// pages the core omits (gcore and the kernel skip unmodified file mappings, or keep only their
// first page) are read from the executable where NT_FILE says the executable backs them; anything
// else is absent and a read stops there — nothing is ever filled with invented zeros. The core
// is read with pread on demand, never loaded whole. Problems that leave the core usable
// (truncation, a suspicious executable) are collected as warnings; the rest are errors.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "goref/target/core_notes.h"
#include "goref/target/target.h"

namespace goref::target {

class CoreTarget final : public Target {
 public:
  // Opens core_path and exe_path (the executable the core was produced from). Errors: a missing
  // file (kNotFound/kPermission/kIo, naming it), a file that is not an ELF core or not an
  // executable (kBadFormat), an unsupported class or architecture (kUnsupported), a core with no
  // NT_PRSTATUS (kBadFormat).
  [[nodiscard]] static Result<std::unique_ptr<CoreTarget>> open(const std::string& core_path,
                                                                const std::string& exe_path);
  ~CoreTarget() override;
  CoreTarget(const CoreTarget&) = delete;
  CoreTarget& operator=(const CoreTarget&) = delete;

  [[nodiscard]] Result<size_t> read_some(Addr addr, std::span<std::byte> buf) override;
  [[nodiscard]] Kind kind() const override { return Kind::kCore; }
  [[nodiscard]] Arch arch() const override { return arch_; }
  // NT_PRPSINFO's pr_pid (the thread group id), else the first NT_PRSTATUS's.
  [[nodiscard]] Pid pid() const override { return pid_; }
  // PT_LOAD segments with their permissions, plus file mappings the core omitted entirely (known
  // from NT_FILE only); paths and offsets from NT_FILE where known.
  [[nodiscard]] const std::vector<Mapping>& mappings() const override { return mappings_; }
  // One per NT_PRSTATUS, in the core's order: the first is the thread the core names first (the
  // one that received the fatal signal in a kernel core).
  [[nodiscard]] std::vector<Tid> threads() const override;
  [[nodiscard]] Result<Registers> registers(Tid tid) const override;
  [[nodiscard]] std::string executable_path() const override { return exe_path_; }
  [[nodiscard]] std::optional<uint64_t> auxv(uint64_t type) const override;

  // Problems found while opening that did not make the core unusable, one line each.
  [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }

  // Where the byte at addr would be read from (diagnostics and tests).
  enum class Source { kAbsent, kCore, kExecutable };
  [[nodiscard]] Source source_of(Addr addr) const;

  // The executable's path as the target saw it (NT_FILE), empty if it could not be identified.
  [[nodiscard]] const std::string& target_executable_path() const { return target_exe_path_; }

 private:
  CoreTarget() = default;

  struct Piece {
    uint64_t start = 0;
    uint64_t end = 0;
    Source source = Source::kAbsent;
    uint64_t file_offset = 0;  // in the core or in the executable
  };
  struct Thread {
    Tid tid{0};
    Registers regs;
  };
  struct Segment;  // a PT_LOAD, as read at open
  struct ElfFile;  // an ELF file's headers

  [[nodiscard]] static Result<ElfFile> read_elf_headers(int fd, const std::string& path,
                                                        uint64_t size);

  [[nodiscard]] Result<void> load_notes(const ElfFile& core, Bytes notes, bool notes_truncated);
  [[nodiscard]] Result<void> check_executable(const ElfFile& exe);
  void identify_executable_mappings();
  void build_view(const std::vector<Segment>& segments, const ElfFile& exe);
  [[nodiscard]] const Piece* find_piece(uint64_t addr) const;
  void warn(std::string w);

  int core_fd_ = -1;
  int exe_fd_ = -1;
  std::string core_path_;
  std::string exe_path_;
  std::string target_exe_path_;
  Arch arch_ = Arch::kAmd64;
  Pid pid_{0};
  std::optional<Pid> psinfo_pid_;
  std::vector<Thread> threads_;
  notes::Auxv auxv_;
  notes::FileNote files_;
  std::vector<Piece> pieces_;  // sorted, disjoint
  std::vector<Mapping> mappings_;
  std::vector<std::string> warnings_;
};

}  // namespace goref::target
