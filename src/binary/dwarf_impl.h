// The state behind binary::Dwarf, shared by the files that implement it: the libelf/libdw
// handles and the name indexes built at open. Private to src/binary.
#pragma once

#include <elfutils/libdw.h>
#include <libelf.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "goref/base/result.h"
#include "goref/binary/dwarf.h"

namespace goref::binary {

// Go's own DWARF attributes (cmd/internal/dwarf), the same in every supported version.
inline constexpr unsigned kAtGoKind = 0x2900;
inline constexpr unsigned kAtGoKey = 0x2901;
inline constexpr unsigned kAtGoElem = 0x2902;
inline constexpr unsigned kAtGoEmbeddedField = 0x2903;
inline constexpr unsigned kAtGoRuntimeType = 0x2904;

// Bound on typedef chains and nested member paths: Go never nests typedefs, so anything longer is
// a cycle in corrupt data.
inline constexpr int kMaxTypedefChain = 16;

struct Dwarf::Impl {
  std::string path;
  int fd = -1;
  Elf* elf = nullptr;
  ::Dwarf* dw = nullptr;

  bool big_endian = false;
  int version = 0;
  std::string producer;
  size_t units = 0;

  // Keys point into libdw's (mapped or decompressed) section data, which lives as long as dw:
  // the index holds no copies of names.
  std::unordered_map<std::string_view, uint64_t> types, constants, variables;
  std::unordered_map<uint64_t, uint64_t> runtime_types;  // go_runtime_type → DIE offset

  // Functions by pc: [lo, hi) → subprogram DIE, sorted by lo; built on first use. Go emits no
  // .debug_aranges, so libdw cannot find a pc's unit by itself.
  struct FuncRange {
    uint64_t lo, hi, die;
  };
  std::vector<FuncRange> func_ranges;
  bool func_ranges_built = false;
  void build_func_ranges();

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();

  // The DIE at a .debug_info offset.
  [[nodiscard]] Result<Dwarf_Die> die(uint64_t off) const;
  // Walks every unit and records the names of its top-level DIEs.
  [[nodiscard]] Result<void> build_index();
};

// "DIE 0x1a2b"
std::string die_name_for_error(uint64_t off);
// The DIE an attribute refers to (DW_AT_type, DW_AT_go_elem, ...), if present and valid.
std::optional<uint64_t> attr_ref(Dwarf_Die* die, unsigned at);
// DW_AT_go_runtime_type, if present.
std::optional<uint64_t> attr_runtime_type(Dwarf_Die* die);
// An unsigned constant attribute, if present and of a constant form.
std::optional<uint64_t> attr_udata(Dwarf_Die* die, unsigned at);

}  // namespace goref::binary
