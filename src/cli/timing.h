// Wall-clock timing for the commands' -v reports (monotonic, so a clock change cannot skew it).
#pragma once

#include <chrono>

namespace goref::cli {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace goref::cli
