// Dwarf::frame_variables: a function's locals and parameters at one pc, from the scopes libdw
// finds for it and their DWARF location expressions. Go describes a stack slot as
// DW_OP_fbreg(n) with DW_AT_frame_base = DW_OP_call_frame_cfa (or as DW_OP_call_frame_cfa plus a
// constant), and a multi-word value as DW_OP_piece parts of which some may be in registers or
// empty; at a call site (every frame but the innermost) Go keeps no live value in registers, so
// the frame slots are what matters.
#include <dwarf.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "dwarf_impl.h"
#include "goref/base/addr.h"
#include "goref/binary/dwarf.h"

namespace goref::binary {
namespace {

// Evaluates the subset of DWARF expressions Go emits for locals into pieces; nullopt for
// anything else (the variable is then skipped).
std::optional<std::vector<VarPiece>> eval(const Dwarf_Op* ops, size_t n) {
  std::vector<VarPiece> out;
  VarPiece cur;
  bool have = false;
  for (size_t i = 0; i < n; ++i) {
    const Dwarf_Op& op = ops[i];
    switch (op.atom) {
      case DW_OP_call_frame_cfa:
        cur.in_frame = true;
        cur.cfa_offset = 0;
        have = true;
        break;
      case DW_OP_fbreg:
        cur.in_frame = true;
        cur.cfa_offset = static_cast<int64_t>(op.number);
        have = true;
        break;
      case DW_OP_consts:
        if (i + 1 < n && ops[i + 1].atom == DW_OP_plus && cur.in_frame) {
          cur.cfa_offset += static_cast<int64_t>(op.number);
          ++i;
          break;
        }
        return std::nullopt;
      case DW_OP_plus_uconst:
        if (!cur.in_frame) return std::nullopt;
        cur.cfa_offset += static_cast<int64_t>(op.number);
        break;
      case DW_OP_piece:
        cur.size = op.number;
        if (!have) cur.in_frame = false;  // an empty piece: optimized out
        out.push_back(cur);
        cur = VarPiece{};
        have = false;
        break;
      default:
        if ((op.atom >= DW_OP_reg0 && op.atom <= DW_OP_reg31) || op.atom == DW_OP_regx) {
          cur.in_frame = false;  // in a register
          have = true;
          break;
        }
        return std::nullopt;
    }
  }
  if (have && out.empty()) out.push_back(cur);  // the whole variable, no pieces
  if (out.empty()) return std::nullopt;
  return out;
}

// Go writes single expressions as DW_FORM_block1, which libdw's location readers only accept as
// exprloc; decode those few opcodes by hand.
std::optional<std::vector<VarPiece>> eval_block(const Dwarf_Block& b) {
  std::vector<Dwarf_Op> ops;
  const unsigned char* p = b.data;
  const unsigned char* end = b.data + b.length;
  auto uleb = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; p < end && shift < 64; shift += 7) {
      unsigned char c = *p++;
      v |= uint64_t(c & 0x7f) << shift;
      if (!(c & 0x80)) return true;
    }
    return false;
  };
  auto sleb = [&](int64_t& v) {
    uint64_t r = 0;
    int shift = 0;
    unsigned char c = 0;
    do {
      if (p >= end || shift >= 64) return false;
      c = *p++;
      r |= uint64_t(c & 0x7f) << shift;
      shift += 7;
    } while (c & 0x80);
    if (shift < 64 && (c & 0x40)) r |= ~uint64_t{0} << shift;
    v = static_cast<int64_t>(r);
    return true;
  };
  while (p < end) {
    Dwarf_Op op{};
    op.atom = *p++;
    if (op.atom == DW_OP_fbreg || op.atom == DW_OP_consts) {
      int64_t v;
      if (!sleb(v)) return std::nullopt;
      op.number = static_cast<Dwarf_Word>(v);
    } else if (op.atom == DW_OP_piece || op.atom == DW_OP_plus_uconst || op.atom == DW_OP_regx) {
      if (!uleb(op.number)) return std::nullopt;
    }
    ops.push_back(op);
  }
  return eval(ops.data(), ops.size());
}

std::string die_string(Dwarf_Die* d, unsigned at) {
  Dwarf_Attribute a;
  if (dwarf_attr_integrate(d, at, &a) == nullptr) return {};
  const char* s = dwarf_formstring(&a);
  return s ? s : "";
}

}  // namespace

void Dwarf::Impl::build_func_ranges() {
  func_ranges_built = true;
  Dwarf_Off off = 0, next = 0;
  size_t hsize = 0;
  while (dwarf_nextcu(dw, off, &next, &hsize, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cu, child;
    if (dwarf_offdie(dw, off + hsize, &cu) != nullptr && dwarf_child(&cu, &child) == 0) {
      do {
        if (dwarf_tag(&child) != DW_TAG_subprogram) continue;
        Dwarf_Addr lo = 0, hi = 0;
        if (dwarf_lowpc(&child, &lo) == 0 && dwarf_highpc(&child, &hi) == 0 && hi > lo)
          func_ranges.push_back({lo, hi, dwarf_dieoffset(&child)});
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    off = next;
  }
  std::sort(func_ranges.begin(), func_ranges.end(),
            [](const FuncRange& a, const FuncRange& b) { return a.lo < b.lo; });
}

Result<std::vector<FrameVariable>> Dwarf::frame_variables(uint64_t pc) const {
  std::vector<FrameVariable> out;
  if (!impl_->func_ranges_built) impl_->build_func_ranges();
  const auto& fr = impl_->func_ranges;
  auto it = std::upper_bound(fr.begin(), fr.end(), pc,
                             [](uint64_t x, const Impl::FuncRange& r) { return x < r.lo; });
  if (it == fr.begin() || pc >= std::prev(it)->hi)
    return Error(Errc::kNotFound, "no DWARF function covers pc " + to_hex(pc));
  Dwarf_Die fn, cu;
  if (dwarf_offdie(impl_->dw, std::prev(it)->die, &fn) == nullptr ||
      dwarf_diecu(&fn, &cu, nullptr, nullptr) == nullptr)
    return Error(Errc::kBadFormat, "DWARF function at " + to_hex(pc) + " is unreadable");
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes(&cu, pc, &scopes);
  if (n <= 0) return out;
  // Innermost scope first; the names of an inlined call's variables are its function's.
  std::string function;
  for (int i = n - 1; i >= 0; --i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
      function = die_string(&scopes[i], DW_AT_name);
    if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block)
      continue;
    Dwarf_Die child;
    if (dwarf_child(&scopes[i], &child) != 0) continue;
    size_t guard = 0;
    do {
      int ct = dwarf_tag(&child);
      if ((ct != DW_TAG_variable && ct != DW_TAG_formal_parameter) || ++guard > 100000) continue;
      Dwarf_Attribute loc;
      if (dwarf_attr(&child, DW_AT_location, &loc) == nullptr) continue;
      std::optional<std::vector<VarPiece>> pieces;
      int form = dwarf_whatform(&loc);
      if (form == DW_FORM_block1 || form == DW_FORM_block2 || form == DW_FORM_block4 ||
          form == DW_FORM_block || form == DW_FORM_exprloc) {
        Dwarf_Block b;
        if (dwarf_formblock(&loc, &b) == 0) pieces = eval_block(b);
      } else {
        Dwarf_Op* ops = nullptr;
        size_t len = 0;
        if (dwarf_getlocation_addr(&loc, pc, &ops, &len, 1) == 1) pieces = eval(ops, len);
      }
      if (!pieces) continue;
      Dwarf_Attribute ta;
      Dwarf_Die type;
      if (dwarf_attr_integrate(&child, DW_AT_type, &ta) == nullptr ||
          dwarf_formref_die(&ta, &type) == nullptr)
        continue;
      out.push_back({function, die_string(&child, DW_AT_name), TypeRef{dwarf_dieoffset(&type)},
                     std::move(*pieces)});
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  free(scopes);
  return out;
}

}  // namespace goref::binary
