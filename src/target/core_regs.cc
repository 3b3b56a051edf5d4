#include "goref/target/core_regs.h"

#include <string>

namespace goref::target {
namespace {

// amd64 user_regs_struct (arch/x86/include/asm/user_64.h): r15 r14 r13 r12 rbp rbx r11 r10 r9 r8
// rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs.
constexpr size_t kAmd64Regs = 27;
constexpr size_t kAmd64Rbp = 4;
constexpr size_t kAmd64Rip = 16;
constexpr size_t kAmd64Rsp = 19;
constexpr size_t kAmd64FsBase = 21;

// arm64 user_pt_regs (arch/arm64/include/uapi/asm/ptrace.h): x0..x30, sp, pc, pstate.
constexpr size_t kArm64Regs = 34;
constexpr size_t kArm64Fp = 29;
constexpr size_t kArm64Lr = 30;
constexpr size_t kArm64Sp = 31;
constexpr size_t kArm64Pc = 32;

}  // namespace

size_t gregset_size(Arch arch) {
  switch (arch) {
    case Arch::kAmd64:
      return kAmd64Regs * 8;
    case Arch::kArm64:
      return kArm64Regs * 8;
  }
  return 0;
}

Result<Registers> registers_from_gregset(Arch arch, Bytes reg) {
  size_t n = gregset_size(arch) / 8;
  if (reg.size() < n * 8)
    return Error(Errc::kBadFormat, "register set of " + std::to_string(reg.size()) +
                                       " bytes, expected " + std::to_string(n * 8));
  Registers r;
  r.arch = arch;
  static_assert(std::tuple_size_v<decltype(r.gpr)> >= kArm64Regs);
  for (size_t i = 0; i < n; ++i) r.gpr[i] = *load<uint64_t>(reg, i * 8);
  r.ngpr = static_cast<uint8_t>(n);
  switch (arch) {
    case Arch::kAmd64:
      r.pc = r.gpr[kAmd64Rip];
      r.sp = r.gpr[kAmd64Rsp];
      r.fp = r.gpr[kAmd64Rbp];
      r.tls_base = r.gpr[kAmd64FsBase];
      break;
    case Arch::kArm64:
      r.pc = r.gpr[kArm64Pc];
      r.sp = r.gpr[kArm64Sp];
      r.fp = r.gpr[kArm64Fp];
      r.lr = r.gpr[kArm64Lr];
      break;
  }
  return r;
}

}  // namespace goref::target
