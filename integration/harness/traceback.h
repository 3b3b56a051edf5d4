// A parser of the Go runtime's goroutine traceback text: what runtime.Stack(buf, true), a
// SIGQUIT and an unrecovered panic print (runtime/traceback.go: goroutineheader, traceback2,
// printcreatedby1, printAncestorTraceback), as every Go version 1.21–1.27 prints it. Tests use
// it to compare goref's dumps with the runtime's own, so it keeps every detail the text carries
// and never guesses: lines it does not understand are kept in TbGoroutine::unparsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace goref::testing {

struct TbFrame {
  // As printed: shape names replaced by "[...]" ("main.genericWait[...]",
  // "main.(*box[...]).wait"), and runtime.gopanic printed as "panic".
  std::string function;
  std::string args;  // the text between the parentheses: "0xc00003a7b8?, {0x1, 0x2}" or "..."
  std::string file;  // empty for a non-Go (cgo) frame without symbolizer information
  int line = 0;
  std::string offset;    // "+0x1d"; empty for inlined frames and PCs at a function's entry
  bool inlined = false;  // the runtime prints "(...)" for a frame inlined into its caller
  bool non_go = false;   // a cgo frame ("non-Go function at pc=0x…" or symbolizer output)
};

struct TbGoroutine {
  uint64_t id = 0;
  // The wait reason ("chan receive") or the status ("running", "runnable", "syscall"), without
  // the " (scan)" and " (leaked)" markers, which are reported separately.
  std::string status;
  int wait_minutes = -1;  // ", N minutes": printed only from 1 minute on
  bool locked_to_thread = false;
  bool scan = false;             // " (scan)": the GC owned the stack when the dump was taken
  bool leaked = false;           // " (leaked)" (Go 1.26+ goroutine leak detection)
  int64_t synctest_bubble = -1;  // ", synctest bubble N" (Go 1.24+)
  // The label text between the braces, as printed: Go 1.26 `"k": "v"` inside the brackets after
  // "labels:", Go 1.27 `k: v` (quoted only where needed) after the brackets. Empty if none.
  std::string labels;
  std::vector<TbFrame> frames;
  std::optional<TbFrame> created_by;  // function, file, line, offset
  uint64_t created_by_goroutine = 0;  // "created by f in goroutine N" (Go 1.21+); 0 if absent
  bool frames_elided = false;         // "...N frames elided..." or "...additional frames elided..."
  int elided_count = 0;               // N, when printed
  size_t elided_at = 0;               // index in frames where the marker was printed
  bool stack_unavailable = false;     // "goroutine running on other thread; stack unavailable"
  bool has_ancestors = false;         // "[originating from goroutine N]:" sections followed
  std::vector<std::string> unparsed;  // lines of this goroutine the parser did not understand
};

// Parses every "goroutine N [...]:" section of text. Text before the first header (a panic
// message, "fatal error: ...") is ignored; so are the ancestor sections printed with
// GODEBUG=tracebackancestors (has_ancestors says they were there).
std::vector<TbGoroutine> parse_traceback(std::string_view text);

// One goroutine in the runtime's own format, for failure messages (args and offsets included).
std::string format_goroutine(const TbGoroutine& g);

}  // namespace goref::testing
