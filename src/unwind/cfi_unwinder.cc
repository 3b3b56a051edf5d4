#include "goref/unwind/cfi_unwinder.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "goref/base/addr.h"

namespace goref::unwind {

namespace {

// DWARF register numbers on x86-64 (System V psABI).
constexpr unsigned kAmd64Rsp = 7;

Unwound& stop(Unwound& u, StopReason r, std::string detail) {
  u.stop = r;
  u.detail = std::move(detail);
  return u;
}

std::string at(size_t index, uint64_t pc, std::string_view fn = {}) {
  std::string s = "frame " + std::to_string(index) + " pc " + to_hex(pc);
  if (!fn.empty()) s += " (" + std::string(fn) + ")";
  return s;
}

// Evaluates the few DWARF expression operations libdw produces for CFI rules (register plus
// offset, CFA plus offset, constants). value_only: the expression ended in DW_OP_stack_value.
std::optional<uint64_t> eval(const Dwarf_Op* ops, size_t nops, uint64_t sp, uint64_t cfa,
                             bool* value_only) {
  uint64_t stack[8];
  size_t n = 0;
  *value_only = false;
  auto push = [&](uint64_t v) {
    if (n == std::size(stack)) return false;
    stack[n++] = v;
    return true;
  };
  for (size_t i = 0; i < nops; ++i) {
    const Dwarf_Op& op = ops[i];
    switch (op.atom) {
      case DW_OP_call_frame_cfa:
        if (!push(cfa)) return std::nullopt;
        break;
      case DW_OP_bregx:
        if (op.number != kAmd64Rsp || !push(sp + op.number2)) return std::nullopt;
        break;
      case DW_OP_breg7:
        if (!push(sp + op.number)) return std::nullopt;
        break;
      case DW_OP_plus_uconst:
        if (n == 0) return std::nullopt;
        stack[n - 1] += op.number;
        break;
      case DW_OP_constu:
      case DW_OP_consts:
        if (!push(op.number)) return std::nullopt;
        break;
      case DW_OP_plus:
      case DW_OP_minus:
        if (n < 2) return std::nullopt;
        stack[n - 2] =
            op.atom == DW_OP_plus ? stack[n - 2] + stack[n - 1] : stack[n - 2] - stack[n - 1];
        --n;
        break;
      case DW_OP_stack_value:
        *value_only = true;
        break;
      default:
        if (op.atom >= DW_OP_lit0 && op.atom <= DW_OP_lit31) {
          if (!push(op.atom - DW_OP_lit0)) return std::nullopt;
          break;
        }
        return std::nullopt;
    }
  }
  if (n == 0) return std::nullopt;
  return stack[n - 1];
}

struct FrameDeleter {
  void operator()(Dwarf_Frame* f) const { std::free(f); }
};

}  // namespace

struct CfiUnwinder::Impl {
  int fd = -1;
  Dwarf* dw = nullptr;
  Dwarf_CFI* cfi = nullptr;  // owned by dw
  const binary::Pclntab* tab = nullptr;
  uint64_t bias = 0;
  ~Impl() {
    if (dw) dwarf_end(dw);
    if (fd >= 0) ::close(fd);
  }
};

CfiUnwinder::CfiUnwinder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CfiUnwinder::~CfiUnwinder() = default;

Result<std::unique_ptr<CfiUnwinder>> CfiUnwinder::open(const std::string& exe,
                                                       const binary::Pclntab& tab,
                                                       uint64_t load_bias, target::Arch arch) {
  if (arch != target::Arch::kAmd64)
    return Error(Errc::kUnsupported, "CFI unwinding is implemented for amd64 only");
  auto impl = std::make_unique<Impl>();
  impl->tab = &tab;
  impl->bias = load_bias;
  impl->fd = ::open(exe.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl->fd < 0) return Error(Errc::kIo, exe + ": " + std::strerror(errno));
  impl->dw = dwarf_begin(impl->fd, DWARF_C_READ);
  if (!impl->dw) return Error(Errc::kNoDwarf, exe + ": no DWARF: " + dwarf_errmsg(-1));
  impl->cfi = dwarf_getcfi(impl->dw);
  if (!impl->cfi) return Error(Errc::kNoDwarf, exe + ": no .debug_frame: " + dwarf_errmsg(-1));
  return std::unique_ptr<CfiUnwinder>(new CfiUnwinder(std::move(impl)));
}

Unwound CfiUnwinder::unwind(const StackImage& stack, StartState start, size_t max_frames) const {
  Unwound u;
  const binary::Pclntab& tab = *impl_->tab;
  const uint64_t bias = impl_->bias;
  uint64_t pc = start.pc, sp = start.sp;
  bool injected_below = false;
  for (size_t i = 0;; ++i) {
    if (i >= max_frames) return stop(u, StopReason::kDepthLimit, std::to_string(i) + " frames");
    auto f = tab.find_func(pc - bias);
    if (!f) return stop(u, StopReason::kNoFunc, at(i, pc) + " is in no Go function");
    PhysFrame fr{pc, sp, 0, f->entry() + bias, f->name(), injected_below};
    std::string_view name = fr.function;
    if (f->pcsp() == 0) {
      u.frames.push_back(fr);
      return stop(u, StopReason::kNoPcsp, at(i, pc, name) + ": no pcsp table");
    }
    if (name == "runtime.systemstack" || name == "runtime.morestack" || name == "runtime.mcall") {
      u.frames.push_back(fr);
      return stop(u, StopReason::kStackSwitch, at(i, pc, name));
    }
    if (!stack.contains(Addr(sp), 0))
      return stop(u, StopReason::kOutsideStack, at(i, pc, name) + ": sp outside the stack");
    // A return address is looked up inside its call (pc-1), the DWARF convention.
    uint64_t lookup = (i == 0 || injected_below) ? pc : pc - 1;
    Dwarf_Frame* raw = nullptr;
    if (dwarf_cfi_addrframe(impl_->cfi, lookup - bias, &raw) != 0 || !raw)
      return stop(u, StopReason::kBadFrame, at(i, pc, name) + ": no CFI: " + dwarf_errmsg(-1));
    std::unique_ptr<Dwarf_Frame, FrameDeleter> frame(raw);
    Dwarf_Op* ops = nullptr;
    size_t nops = 0;
    bool value_only = false;
    std::optional<uint64_t> cfa;
    if (dwarf_frame_cfa(frame.get(), &ops, &nops) == 0 && nops > 0)
      cfa = eval(ops, nops, sp, 0, &value_only);
    if (!cfa || *cfa <= sp || *cfa - sp > stack.bytes.size())
      return stop(u, StopReason::kBadFrame, at(i, pc, name) + ": unusable CFA rule");
    fr.fp = *cfa;
    u.frames.push_back(fr);

    uint8_t flag = f->flag();
    if (flag & binary::kFuncFlagTopFrame) return stop(u, StopReason::kTopFrame, {});
    if (i > 0 && (flag & binary::kFuncFlagSPWrite) && name != "runtime.cgocallback")
      return stop(u, StopReason::kSpWrite, at(i, pc, name));

    int ra_reg = dwarf_frame_info(frame.get(), nullptr, nullptr, nullptr);
    Dwarf_Op mem[3];
    if (ra_reg < 0 || dwarf_frame_register(frame.get(), ra_reg, mem, &ops, &nops) != 0 || nops == 0)
      return stop(u, StopReason::kBadFrame, at(i, pc, name) + ": no return address rule");
    auto loc = eval(ops, nops, sp, *cfa, &value_only);
    if (!loc || value_only)
      return stop(u, StopReason::kBadFrame, at(i, pc, name) + ": unusable return address rule");
    auto ra = stack.word(Addr(*loc));
    if (!ra)
      return stop(u, StopReason::kOutsideStack,
                  at(i, pc, name) + ": return address slot " + to_hex(*loc) + " outside the stack");
    if (*ra == 0) return stop(u, StopReason::kBadFrame, at(i, pc, name) + ": return address 0");
    injected_below = name == "runtime.sigpanic" || name == "runtime.asyncPreempt" ||
                     name == "runtime.debugCallV2";
    pc = *ra;
    sp = *cfa;
  }
}

}  // namespace goref::unwind
