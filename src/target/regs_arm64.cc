// arm64: there is no PTRACE_GETREGS; the general registers come from PTRACE_GETREGSET
// NT_PRSTATUS (struct user_pt_regs: x0-x30, sp, pc, pstate) and the TLS base (tpidr_el0, where
// Go keeps g's TLS slot base) from NT_ARM_TLS.
#if defined(__aarch64__)

#include <asm/ptrace.h>
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "goref/target/ptrace_regs.h"

namespace goref::target {
namespace {

Error regs_error(Tid tid, const char* what, int err) {
  return Error(err == ESRCH ? Errc::kNoSuchProcess : Errc::kIo,
               std::string(what) + " of thread " + tid.str() + ": " + std::strerror(err));
}

}  // namespace

Result<Registers> ptrace_registers(Tid tid) {
  user_pt_regs u;
  std::memset(&u, 0, sizeof u);
  struct iovec iov = {&u, sizeof u};
  if (::ptrace(PTRACE_GETREGSET, tid.value(), reinterpret_cast<void*>(NT_PRSTATUS), &iov) != 0)
    return regs_error(tid, "registers", errno);
  // NT_ARM_TLS is tpidr_el0, followed by tpidr2_el0 on kernels with SME.
  uint64_t tls[2] = {0, 0};
  struct iovec tiov = {tls, sizeof tls};
  if (::ptrace(PTRACE_GETREGSET, tid.value(), reinterpret_cast<void*>(NT_ARM_TLS), &tiov) != 0)
    return regs_error(tid, "TLS register", errno);

  Registers r;
  r.arch = Arch::kArm64;
  r.pc = u.pc;
  r.sp = u.sp;
  r.fp = u.regs[29];
  r.lr = u.regs[30];
  r.tls_base = tls[0];
  for (int i = 0; i < 31; ++i) r.gpr[i] = u.regs[i];
  r.gpr[31] = u.sp;
  r.gpr[32] = u.pc;
  r.gpr[33] = u.pstate;
  r.ngpr = 34;
  return r;
}

}  // namespace goref::target

#endif  // __aarch64__
