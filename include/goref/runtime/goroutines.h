// The goroutines of a process, read from runtime.allgs/allglen, and the Ms (threads) from
// runtime.allm, with the runtime's own names for statuses and wait reasons
// (runtime.gStatusStrings, runtime.waitReasonStrings), so a dump says exactly what the runtime
// would. Dead goroutines are skipped as the runtime skips them. A goroutine that cannot be read
// is reported in warnings; the others are still returned.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "goref/base/addr.h"
#include "goref/base/ids.h"
#include "goref/base/result.h"
#include "goref/runtime/process.h"

namespace goref::runtime {

// runtime._G* status values (the same 0–11 numbering in Go 1.21–1.27; _Gleaked and
// _Gdeadextra exist from Go 1.26).
inline constexpr uint32_t k_Gidle = 0;
inline constexpr uint32_t k_Grunnable = 1;
inline constexpr uint32_t k_Grunning = 2;
inline constexpr uint32_t k_Gsyscall = 3;
inline constexpr uint32_t k_Gwaiting = 4;
inline constexpr uint32_t k_Gdead = 6;
inline constexpr uint32_t k_Gcopystack = 8;
inline constexpr uint32_t k_Gpreempted = 9;
inline constexpr uint32_t k_Gleaked = 10;     // Go 1.26+
inline constexpr uint32_t k_Gdeadextra = 11;  // Go 1.26+
inline constexpr uint32_t k_Gscan = 0x1000;

struct Gobuf {
  uint64_t sp = 0, pc = 0, bp = 0, lr = 0, ctxt = 0;
};

struct Goroutine {
  Addr addr;  // the runtime.g
  uint64_t goid = 0;
  uint32_t status = 0;  // without _Gscan
  bool scan = false;    // _Gscan was set
  uint8_t waitreason = 0;
  int64_t waitsince = 0;  // nanotime when it started waiting; 0 if unknown
  bool locked_to_thread = false;
  uint64_t parent_goid = 0;
  uint64_t gopc = 0, startpc = 0;  // runtime addresses
  Addr m;                          // the M running it, if any
  AddrRange stack;
  Gobuf sched;
  uint64_t syscallsp = 0, syscallpc = 0, syscallbp = 0;
  bool running_cleanups = false;  // Go 1.25+: the cleanup goroutine is running user code
};

// An M of runtime.allm: a thread (procid is its Linux tid) and what it runs.
struct ThreadM {
  Addr addr;
  Tid tid{0};
  Addr curg;  // the user goroutine it runs, if any
  Addr g0, gsignal;
  uint64_t vdso_sp = 0, vdso_pc = 0;  // set while the thread is inside a VDSO call
};

struct Goroutines {
  std::vector<Goroutine> gs;  // allgs order
  std::vector<ThreadM> ms;
  std::vector<std::string> status_strings;  // runtime.gStatusStrings
  std::vector<std::string> wait_reasons;    // runtime.waitReasonStrings
  std::vector<std::string> warnings;
  uint64_t allglen = 0;
};

// At most this many goroutines are read; a larger allglen is taken as corrupt.
inline constexpr uint64_t kMaxGoroutines = 50'000'000;

[[nodiscard]] Result<Goroutines> read_goroutines(const Process& p);

// "chan receive", "select", "running": the status as the runtime's traceback header prints it.
[[nodiscard]] std::string status_string(const Goroutines& all, const Goroutine& g);

}  // namespace goref::runtime
