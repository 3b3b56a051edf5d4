// amd64: PTRACE_GETREGS fills struct user_regs_struct, which includes fs_base (the TLS base Go
// uses for g on amd64) since the kernel keeps it with the general registers.
#if defined(__x86_64__)

#include <sys/ptrace.h>
#include <sys/user.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <tuple>

#include "goref/target/ptrace_regs.h"

namespace goref::target {

Result<Registers> ptrace_registers(Tid tid) {
  user_regs_struct u;
  std::memset(&u, 0, sizeof u);
  if (::ptrace(PTRACE_GETREGS, tid.value(), nullptr, &u) != 0) {
    int err = errno;
    return Error(err == ESRCH ? Errc::kNoSuchProcess : Errc::kIo,
                 "registers of thread " + tid.str() + ": " +
                     (err == ESRCH ? std::string("thread exited or is not stopped")
                                   : std::string(std::strerror(err))));
  }
  Registers r;
  r.arch = Arch::kAmd64;
  r.pc = u.rip;
  r.sp = u.rsp;
  r.fp = u.rbp;
  r.lr = 0;
  r.tls_base = u.fs_base;
  // All of user_regs_struct, in the kernel's order (r15 … gs), as the header of arch.h states.
  static_assert(sizeof(u) % sizeof(uint64_t) == 0);
  constexpr size_t n = sizeof(u) / sizeof(uint64_t);
  static_assert(n <= std::tuple_size_v<decltype(r.gpr)>);
  std::memcpy(r.gpr.data(), &u, sizeof u);
  r.ngpr = static_cast<uint8_t>(n);
  return r;
}

}  // namespace goref::target

#endif  // __x86_64__
