// Dwarf: read-only access to a Go executable's DWARF (types, struct members, constants,
// package-level variables, and the map from runtime type offsets to DWARF types). open() indexes
// the names of every unit's top-level DIEs once; everything else is decoded lazily from the DIE
// offsets. It knows nothing about processes: addresses are link-time addresses.
//
// The DWARF is untrusted input: malformed data yields Errc::kBadFormat, never a crash or an
// endless walk. A Dwarf is not safe for concurrent use from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "goref/base/result.h"

namespace goref::binary {

// A handle to one DWARF type (the DIE's offset in .debug_info). Cheap to copy.
struct TypeRef {
  uint64_t die_offset = 0;
  friend bool operator==(const TypeRef&, const TypeRef&) = default;
};

enum class TypeKind {
  kBase,
  kPointer,
  kStruct,
  kArray,
  kTypedef,
  kSubroutine,
  kUnspecified,
  kOther
};

struct TypeInfo {
  std::string name;
  TypeKind kind = TypeKind::kOther;
  uint64_t size = 0;  // 0 when unknown
  // DW_AT_go_kind: Go's reflect.Kind (slice 23, string 24, map 21, chan 18, interface 20, ...);
  // -1 when absent. A typedef without its own takes the kind of the type it names.
  int64_t go_kind = -1;
  std::optional<TypeRef> target;           // pointee / array element / typedef target
  std::optional<TypeRef> go_elem, go_key;  // DW_AT_go_elem / DW_AT_go_key
  std::optional<uint64_t> array_count;
  // DW_AT_go_runtime_type: the runtime type's offset from moduledata.types; 0 for types the
  // linker synthesized (map buckets, hash tables), absent for types without a runtime type.
  std::optional<uint64_t> runtime_type;
};

struct Member {
  std::string name;
  uint64_t offset = 0;  // from the start of the outermost struct for dotted paths
  TypeRef type;
  bool embedded = false;  // DW_AT_go_embedded_field
};

struct Variable {
  std::string name;
  uint64_t address = 0;  // link-time address from DW_OP_addr (PIE: before relocation)
  TypeRef type;
};

// Where one piece of a local variable lives at a pc: in the frame at CFA + offset, or somewhere
// goref cannot read from a stack copy (a register, optimized out).
struct VarPiece {
  uint64_t size = 0;  // bytes; 0: the whole variable (no DW_OP_piece)
  bool in_frame = false;
  int64_t cfa_offset = 0;
};

// A local variable or parameter in scope at a pc.
struct FrameVariable {
  std::string function;  // the (possibly inlined) function it belongs to
  std::string name;
  TypeRef type;
  std::vector<VarPiece> pieces;
};

class Dwarf {
 public:
  // Opens an ELF file read-only and indexes its DWARF. Errors: kNotFound (no such file),
  // kBadFormat (not ELF, or malformed DWARF), kNoDwarf (no .debug_info: built with -w or
  // stripped), kIo (other host errors).
  [[nodiscard]] static Result<std::unique_ptr<Dwarf>> open(const std::string& path);
  ~Dwarf();
  Dwarf(const Dwarf&) = delete;
  Dwarf& operator=(const Dwarf&) = delete;

  // A type by its Go name: "runtime.g", "*runtime.g", "internal/abi.Type", "[]uint8", "int".
  // For a named struct Go emits both the struct and a typedef of the same name; this returns
  // the struct.
  [[nodiscard]] std::optional<TypeRef> type(std::string_view name) const;
  [[nodiscard]] Result<TypeInfo> info(TypeRef t) const;
  // Follows typedefs (a bounded number of them) to the underlying type.
  [[nodiscard]] Result<TypeRef> strip_typedefs(TypeRef t) const;
  // Struct members in declaration order; typedefs are followed first.
  [[nodiscard]] Result<std::vector<Member>> members(TypeRef t) const;
  // One member; "stack.lo" walks nested structs and sums the offsets.
  [[nodiscard]] Result<Member> member(TypeRef t, std::string_view path) const;

  // A DW_TAG_constant's DW_AT_const_value: "runtime._Gdead", "runtime.heapArenaBytes".
  [[nodiscard]] std::optional<int64_t> constant(std::string_view name) const;
  // A package-level variable with a static address: "runtime.allgs", "main.gMarker".
  [[nodiscard]] std::optional<Variable> variable(std::string_view name) const;
  // Every package-level variable with a static address, in no particular order.
  [[nodiscard]] std::vector<Variable> variables() const;
  // The DWARF type whose DW_AT_go_runtime_type is off (nonzero); the inverse of
  // TypeInfo::runtime_type.
  [[nodiscard]] std::optional<TypeRef> type_for_runtime_type(uint64_t off) const;

  // The locals and parameters in scope at link-time pc, with their locations there (location
  // lists resolved at pc). Go's frame base is the CFA, so frame slots are CFA offsets.
  [[nodiscard]] Result<std::vector<FrameVariable>> frame_variables(uint64_t pc) const;

  // "runtime.g (DIE 0x1a2b)": a type for error messages.
  [[nodiscard]] std::string describe(TypeRef t) const;

  // DW_AT_producer of the first Go unit ("Go cmd/compile go1.26.8; regabi"), or "".
  [[nodiscard]] std::string producer() const;
  // DWARF version of the first unit: 4 up to Go 1.24, 5 from Go 1.25.
  [[nodiscard]] int version() const;

  // Index sizes, for diagnostics.
  struct Stats {
    size_t units = 0, types = 0, constants = 0, variables = 0, runtime_types = 0;
  };
  [[nodiscard]] Stats stats() const;

 private:
  struct Impl;
  explicit Dwarf(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace goref::binary
