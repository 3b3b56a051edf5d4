// The two output formats of goref stacks. Text is the runtime's own traceback format
// (goroutineheader, traceback2, printcreatedby), so existing tools and eyes read it as a SIGQUIT
// dump; JSON lists every logical frame with a "hidden" mark for the ones the text leaves out.
#pragma once

#include <string>
#include <vector>

#include "goref/runtime/traceback.h"

namespace goref::cli {

struct StacksFormatOptions {
  bool all_frames = false;  // text: show the runtime frames the runtime hides
  bool system = false;      // include the runtime's own goroutines
};

[[nodiscard]] std::string format_stacks_text(const std::vector<runtime::GoroutineTrace>& traces,
                                             const StacksFormatOptions& o);
[[nodiscard]] std::string format_stacks_json(const std::vector<runtime::GoroutineTrace>& traces,
                                             const StacksFormatOptions& o);

}  // namespace goref::cli
