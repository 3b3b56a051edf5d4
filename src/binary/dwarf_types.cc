// Decoding type DIEs on demand: TypeInfo, typedef chains and struct members.
#include <dwarf.h>

#include <string>

#include "dwarf_impl.h"
#include "goref/base/bytes.h"
#include "goref/binary/dwarf.h"

namespace goref::binary {
namespace {

// Upper bound on a struct's members: runtime structs have a few hundred; it stops a walk over
// corrupt sibling links.
constexpr size_t kMaxMembers = 1 << 16;

TypeKind kind_of(int tag) {
  switch (tag) {
    case DW_TAG_base_type:
      return TypeKind::kBase;
    case DW_TAG_pointer_type:
      return TypeKind::kPointer;
    case DW_TAG_structure_type:
      return TypeKind::kStruct;
    case DW_TAG_array_type:
      return TypeKind::kArray;
    case DW_TAG_typedef:
      return TypeKind::kTypedef;
    case DW_TAG_subroutine_type:
      return TypeKind::kSubroutine;
    case DW_TAG_unspecified_type:
      return TypeKind::kUnspecified;
    default:
      return TypeKind::kOther;
  }
}

std::string name_of(Dwarf_Die* d) {
  const char* n = dwarf_diename(d);
  return n != nullptr ? n : "";
}

std::string die_desc(Dwarf_Die* d) {
  std::string n = name_of(d);
  std::string where = die_name_for_error(dwarf_dieoffset(d));
  return n.empty() ? where : n + " (" + where + ")";
}

uint64_t address_size(Dwarf_Die* d) {
  Dwarf_Die cu;
  uint8_t asize = 0;
  if (dwarf_diecu(d, &cu, &asize, nullptr) == nullptr) return 0;
  return asize;
}

// The element count of an array DIE, from its DW_TAG_subrange_type child.
std::optional<uint64_t> array_count(Dwarf_Die* d) {
  Dwarf_Die sub;
  if (dwarf_child(d, &sub) != 0) return std::nullopt;
  if (dwarf_tag(&sub) != DW_TAG_subrange_type) return std::nullopt;
  if (auto c = attr_udata(&sub, DW_AT_count)) return c;
  if (auto ub = attr_udata(&sub, DW_AT_upper_bound)) return *ub + 1;
  return std::nullopt;
}

// A member's offset: Go writes a constant; other producers may write DW_OP_plus_uconst.
std::optional<uint64_t> member_offset(Dwarf_Die* m) {
  Dwarf_Attribute attr;
  if (dwarf_attr(m, DW_AT_data_member_location, &attr) == nullptr) return uint64_t{0};
  switch (dwarf_whatform(&attr)) {
    case DW_FORM_exprloc:
    case DW_FORM_block:
    case DW_FORM_block1:
    case DW_FORM_block2:
    case DW_FORM_block4: {
      // Decoded here: libdw's dwarf_getlocation refuses block forms in DWARF 4+.
      Dwarf_Block b;
      if (dwarf_formblock(&attr, &b) != 0 || b.length < 2 || b.data[0] != DW_OP_plus_uconst)
        return std::nullopt;
      auto v = read_uvarint(Bytes(reinterpret_cast<const std::byte*>(b.data), b.length), 1);
      if (!v || 1 + v->length != b.length) return std::nullopt;
      return v->value;
    }
    default: {
      Dwarf_Word v = 0;
      if (dwarf_formudata(&attr, &v) != 0) return std::nullopt;
      return v;
    }
  }
}

bool attr_flag(Dwarf_Die* d, unsigned at) {
  Dwarf_Attribute attr;
  if (dwarf_attr(d, at, &attr) == nullptr) return false;
  bool b = false;
  if (dwarf_formflag(&attr, &b) == 0) return b;
  Dwarf_Word v = 0;
  return dwarf_formudata(&attr, &v) == 0 && v != 0;
}

}  // namespace

Result<TypeRef> Dwarf::strip_typedefs(TypeRef t) const {
  uint64_t off = t.die_offset;
  for (int i = 0; i <= kMaxTypedefChain; ++i) {
    GOREF_TRY(Dwarf_Die d, impl_->die(off));
    if (dwarf_tag(&d) != DW_TAG_typedef) return TypeRef{off};
    auto next = attr_ref(&d, DW_AT_type);
    if (!next) return Error(Errc::kBadFormat, die_desc(&d) + ": typedef without a target type");
    off = *next;
  }
  return Error(Errc::kBadFormat, die_name_for_error(t.die_offset) + ": typedef chain longer than " +
                                     std::to_string(kMaxTypedefChain) + " (a cycle?)");
}

Result<TypeInfo> Dwarf::info(TypeRef t) const {
  GOREF_TRY(Dwarf_Die d, impl_->die(t.die_offset));
  TypeInfo ti;
  ti.name = name_of(&d);
  int tag = dwarf_tag(&d);
  ti.kind = kind_of(tag);
  if (auto k = attr_udata(&d, kAtGoKind)) ti.go_kind = static_cast<int64_t>(*k);
  // For a named type Go adds a plain typedef of that name in front of the DIE that carries the
  // kind (the struct for "main.probe", another typedef for "interface {}"); it has the kind of
  // what it names.
  if (tag == DW_TAG_typedef && ti.go_kind < 0) {
    auto next = attr_ref(&d, DW_AT_type);
    for (int i = 0; next && i < kMaxTypedefChain; ++i) {
      Dwarf_Die n;
      if (dwarf_offdie(impl_->dw, *next, &n) == nullptr) break;
      if (auto k = attr_udata(&n, kAtGoKind)) {
        ti.go_kind = static_cast<int64_t>(*k);
        break;
      }
      if (dwarf_tag(&n) != DW_TAG_typedef) break;
      next = attr_ref(&n, DW_AT_type);
    }
  }
  if (auto r = attr_ref(&d, DW_AT_type)) ti.target = TypeRef{*r};
  if (auto r = attr_ref(&d, kAtGoElem)) ti.go_elem = TypeRef{*r};
  if (auto r = attr_ref(&d, kAtGoKey)) ti.go_key = TypeRef{*r};
  if (tag == DW_TAG_array_type) ti.array_count = array_count(&d);
  ti.runtime_type = attr_runtime_type(&d);

  // Size: DW_AT_byte_size when present; pointers have none in Go's DWARF (the unit's address
  // size), typedefs take their target's, arrays without one are count × element.
  int bs = dwarf_bytesize(&d);
  if (bs >= 0) {
    ti.size = static_cast<uint64_t>(bs);
  } else if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type) {
    ti.size = address_size(&d);
  } else if (tag == DW_TAG_typedef) {
    GOREF_TRY(TypeRef under, strip_typedefs(t));
    GOREF_TRY(Dwarf_Die u, impl_->die(under.die_offset));
    int ubs = dwarf_bytesize(&u);
    if (ubs >= 0)
      ti.size = static_cast<uint64_t>(ubs);
    else if (dwarf_tag(&u) == DW_TAG_pointer_type)
      ti.size = address_size(&u);
  } else if (tag == DW_TAG_array_type && ti.array_count && ti.target) {
    GOREF_TRY(TypeRef elem, strip_typedefs(*ti.target));
    GOREF_TRY(Dwarf_Die e, impl_->die(elem.die_offset));
    int ebs = dwarf_bytesize(&e);
    uint64_t esize = ebs >= 0                               ? static_cast<uint64_t>(ebs)
                     : dwarf_tag(&e) == DW_TAG_pointer_type ? address_size(&e)
                                                            : 0;
    // Overflow means corrupt data; leave the size unknown.
    if (esize == 0 || *ti.array_count <= UINT64_MAX / esize) ti.size = *ti.array_count * esize;
  }
  return ti;
}

Result<std::vector<Member>> Dwarf::members(TypeRef t) const {
  GOREF_TRY(TypeRef s, strip_typedefs(t));
  GOREF_TRY(Dwarf_Die d, impl_->die(s.die_offset));
  int tag = dwarf_tag(&d);
  if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type && tag != DW_TAG_class_type)
    return Error(Errc::kBadFormat, die_desc(&d) + ": not a struct");
  std::vector<Member> out;
  Dwarf_Die m;
  int rc = dwarf_child(&d, &m);
  uint64_t prev = s.die_offset;
  while (rc == 0) {
    uint64_t off = dwarf_dieoffset(&m);
    if (off <= prev || out.size() >= kMaxMembers)
      return Error(Errc::kBadFormat, die_desc(&d) + ": malformed member list");
    prev = off;
    if (dwarf_tag(&m) == DW_TAG_member) {
      auto moff = member_offset(&m);
      auto mtype = attr_ref(&m, DW_AT_type);
      if (!moff || !mtype)
        return Error(Errc::kBadFormat, die_desc(&d) + ": member " + die_desc(&m) +
                                           ": missing or unreadable offset or type");
      out.push_back(Member{name_of(&m), *moff, TypeRef{*mtype}, attr_flag(&m, kAtGoEmbeddedField)});
    }
    rc = dwarf_siblingof(&m, &m);
  }
  if (rc < 0) return Error(Errc::kBadFormat, die_desc(&d) + ": members: " + dwarf_errmsg(-1));
  return out;
}

Result<Member> Dwarf::member(TypeRef t, std::string_view path) const {
  Member result{std::string(path), 0, t, false};
  std::string_view rest = path;
  std::string walked;
  for (int depth = 0;; ++depth) {
    if (depth > kMaxTypedefChain)
      return Error(Errc::kNotFound, std::string(path) + ": member path too deep");
    size_t dot = rest.find('.');
    std::string_view part = rest.substr(0, dot);
    GOREF_TRY(auto ms, members(result.type));
    const Member* found = nullptr;
    for (const auto& m : ms) {
      if (m.name == part) {
        found = &m;
        break;
      }
    }
    if (found == nullptr) {
      std::string where = walked.empty() ? describe(t) : walked;
      return Error(Errc::kNotFound, where + ": no member \"" + std::string(part) + "\"");
    }
    result.offset += found->offset;
    result.type = found->type;
    result.embedded = found->embedded;
    if (dot == std::string_view::npos) return result;
    walked =
        walked.empty() ? describe(t) + "." + std::string(part) : walked + "." + std::string(part);
    rest = rest.substr(dot + 1);
  }
}

std::string Dwarf::describe(TypeRef t) const {
  auto d = impl_->die(t.die_offset);
  if (!d) return die_name_for_error(t.die_offset);
  return die_desc(&*d);
}

}  // namespace goref::binary
