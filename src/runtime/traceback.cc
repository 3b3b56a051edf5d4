#include "goref/runtime/traceback.h"

#include <fmt/format.h>

#include <array>
#include <unordered_map>

#include "goref/binary/pclntab.h"
#include "goref/runtime/goroutine_unwind.h"

namespace goref::runtime {
namespace {

using unwind::StopReason;
using unwind::Unwinder;
using unwind::Unwound;

// internal/abi TraceArgs* (the same in Go 1.21–1.27): the FUNCDATA_ArgInfo byte code.
constexpr uint8_t kArgsEndSeq = 0xff;
constexpr uint8_t kArgsStartAgg = 0xfe;
constexpr uint8_t kArgsEndAgg = 0xfd;
constexpr uint8_t kArgsDotdotdot = 0xfc;
constexpr uint8_t kArgsOffsetTooLarge = 0xfb;
constexpr size_t kArgsMaxLen = (5 * 3 + 2) * 10 + 1;  // TraceArgsMaxLen
constexpr uint32_t kFingRunningFinalizer = 2;         // runtime.fingRunningFinalizer

std::string_view trim_runtime(std::string_view name) {
  return name.starts_with("runtime.") ? name.substr(8) : std::string_view();
}

// isExportedRuntime: runtime.Foo or runtime.(*Foo).Bar, exported method on an exported type.
bool is_exported_runtime(std::string_view name) {
  if (!name.starts_with("runtime.")) return false;
  name = trim_runtime(name);
  std::string_view rcvr;
  size_t dot = name.rfind('.');
  if (dot != std::string_view::npos) {
    rcvr = name.substr(0, dot);
    name = name.substr(dot + 1);
    if (rcvr.size() >= 3 && rcvr[0] == '(' && rcvr[1] == '*' && rcvr.back() == ')')
      rcvr = rcvr.substr(2, rcvr.size() - 3);
  }
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  return !name.empty() && upper(name[0]) && (rcvr.empty() || upper(rcvr[0]));
}

// printFuncName: runtime.gopanic prints as "panic".
std::string print_name(std::string_view raw) {
  if (raw == "runtime.gopanic") return "panic";
  return func_name_for_print(raw);
}

// A function's FUNCDATA_ArgInfo byte code and FUNCDATA_ArgLiveInfo bitmaps, read once.
struct ArgInfo {
  std::vector<std::byte> code;  // empty: the function has no argument info
  std::vector<std::byte> live;
};

ArgInfo read_arg_info(const binary::Pclntab& tab, const binary::Func& f) {
  ArgInfo ai;
  auto info_addr = f.funcdata(binary::kFuncdataArgInfo);
  if (!info_addr) return ai;
  ai.code.resize(kArgsMaxLen);
  auto n = tab.read(*info_addr, ai.code);
  ai.code.resize(n.ok() ? *n : 0);
  if (auto la = f.funcdata(binary::kFuncdataArgLiveInfo)) {
    ai.live.resize(256);
    auto got = tab.read(*la, ai.live);
    ai.live.resize(got.ok() ? *got : 0);
  }
  return ai;
}

// printArgs: the argument words of a physical frame as the runtime prints them, from the
// function's argument info, reading the words from the stack copy at argp. live_idx is the
// PCDATA_ArgLiveIndex value at the frame's pc.
std::string print_args(const ArgInfo& ai, int32_t live_idx, const unwind::StackImage& stack,
                       uint64_t argp) {
  if (ai.code.empty()) return {};
  const auto& code = ai.code;
  const auto& live = ai.live;
  const size_t n = code.size();
  uint8_t start_offset = live.empty() ? 0xff : static_cast<uint8_t>(live[0]);
  auto is_live = [&](uint8_t off, uint8_t slot) {
    if (live.empty() || live_idx <= 0 || off < start_offset) return true;
    size_t at = static_cast<size_t>(live_idx) + slot / 8;
    if (at >= live.size()) return true;
    return ((static_cast<uint8_t>(live[at]) >> (slot % 8)) & 1) != 0;
  };
  std::string out;
  bool start = true;
  auto comma = [&] {
    if (!start) out += ", ";
  };
  uint8_t slot = 0;
  for (size_t pi = 0; pi < n;) {
    uint8_t o = static_cast<uint8_t>(code[pi++]);
    if (o == kArgsEndSeq) break;
    if (o == kArgsStartAgg) {
      comma();
      out += "{";
      start = true;
      continue;
    }
    if (o == kArgsEndAgg) {
      out += "}";
    } else if (o == kArgsDotdotdot) {
      comma();
      out += "...";
    } else if (o == kArgsOffsetTooLarge) {
      comma();
      out += "_";
    } else {
      comma();
      if (pi >= n) break;
      uint8_t sz = static_cast<uint8_t>(code[pi++]);
      auto w = stack.word(Addr(argp + o));
      if (!w) {
        out += "?";
      } else {
        uint64_t x = *w;
        if (sz < 8) x = sz == 0 ? 0 : (x << (64 - sz * 8)) >> (64 - sz * 8);
        out += fmt::format("{:#x}", x);
        if (!is_live(o, slot)) out += "?";
      }
      if (o >= start_offset) ++slot;
    }
    start = false;
  }
  return out;
}

}  // namespace

namespace detail {

// Symbolizes physical frames into logical ones. Goroutines share most of their pcs (a
// hundred thousand parked in the same function), so the inline expansion of each pc and the
// argument info of each function are computed once.
class Symbolizer {
 public:
  explicit Symbolizer(const Process& p)
      : p_(p),
        tab_(p.program().pclntab()),
        bias_(p.load_bias()),
        min_frame_(p.target().arch() == target::Arch::kArm64 ? 8 : 0) {}

  // Appends the logical frames of every physical frame of u. trap: the innermost pc is where
  // the thread stopped (registers), not a return address saved by a call (g.sched,
  // syscallpc), so it is symbolized as is (the runtime's unwindTrap).
  void add_frames(const Unwound& u, const unwind::StackImage& stack, bool trap,
                  std::vector<LogicalFrame>& out) {
    for (size_t i = 0; i < u.frames.size(); ++i) {
      const auto& pf = u.frames[i];
      uint64_t sym = u.sym_pc(i) - bias_;
      // unwinder.symPC: a saved pc is a return address like any caller's.
      if (i == 0 && !trap && pf.pc > pf.entry) sym = pf.pc - 1 - bias_;
      const Expansion& e = expand(sym);
      for (const auto& tmpl : e.frames) {
        LogicalFrame lf = tmpl;
        lf.pc = pf.pc;
        lf.entry = pf.entry;
        lf.sp = pf.sp;
        lf.fp = pf.fp;
        if (!lf.inlined && pf.fp != 0 && e.args)
          lf.args = print_args(*e.args, e.live_idx, stack, pf.fp + min_frame_);
        out.push_back(std::move(lf));
      }
    }
  }

 private:
  struct Expansion {
    std::vector<LogicalFrame> frames;  // without pc, sp and args
    const ArgInfo* args = nullptr;
    int32_t live_idx = -1;
  };

  const Expansion& expand(uint64_t sym) {
    auto [it, fresh] = by_pc_.try_emplace(sym);
    if (!fresh) return it->second;
    Expansion& e = it->second;
    auto f = tab_.find_func(sym);
    if (!f) return e;
    for (auto& fr : tab_.symbolize(sym)) {
      LogicalFrame lf;
      lf.raw_function = std::move(fr.function);
      lf.function = print_name(lf.raw_function);
      lf.file = std::move(fr.file);
      lf.line = fr.line;
      lf.inlined = fr.inlined;
      lf.id = func_id(fr.func_id, p_.program().go_minor());
      e.frames.push_back(std::move(lf));
    }
    auto [ai, new_fn] = args_by_func_.try_emplace(f->index());
    if (new_fn) ai->second = read_arg_info(tab_, *f);
    e.args = &ai->second;
    e.live_idx = f->pcdata_at(binary::kPcdataArgLiveIndex, sym).value_or(-1);
    return e;
  }

  const Process& p_;
  const binary::Pclntab& tab_;
  uint64_t bias_;
  uint64_t min_frame_;
  std::unordered_map<uint64_t, Expansion> by_pc_;
  std::unordered_map<size_t, ArgInfo> args_by_func_;
};

}  // namespace detail

namespace {

using detail::Symbolizer;

// isSystemGoroutine(gp, false): goroutines the runtime leaves out of its dumps.
bool is_system_goroutine(const Process& p, const StackSnapshot& snap, const Goroutine& g) {
  auto f = p.program().pclntab().find_func(p.link_addr(g.startpc));
  if (!f) return false;
  switch (func_id(f->func_id(), p.program().go_minor())) {
    case FuncId::kRuntimeMain:
    case FuncId::kCorostart:
    case FuncId::kHandleAsyncEvent:
      return false;
    case FuncId::kRunfinq:  // Go 1.21–1.24
    case FuncId::kRunFinalizers:
      // The finalizer goroutine counts as a user goroutine while it runs a finalizer.
      return !snap.fing_status || (*snap.fing_status & kFingRunningFinalizer) == 0;
    case FuncId::kRunCleanups:  // Go 1.25+
      return !g.running_cleanups;
    default:
      return f->name().starts_with("runtime.");
  }
}

// printcreatedby: the function and call site that started g, unless the runtime hides it.
std::optional<CreatedBy> created_by(const Process& p, const Goroutine& g) {
  if (g.goid == 1) return std::nullopt;
  const auto& tab = p.program().pclntab();
  uint64_t gopc = p.link_addr(g.gopc);
  auto f = tab.find_func(gopc);
  if (!f) return std::nullopt;
  if (!show_frame(f->name(), func_id(f->func_id(), p.program().go_minor()), false, FuncId::kNormal))
    return std::nullopt;
  CreatedBy c;
  c.function = print_name(f->name());
  c.goroutine = g.parent_goid;
  c.pc = g.gopc;
  c.entry = p.runtime_addr(f->entry()).value();
  // Back up into the CALL instruction for the line; the file and line are the innermost
  // inlined position there, as funcline reports it.
  uint64_t tracepc = gopc > f->entry() ? gopc - p.program().pclntab().pc_quantum() : gopc;
  if (auto fl = f->file_line_at(tracepc)) {
    c.file = std::string(fl->file);
    c.line = fl->line;
  }
  return c;
}

// Marks the frames the runtime's default dump shows (traceback2 with showRuntime false, and
// the whole stack when that shows nothing).
void mark_shown(GoroutineTrace& t) {
  FuncId callee = FuncId::kNormal;
  size_t n = 0;
  for (auto& f : t.frames) {
    f.shown = show_frame(f.raw_function, f.id, n == 0, callee);
    callee = f.id;
    if (f.shown) ++n;
  }
  if (n == 0) {
    for (auto& f : t.frames) f.shown = true;
    n = t.frames.size();
  }
  t.shown_count = n;
}

void trace_one(const Process& p, Symbolizer& sym, const GoroutineStack& s, const Unwinder& u,
               const TracebackOptions& opts, GoroutineTrace& t) {
  t.source = s.source;
  GoroutineFrames f = unwind_goroutine(p, s, u, opts.method, opts.max_frames);
  if (s.source == StackStart::kG0) sym.add_frames(f.g0, s.thread_image, /*trap=*/true, t.frames);
  t.error = f.error;
  if (f.own.frames.empty() && !f.error.empty()) return;
  sym.add_frames(f.own, s.image, f.trap, t.frames);
  // A start without a frame pointer (a syscall before Go 1.23, which added g.syscallbp) gives
  // the frame-pointer walk nothing to follow: not comparable rather than different.
  if (opts.verify && f.start.fp == 0) t.verify_skipped = true;
  if (opts.verify && f.start.fp != 0) {
    Unwound fp = u.unwind(s.image, f.start, Unwinder::Method::kFramePointer, opts.max_frames);
    if (auto m = unwind::compare(f.own, fp))
      t.verify_mismatch = "frame " + std::to_string(m->index) + ": " + m->what;
  }
}

}  // namespace

std::string func_name_for_print(std::string_view name) {
  // funcNamePiecesForPrint (Go 1.27 form, which also handles a generic method of a generic
  // type; for the names older compilers emit it gives the same result as theirs).
  size_t i = name.find('[');
  if (i == std::string_view::npos) return std::string(name);
  size_t j = name.rfind(']');
  if (j == std::string_view::npos || j <= i) return std::string(name);
  std::string_view interior = name.substr(i + 1, j - i - 1);
  std::string head(name.substr(0, i)), tail(name.substr(j + 1));
  if (interior.find('[') == std::string_view::npos) return head + "[...]" + tail;
  int depth = 1;
  long rbr = -1, lbr = -1;
  for (size_t k = 0; k < interior.size(); ++k) {
    char c = interior[k];
    if (c == '[') {
      ++depth;
      if (depth != 1) continue;
      lbr = static_cast<long>(k);
      break;
    }
    if (c == ']') {
      --depth;
      if (depth < 0) break;
      if (depth != 0) continue;
      rbr = static_cast<long>(k);
    }
  }
  if (depth == 1) {
    if (rbr >= 0 && lbr > rbr)
      return head + "[...]" +
             std::string(interior.substr(static_cast<size_t>(rbr) + 1,
                                         static_cast<size_t>(lbr - rbr - 1))) +
             "[...]" + tail;
    if (rbr == -1 && lbr == -1) return head + "[...]" + tail;
  }
  return std::string(name);
}

bool show_frame(std::string_view name, FuncId id, bool first_frame, FuncId callee) {
  // elideWrapperCalling: a wrapper is hidden unless it called a panic function.
  if (id == FuncId::kWrapper &&
      !(callee == FuncId::kGopanic || callee == FuncId::kSigpanic || callee == FuncId::kPanicwrap))
    return false;
  // Go 1.25+ always shows these as context (the IDs do not exist before).
  if (id == FuncId::kRunFinalizers || id == FuncId::kRunCleanups) return true;
  if (name == "runtime.gopanic" && !first_frame) return true;
  return name.find('.') != std::string_view::npos &&
         (!name.starts_with("runtime.") || is_exported_runtime(name));
}

GoroutineTracer::GoroutineTracer(const Process& p, const StackSnapshot& snap,
                                 const unwind::Unwinder& u, const TracebackOptions& opts)
    : p_(p), snap_(snap), u_(u), opts_(opts), sym_(std::make_unique<detail::Symbolizer>(p)) {}

GoroutineTracer::~GoroutineTracer() = default;

size_t GoroutineTracer::size() const {
  return snap_.all.gs.size();
}

GoroutineTrace GoroutineTracer::trace(size_t i) {
  const Goroutine& g = snap_.all.gs.at(i);
  GoroutineTrace t;
  t.g = &g;
  t.status = status_string(snap_.all, g);
  // goroutineheader: minutes blocked, for waiting goroutines and those in system calls.
  if ((g.status == k_Gwaiting || g.status == k_Gsyscall) && g.waitsince != 0 &&
      snap_.nanotime > g.waitsince)
    t.wait_minutes = (snap_.nanotime - g.waitsince) / 60'000'000'000;
  t.system = is_system_goroutine(p_, snap_, g);
  trace_one(p_, *sym_, snap_.stacks[i], u_, opts_, t);
  mark_shown(t);
  t.created_by = created_by(p_, g);
  return t;
}

std::vector<GoroutineTrace> trace_goroutines(const Process& p, const StackSnapshot& snap,
                                             const unwind::Unwinder& u,
                                             const TracebackOptions& opts) {
  GoroutineTracer tracer(p, snap, u, opts);
  std::vector<GoroutineTrace> out;
  out.reserve(tracer.size());
  for (size_t i = 0; i < tracer.size(); ++i) out.push_back(tracer.trace(i));
  return out;
}

}  // namespace goref::runtime
