// goref's exit codes, documented in the README. Scripts can rely on them.
#pragma once

#include "goref/base/result.h"

namespace goref::cli {

inline constexpr int kExitOk = 0;       // the full answer was produced
inline constexpr int kExitPartial = 1;  // an answer was produced, but parts could not be read
inline constexpr int kExitFailed = 2;   // no answer: the target or input cannot be analysed
inline constexpr int kExitUsage = 64;   // the command line is wrong

inline int exit_code_for(const Error& e) {
  return e.code() == Errc::kUsage ? kExitUsage : kExitFailed;
}

}  // namespace goref::cli
