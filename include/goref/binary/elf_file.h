// ElfFile: a read-only view of an executable or core file on disk (64-bit little-endian ELF for
// amd64 or arm64). Sections, PT_LOAD segments, .symtab symbols, notes, and the file-backed bytes
// at a link-time virtual address. It knows nothing about processes: every address here is the
// address the linker chose, before any load bias.
//
// The file is untrusted: offsets and sizes from headers are checked against the file size, and a
// malformed file yields Errc::kBadFormat rather than a crash. Spans returned by section_data()
// stay valid as long as the ElfFile lives. Not safe for concurrent use from several threads
// except for the lazily built indexes (symbols, relocations), which are guarded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "goref/base/bytes.h"
#include "goref/base/result.h"
#include "goref/target/arch.h"

namespace goref::binary {

struct Section {
  std::string name;
  uint64_t addr = 0;    // sh_addr (0 for non-allocated sections)
  uint64_t offset = 0;  // sh_offset
  uint64_t size = 0;    // sh_size, as stored (compressed size for SHF_COMPRESSED)
  uint32_t type = 0;    // SHT_*
  uint64_t flags = 0;   // SHF_*
};

// A PT_LOAD program header.
struct Segment {
  uint64_t vaddr = 0, memsz = 0, offset = 0, filesz = 0;
  bool read = false, write = false, exec = false;
};

struct Symbol {
  std::string name;
  uint64_t value = 0, size = 0;
  int type = 0;  // STT_*
  bool local = false;
};

class ElfFile {
 public:
  // Maps the file read-only through libelf. Errors: kNotFound (no such file), kPermission,
  // kBadFormat ("x is not an ELF file", truncated headers), kUnsupported (32-bit, big-endian,
  // or a machine other than x86-64 / AArch64).
  [[nodiscard]] static Result<std::unique_ptr<ElfFile>> open(const std::string& path);
  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] target::Arch arch() const { return arch_; }
  [[nodiscard]] bool is_pie() const { return is_pie_; }    // ET_DYN
  [[nodiscard]] bool is_core() const { return is_core_; }  // ET_CORE
  [[nodiscard]] uint64_t entry() const { return entry_; }

  [[nodiscard]] const std::vector<Section>& sections() const { return sections_; }
  // The first section with that name, or nullptr.
  [[nodiscard]] const Section* section(std::string_view name) const;
  // The section's bytes; SHF_COMPRESSED (and GNU .zdebug_*) sections are inflated once and the
  // buffer kept. SHT_NOBITS sections give an empty span. kNotFound if there is no such section.
  [[nodiscard]] Result<Bytes> section_data(std::string_view name) const;
  [[nodiscard]] Result<Bytes> section_data(const Section& s) const;

  [[nodiscard]] const std::vector<Segment>& loads() const { return loads_; }
  // The link-time address of the byte at file offset off, through the PT_LOAD that holds it
  // (how a mapped address becomes a link-time one: its mapping gives the file offset).
  [[nodiscard]] std::optional<uint64_t> vaddr_at_offset(uint64_t off) const;

  // A .symtab symbol by exact name; GLOBAL symbols win over LOCAL ones of the same name (Go 1.27
  // closures are LOCAL). The index is built on first use.
  [[nodiscard]] std::optional<Symbol> symbol(std::string_view name) const;
  [[nodiscard]] bool has_symtab() const { return has_symtab_; }
  // A .debug_info or .zdebug_info section.
  [[nodiscard]] bool has_dwarf() const;
  // A PT_INTERP header: dynamically linked (for Go programs, typically cgo).
  [[nodiscard]] bool has_interp() const { return has_interp_; }

  // Hex of the NT_GNU_BUILD_ID note, if present.
  [[nodiscard]] std::optional<std::string> build_id() const;
  // The Go build ID note (name "Go", type 4, section .note.go.buildid), if present.
  [[nodiscard]] std::optional<std::string> go_build_id() const;

  // Copies the file-backed bytes of PT_LOAD segments starting at vaddr into out; stops at the
  // first byte that is not in the file (bss, gaps). Returns the count copied; kUnmapped if vaddr
  // itself is not file-backed.
  [[nodiscard]] Result<size_t> read_vaddr(uint64_t vaddr, std::span<std::byte> out) const;
  // The pointer-sized word at vaddr as the loaded program would see it before relocation by the
  // load bias: for a PIE, the addend of an R_X86_64_RELATIVE / R_AARCH64_RELATIVE dynamic
  // relocation that targets vaddr (externally linked PIEs leave zeros in the file); otherwise
  // the bytes in the file.
  [[nodiscard]] Result<uint64_t> read_pointer(uint64_t vaddr) const;
  // The link-time addresses that RELATIVE dynamic relocations write `value` to (empty for a
  // non-PIE). Used to find pointers whose file bytes may be zero.
  [[nodiscard]] std::vector<uint64_t> relative_relocations_to(uint64_t value) const;

  // The whole file image (read-only mapping).
  [[nodiscard]] Bytes image() const { return image_; }

 private:
  ElfFile() = default;
  [[nodiscard]] Result<void> load_headers();
  void index_symbols() const;
  void index_relocations() const;

  std::string path_;
  int fd_ = -1;
  struct ElfHandle;
  std::unique_ptr<ElfHandle> elf_;
  Bytes image_;
  target::Arch arch_ = target::Arch::kAmd64;
  bool is_pie_ = false, is_core_ = false, has_interp_ = false, has_symtab_ = false;
  uint64_t entry_ = 0;
  std::vector<Section> sections_;
  std::vector<Segment> loads_;
  std::vector<std::pair<uint64_t, uint64_t>> dynamic_;  // PT_DYNAMIC (vaddr, filesz) if any
  std::optional<std::string> build_id_, go_build_id_;

  mutable std::mutex mu_;  // guards the caches below
  mutable std::map<std::string, std::vector<std::byte>, std::less<>> inflated_;
  mutable std::once_flag symbols_once_;
  mutable std::unordered_map<std::string, Symbol> symbols_;
  mutable std::once_flag relocs_once_;
  mutable std::vector<std::pair<uint64_t, uint64_t>> relocs_;  // (r_offset, addend), sorted
};

}  // namespace goref::binary
