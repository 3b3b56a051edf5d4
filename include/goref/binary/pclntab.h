// Pclntab: Go's function table (.gopclntab, Go 1.20+ format, magic 0xfffffff1): which function
// contains a pc, its name, its frame size at a pc (pcsp), its source position, its PCDATA and
// FUNCDATA, and the logical frames of inlined calls. Addresses are link-time addresses; callers
// subtract the load bias of a PIE first.
//
// The text base and the FUNCDATA base are not in the pclntab header (pcHeader.textStart is 0
// from Go 1.26 on), so open() takes them from runtime.firstmoduledata, found by symbol or by
// scanning the data for the moduledata's first word (the pclntab address).
//
// All offsets and counts in the table are untrusted and bounds-checked; a corrupt table gives an
// error or an empty answer, never a crash or an endless walk.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "goref/base/bytes.h"
#include "goref/base/result.h"

namespace goref::binary {

class ElfFile;
struct BuildInfo;

// internal/abi PCDATA_* and FUNCDATA_* table indices (unchanged 1.20–1.27).
inline constexpr uint32_t kPcdataUnsafePoint = 0;
inline constexpr uint32_t kPcdataStackMapIndex = 1;
inline constexpr uint32_t kPcdataInlTreeIndex = 2;
inline constexpr uint32_t kPcdataArgLiveIndex = 3;
inline constexpr uint32_t kPcdataPanicBounds = 4;  // Go 1.26+
inline constexpr uint32_t kFuncdataArgsPointerMaps = 0;
inline constexpr uint32_t kFuncdataLocalsPointerMaps = 1;
inline constexpr uint32_t kFuncdataStackObjects = 2;
inline constexpr uint32_t kFuncdataInlTree = 3;
inline constexpr uint32_t kFuncdataOpenCodedDeferInfo = 4;
inline constexpr uint32_t kFuncdataArgInfo = 5;
inline constexpr uint32_t kFuncdataArgLiveInfo = 6;
inline constexpr uint32_t kFuncdataWrapInfo = 7;
// abi.FuncFlag bits.
inline constexpr uint8_t kFuncFlagTopFrame = 1;
inline constexpr uint8_t kFuncFlagSPWrite = 2;
inline constexpr uint8_t kFuncFlagAsm = 4;
// _func.args when the size is not known.
inline constexpr int32_t kArgsSizeUnknown = INT32_MIN;

inline constexpr uint32_t kGo120PclntabMagic = 0xfffffff1;

// One logical frame: a physical function or a call inlined into it.
struct Frame {
  std::string function;
  std::string file;
  int line = 0;
  bool inlined = false;
  uint64_t entry = 0;  // the physical function's entry, also for inlined frames (as the runtime)
  // abi.FuncID of the function (of the inlined callee for an inlined frame); the numbering is
  // the Go version's own (see runtime/funcid.h).
  uint8_t func_id = 0;
};

namespace detail {
struct PclntabData;
}

// A view of one _func. Valid while the Pclntab it came from (or a copy of it) lives.
class Func {
 public:
  [[nodiscard]] uint64_t entry() const;
  // The next function's entry: pcs in [entry(), end()) belong to this function.
  [[nodiscard]] uint64_t end() const;
  [[nodiscard]] std::string_view name() const;  // empty if the name offset is corrupt
  [[nodiscard]] size_t index() const { return index_; }
  [[nodiscard]] int32_t args() const;  // kArgsSizeUnknown when unknown
  [[nodiscard]] uint32_t deferreturn() const;
  [[nodiscard]] uint32_t pcsp() const;  // offsets into pctab; 0 = no table
  [[nodiscard]] uint32_t pcfile() const;
  [[nodiscard]] uint32_t pcln() const;
  [[nodiscard]] uint32_t npcdata() const;
  [[nodiscard]] uint32_t cu_offset() const;
  [[nodiscard]] int32_t start_line() const;
  [[nodiscard]] uint8_t func_id() const;
  [[nodiscard]] uint8_t flag() const;
  [[nodiscard]] uint8_t nfuncdata() const;

  // SP delta at pc (bytes the function has pushed since entry); nullopt without a pcsp table
  // (external code), for a pc outside the function, or a corrupt table.
  [[nodiscard]] std::optional<int32_t> pcsp_at(uint64_t pc) const;
  [[nodiscard]] std::optional<int32_t> line_at(uint64_t pc) const;
  // "?" when the file number is -1 (as the runtime prints it).
  [[nodiscard]] std::optional<std::string_view> file_at(uint64_t pc) const;
  struct FileLine {
    std::string_view file;
    int32_t line = 0;
  };
  [[nodiscard]] std::optional<FileLine> file_line_at(uint64_t pc) const;
  // PCDATA table value at pc; -1 when the function has no such table (as the runtime's
  // pcdatavalue); nullopt for a pc outside the function or a corrupt table.
  [[nodiscard]] std::optional<int32_t> pcdata_at(uint32_t table, uint64_t pc) const;
  // Offset of PCDATA table `table` in pctab (0 = none).
  [[nodiscard]] uint32_t pcdata_offset(uint32_t table) const;
  // Address of FUNCDATA `index` (moduledata.gofunc + offset); nullopt when absent.
  [[nodiscard]] std::optional<uint64_t> funcdata(uint32_t index) const;

 private:
  friend class Pclntab;
  Func(const detail::PclntabData* t, size_t index, uint64_t off)
      : t_(t), index_(index), off_(off) {}
  template <class T>
  T field(uint64_t at) const;
  const detail::PclntabData* t_;
  size_t index_;
  uint64_t off_;  // of the _func in pclntable
};

// Reads bytes at a link-time address outside the pclntab itself (FUNCDATA lives in go:func.*,
// which is in .rodata before Go 1.26). Returns the count read.
using AddressReader = std::function<Result<size_t>(uint64_t addr, std::span<std::byte> out)>;

// What open() learnt from runtime.firstmoduledata.
struct ModuleDataInfo {
  uint64_t addr = 0;  // link-time address of the moduledata
  uint64_t text = 0, etext = 0, minpc = 0, maxpc = 0, gofunc = 0;
  bool from_symbol = false;  // found through the runtime.firstmoduledata symbol
};

// Finds runtime.firstmoduledata in an executable and reads its text/gofunc fields, checking
// them against the pclntab (pcHeader, funcnametab, minpc == text + ftab[0].entryoff). bi (may be
// null) selects the gofunc offset (320 up to Go 1.26, 344 from 1.27); without it both are tried.
[[nodiscard]] Result<ModuleDataInfo> find_moduledata(const ElfFile& elf, uint64_t pclntab_addr,
                                                     Bytes pclntab, const BuildInfo* bi);

class Pclntab {
 public:
  // The executable's .gopclntab (.data.rel.ro.gopclntab in Go 1.21 PIEs; without a section
  // table, the runtime.pclntab symbol or a header found by its magic in read-only data), with
  // text and gofunc from the module data. The ElfFile must outlive the Pclntab: the table is
  // not copied.
  [[nodiscard]] static Result<Pclntab> open(const ElfFile& elf);
  // From parts read elsewhere (e.g. target memory): the pclntab bytes, their address, the text
  // base and gofunc (moduledata.text, .gofunc), and a reader for FUNCDATA outside the pclntab.
  [[nodiscard]] static Result<Pclntab> from_parts(std::vector<std::byte> pclntab,
                                                  uint64_t pclntab_addr, uint64_t text,
                                                  uint64_t gofunc, AddressReader reader = {});

  [[nodiscard]] size_t nfunc() const;
  // The i-th function (i < nfunc()).
  [[nodiscard]] Func func(size_t i) const;
  // The function containing pc (binary search of ftab); nullopt outside [minpc, last end).
  [[nodiscard]] std::optional<Func> find_func(uint64_t pc) const;
  // Logical frames at pc, innermost first, expanding inlined calls through the inline tree.
  // Empty when no function contains pc. pc is the pc of an instruction (for a return address,
  // pass return address - 1 as the runtime does).
  [[nodiscard]] std::vector<Frame> symbolize(uint64_t pc) const;

  [[nodiscard]] uint64_t text_start() const;
  [[nodiscard]] uint64_t gofunc() const;
  [[nodiscard]] uint64_t address() const;  // of the pcHeader
  [[nodiscard]] uint32_t pc_quantum() const;
  [[nodiscard]] std::string_view funcname(uint32_t name_off) const;
  // The module data this table was located through (open() only; addr 0 from from_parts).
  [[nodiscard]] const ModuleDataInfo& moduledata() const;
  // Reads bytes at a link-time address: inside the pclntab from its copy, else the reader.
  [[nodiscard]] Result<size_t> read(uint64_t addr, std::span<std::byte> out) const;

 private:
  explicit Pclntab(std::shared_ptr<const detail::PclntabData> d) : d_(std::move(d)) {}
  static Result<Pclntab> build(std::vector<std::byte> owned, Bytes data, uint64_t addr,
                               uint64_t text, uint64_t gofunc, AddressReader reader,
                               ModuleDataInfo md);
  std::shared_ptr<const detail::PclntabData> d_;
};

}  // namespace goref::binary
