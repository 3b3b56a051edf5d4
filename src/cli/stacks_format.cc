#include "cli/stacks_format.h"

#include <fmt/format.h>

#include <iterator>

#include "cli/json.h"

namespace goref::cli {
namespace {

using runtime::GoroutineTrace;
using runtime::LogicalFrame;

std::string_view source_name(runtime::StackStart s) {
  switch (s) {
    case runtime::StackStart::kSched:
      return "sched";
    case runtime::StackStart::kSyscall:
      return "syscall";
    case runtime::StackStart::kVdso:
      return "vdso";
    case runtime::StackStart::kRegisters:
      return "registers";
    case runtime::StackStart::kG0:
      return "g0";
    case runtime::StackStart::kSignal:
      return "signal";
  }
  return "?";
}

std::string header(const GoroutineTrace& t) {
  const auto& g = *t.g;
  std::string s = fmt::format("goroutine {} [{}", g.goid, t.status);
  if (g.status == runtime::k_Gleaked) s += " (leaked)";
  if (g.scan) s += " (scan)";
  if (t.wait_minutes >= 1) s += fmt::format(", {} minutes", t.wait_minutes);
  if (g.locked_to_thread) s += ", locked to thread";
  return s + "]:\n";
}

void frame_text(const LogicalFrame& f, std::string& out) {
  if (f.inlined) {
    fmt::format_to(std::back_inserter(out), "{}(...)\n\t{}:{}\n", f.function, f.file, f.line);
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}({})\n\t{}:{}", f.function, f.args, f.file, f.line);
  if (f.pc > f.entry) fmt::format_to(std::back_inserter(out), " +{:#x}", f.pc - f.entry);
  out += "\n";
}

}  // namespace

void format_goroutine_text(const GoroutineTrace& t, const StacksFormatOptions& o, bool first,
                           std::string& out) {
  if (!first) out += "\n";
  out += header(t);
  std::vector<const LogicalFrame*> frames;
  for (const auto& f : t.frames)
    if (o.all_frames || f.shown) frames.push_back(&f);
  // traceback1: the innermost 50 and the outermost 50 frames, the middle elided.
  constexpr size_t inner = runtime::kTracebackInnerFrames, outer = runtime::kTracebackOuterFrames;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames.size() > inner + outer && i == inner) {
      fmt::format_to(std::back_inserter(out), "...{} frames elided...\n",
                     frames.size() - inner - outer);
      i = frames.size() - outer;
    }
    frame_text(*frames[i], out);
  }
  if (!t.error.empty())
    fmt::format_to(std::back_inserter(out), "\t{}: {}\n",
                   t.frames.empty() ? "stack unavailable" : "stack incomplete", t.error);
  if (t.created_by) {
    const auto& c = *t.created_by;
    out += "created by " + c.function;
    if (c.goroutine != 0) fmt::format_to(std::back_inserter(out), " in goroutine {}", c.goroutine);
    fmt::format_to(std::back_inserter(out), "\n\t{}:{}", c.file, c.line);
    if (c.pc > c.entry) fmt::format_to(std::back_inserter(out), " +{:#x}", c.pc - c.entry);
    out += "\n";
  }
}

void format_goroutine_json(const GoroutineTrace& t, bool first, std::string& out) {
  if (!first) out += ",";
  const auto& g = *t.g;
  fmt::format_to(
      std::back_inserter(out),
      "\n{{\"id\":{},\"status\":{},\"wait_minutes\":{},\"locked_to_thread\":{},\"system\":{},"
      "\"stack_from\":\"{}\",\"frames\":[",
      g.goid, json_string(t.status), t.wait_minutes, g.locked_to_thread, t.system,
      source_name(t.source));
  for (size_t i = 0; i < t.frames.size(); ++i) {
    const auto& f = t.frames[i];
    fmt::format_to(std::back_inserter(out),
                   "{}{{\"function\":{},\"file\":{},\"line\":{},\"pc\":\"{:#x}\",\"inlined\":{},"
                   "\"hidden\":{}}}",
                   i ? "," : "", json_string(f.function), json_string(f.file), f.line, f.pc,
                   f.inlined, !f.shown);
  }
  out += "]";
  if (t.created_by) {
    const auto& c = *t.created_by;
    fmt::format_to(std::back_inserter(out),
                   ",\"created_by\":{{\"function\":{},\"file\":{},\"line\":{},\"pc\":\"{:#x}\","
                   "\"goroutine\":{}}}",
                   json_string(c.function), json_string(c.file), c.line, c.pc, c.goroutine);
  }
  if (!t.error.empty()) out += ",\"error\":" + json_string(t.error);
  out += "}";
}

}  // namespace goref::cli
