#include "goref/target/arch.h"

namespace goref::target {

std::string_view arch_name(Arch a) {
  switch (a) {
    case Arch::kAmd64:
      return "amd64";
    case Arch::kArm64:
      return "arm64";
  }
  return "unknown";
}

Arch host_arch() {
#if defined(__x86_64__)
  return Arch::kAmd64;
#elif defined(__aarch64__)
  return Arch::kArm64;
#else
#error "goref supports amd64 and arm64 hosts"
#endif
}

std::optional<SignalFrameOffsets> signal_frame_offsets(Arch a) {
  if (a != Arch::kAmd64) return std::nullopt;
  // rt_sigframe: pretcode (8), ucontext {uc_flags 8, uc_link 8, uc_stack 24}, then sigcontext
  // {r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip}: rbp is word 10, rsp 15, rip 16.
  // Offsets are from the frame start, CFA - 8.
  constexpr uint64_t kSigcontext = 8 + 40;
  constexpr uint64_t kCfaToFrame = 8;
  return SignalFrameOffsets{kSigcontext + 16 * 8 - kCfaToFrame, kSigcontext + 15 * 8 - kCfaToFrame,
                            kSigcontext + 10 * 8 - kCfaToFrame};
}

}  // namespace goref::target
