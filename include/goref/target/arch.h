// The architecture layer: what differs between amd64 and arm64 for reading a target (register
// sets, pointer size, which register holds what). Nothing outside target/arch_*.cc and this
// header may assume a particular architecture.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace goref::target {

enum class Arch { kAmd64, kArm64 };

std::string_view arch_name(Arch a);

// The architecture goref itself was built for (a live target is always the same).
Arch host_arch();

// A thread's registers, in an arch-neutral shape. gpr holds the general-purpose registers in
// the kernel's order (user_regs_struct on amd64, user_pt_regs.regs on arm64) so a conservative
// scan can look at all of them; the named accessors pick out what unwinding needs.
struct Registers {
  Arch arch = Arch::kAmd64;
  uint64_t pc = 0;        // rip / pc
  uint64_t sp = 0;        // rsp / sp
  uint64_t fp = 0;        // rbp / x29
  uint64_t lr = 0;        // 0 on amd64 / x30
  uint64_t tls_base = 0;  // fs_base / tpidr_el0
  std::array<uint64_t, 34> gpr{};
  uint8_t ngpr = 0;
};

// Where the kernel's signal frame (rt_sigframe) keeps the interrupted thread's pc, sp and fp, as
// offsets from the CFA of the signal trampoline's frame: on amd64 the kernel leaves the handler
// with sp at the frame's return-address slot (pretcode), so the frame starts at CFA - 8, and the
// ucontext's sigcontext follows pretcode and ucontext's flags, link and stack fields.
// nullopt where goref does not know the layout (arm64, for now).
struct SignalFrameOffsets {
  uint64_t pc = 0, sp = 0, fp = 0;
};
[[nodiscard]] std::optional<SignalFrameOffsets> signal_frame_offsets(Arch a);

}  // namespace goref::target
