// The two output formats of goref stacks. Text is the runtime's own traceback format
// (goroutineheader, traceback2, printcreatedby), so existing tools and eyes read it as a SIGQUIT
// dump; JSON lists every logical frame with a "hidden" mark for the ones the text leaves out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "goref/runtime/traceback.h"

namespace goref::cli {

struct StacksFormatOptions {
  bool all_frames = false;  // text: show the runtime frames the runtime hides
  bool system = false;      // include the runtime's own goroutines
};

// Append one goroutine to out; first: no separator before it. A dump is written goroutine by
// goroutine, so it never has to be held whole. JSON: kStacksJsonOpen, the goroutines,
// kStacksJsonClose.
void format_goroutine_text(const runtime::GoroutineTrace& t, const StacksFormatOptions& o,
                           bool first, std::string& out);
void format_goroutine_json(const runtime::GoroutineTrace& t, bool first, std::string& out);
inline constexpr std::string_view kStacksJsonOpen = "{\"goroutines\":[";
inline constexpr std::string_view kStacksJsonClose = "\n]}\n";

}  // namespace goref::cli
