// The amd64 recogniser (Zydis). The shapes, as the Go compiler emits them (1.21–1.27):
//
//   bound check   [NOP] CMP/TEST a, b ; JB|JBE|JAE|JA fail          (failure taken)
//                 [NOP] CMP/TEST a, b ; JA|… ok ; JMP fail           (loops: failure falls
//                                                                     through to a JMP)
//                 [NOP] CMP/TEST a, b ; JLE x ; [NOP] JB fail        (one compare serves a
//                                                                     signed condition too)
//                 JBE fail   at the head of a block whose flags come from a compare in the
//                            block that jumps there
//   fail block    [NOP] (MOV|LEA|XOR|MOVZX)* ; CALL runtime.panicIndex|…|panicBounds
//   nil check     TEST byte [reg], AL   (TESTB AX, (reg): displacement 0, no index)
//
// A conditional jump one side of which can only end in a bounds-panic call is a bound check,
// whatever produced its flags; the compare in front of it (when it is there) and the alignment
// padding the assembler puts before fusible compare-and-branch pairs belong to the site, so
// their samples count. Compares that lead to runtime.morestack (the stack check), panicdivide or
// panicshift are not bound checks: only the call target decides.
#include <Zydis/Zydis.h>

#include <algorithm>

#include "goref/annotate/check_sites.h"

namespace goref::annotate::detail {
namespace {

enum class Cls : uint8_t {
  kOther,
  kNop,      // padding
  kFiller,   // an argument move in a fail block
  kCompare,  // CMP / TEST (not a nil probe)
  kJcc,      // a conditional jump with a relative target
  kJmp,      // JMP rel
  kCall,     // CALL rel
  kNilProbe,
};

struct Insn {
  uint64_t addr = 0;
  uint64_t target = 0;  // absolute branch target for kJcc/kJmp/kCall
  uint8_t len = 0;
  Cls cls = Cls::kOther;
};

bool is_jcc(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_JB:
    case ZYDIS_MNEMONIC_JBE:
    case ZYDIS_MNEMONIC_JNB:
    case ZYDIS_MNEMONIC_JNBE:
    case ZYDIS_MNEMONIC_JZ:
    case ZYDIS_MNEMONIC_JNZ:
    case ZYDIS_MNEMONIC_JL:
    case ZYDIS_MNEMONIC_JLE:
    case ZYDIS_MNEMONIC_JNL:
    case ZYDIS_MNEMONIC_JNLE:
    case ZYDIS_MNEMONIC_JO:
    case ZYDIS_MNEMONIC_JNO:
    case ZYDIS_MNEMONIC_JS:
    case ZYDIS_MNEMONIC_JNS:
    case ZYDIS_MNEMONIC_JP:
    case ZYDIS_MNEMONIC_JNP:
      return true;
    default:
      return false;
  }
}

bool is_filler(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_MOV:
    case ZYDIS_MNEMONIC_MOVZX:
    case ZYDIS_MNEMONIC_MOVSX:
    case ZYDIS_MNEMONIC_MOVSXD:
    case ZYDIS_MNEMONIC_LEA:
    case ZYDIS_MNEMONIC_XOR:
      return true;
    default:
      return false;
  }
}

bool is_nil_probe(const ZydisDecodedInstruction& ins, const ZydisDecodedOperand* ops) {
  if (ins.operand_count_visible != 2 || ins.operand_width != 8) return false;
  const auto& mem = ops[0];
  const auto& reg = ops[1];
  // Displacement value, not its presence: [rbp] and [r13] need an explicit zero displacement.
  return mem.type == ZYDIS_OPERAND_TYPE_MEMORY && mem.mem.base != ZYDIS_REGISTER_NONE &&
         mem.mem.index == ZYDIS_REGISTER_NONE && mem.mem.disp.value == 0 &&
         (mem.mem.segment == ZYDIS_REGISTER_DS || mem.mem.segment == ZYDIS_REGISTER_SS) &&
         reg.type == ZYDIS_OPERAND_TYPE_REGISTER && reg.reg.value == ZYDIS_REGISTER_AL;
}

std::vector<Insn> decode(Bytes code, uint64_t addr) {
  ZydisDecoder dec;
  ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  std::vector<Insn> out;
  out.reserve(code.size() / 4);
  size_t off = 0;
  while (off < code.size()) {
    ZydisDecoderContext ctx;
    ZydisDecodedInstruction ins;
    Insn in{.addr = addr + off};
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, &ctx, code.data() + off,
                                                    code.size() - off, &ins))) {
      // Not code (or a truncated tail): skip one byte; the gap breaks any pattern across it.
      in.len = 1;
      out.push_back(in);
      ++off;
      continue;
    }
    in.len = ins.length;
    ZydisMnemonic m = ins.mnemonic;
    bool branch = is_jcc(m) || m == ZYDIS_MNEMONIC_JMP || m == ZYDIS_MNEMONIC_CALL;
    if (m == ZYDIS_MNEMONIC_NOP) {
      in.cls = Cls::kNop;
    } else if (is_filler(m)) {
      in.cls = Cls::kFiller;
    } else if (m == ZYDIS_MNEMONIC_CMP || m == ZYDIS_MNEMONIC_TEST || branch) {
      ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
      if (ZYAN_SUCCESS(ZydisDecoderDecodeOperands(&dec, &ctx, &ins, ops, ins.operand_count))) {
        if (m == ZYDIS_MNEMONIC_TEST && is_nil_probe(ins, ops)) {
          in.cls = Cls::kNilProbe;
        } else if (m == ZYDIS_MNEMONIC_CMP || m == ZYDIS_MNEMONIC_TEST) {
          in.cls = Cls::kCompare;
        } else if (ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[0].imm.is_relative) {
          ZyanU64 target = 0;
          if (ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&ins, &ops[0], in.addr, &target))) {
            in.target = target;
            in.cls = m == ZYDIS_MNEMONIC_CALL  ? Cls::kCall
                     : m == ZYDIS_MNEMONIC_JMP ? Cls::kJmp
                                               : Cls::kJcc;
          }
        }
      }
    }
    out.push_back(in);
    off += ins.length;
  }
  return out;
}

bool adjacent(const std::vector<Insn>& insns, size_t a, size_t b) {
  return insns[a].addr + insns[a].len == insns[b].addr;
}

class Matcher {
 public:
  Matcher(const std::vector<Insn>& insns, std::span<const uint64_t> panics)
      : insns_(insns), panics_(panics) {}

  // Index of the instruction starting exactly at addr, or npos.
  size_t at(uint64_t addr) const {
    auto it = std::lower_bound(insns_.begin(), insns_.end(), addr,
                               [](const Insn& i, uint64_t a) { return i.addr < a; });
    return it != insns_.end() && it->addr == addr ? size_t(it - insns_.begin()) : npos;
  }

  bool is_panic_call(const Insn& in) const {
    return in.cls == Cls::kCall && std::binary_search(panics_.begin(), panics_.end(), in.target);
  }

  // The bounds-panic call that execution from instruction k reaches through padding, argument
  // moves and at most two unconditional jumps, or npos. Bounded: a fail block is a handful of
  // instructions, and garbage must not make this loop.
  size_t panic_reached_from(size_t k) const {
    int jumps = 0;
    for (int steps = 0; steps < 16 && k < insns_.size(); ++steps) {
      const Insn& in = insns_[k];
      switch (in.cls) {
        case Cls::kCall:
          return is_panic_call(in) ? k : npos;
        case Cls::kNop:
        case Cls::kFiller:
          ++k;
          break;
        case Cls::kJmp:
          if (++jumps > 2) return npos;
          k = at(in.target);
          break;
        default:
          return npos;
      }
    }
    return npos;
  }

  static constexpr size_t npos = ~size_t{0};

 private:
  const std::vector<Insn>& insns_;
  std::span<const uint64_t> panics_;
};

}  // namespace

FunctionChecks find_check_sites_amd64(Bytes code, uint64_t addr,
                                      std::span<const uint64_t> panic_entries) {
  std::vector<Insn> insns = decode(code, addr);
  Matcher m(insns, panic_entries);
  FunctionChecks out;
  std::vector<CheckSite>& sites = out.sites;
  std::vector<bool> reached(insns.size());
  for (size_t j = 0; j < insns.size(); ++j) {
    const Insn& in = insns[j];
    if (in.cls == Cls::kNilProbe) {
      sites.push_back({CheckKind::kNil, in.addr, in.addr, in.addr, in.addr + in.len});
      continue;
    }
    if (in.cls != Cls::kJcc) continue;
    size_t call = m.panic_reached_from(m.at(in.target));
    if (call == Matcher::npos) call = m.panic_reached_from(j + 1);
    if (call == Matcher::npos) continue;
    reached[call] = true;
    // Back over padding and up to two other conditional jumps on the same flags to the compare;
    // without one (flags from another block) the site is the jump and its padding.
    size_t first = j, cmp = j;
    for (size_t k = j, jumps = 0; k > 0 && adjacent(insns, k - 1, k); --k) {
      Cls prev = insns[k - 1].cls;
      if (prev == Cls::kCompare) {
        first = cmp = k - 1;
        break;
      }
      if (prev == Cls::kJcc ? ++jumps > 2 : prev != Cls::kNop) break;
    }
    while (first > 0 && insns[first - 1].cls == Cls::kNop && adjacent(insns, first - 1, first))
      --first;
    sites.push_back(
        {CheckKind::kBounds, insns[cmp].addr, in.addr, insns[first].addr, in.addr + in.len});
    // Two checks on one compare share its bytes; the later one starts where the earlier ends,
    // so every byte belongs to at most one site.
    if (sites.size() > 1 && sites.back().begin < sites[sites.size() - 2].end)
      sites.back().begin = sites[sites.size() - 2].end;
  }
  for (size_t k = 0; k < insns.size(); ++k)
    if (m.is_panic_call(insns[k])) {
      ++out.panic_calls;
      out.panic_calls_reached += reached[k];
    }
  return out;
}

}  // namespace goref::annotate::detail
