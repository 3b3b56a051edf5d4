#include "harness/traceback.h"

#include <charconv>
#include <sstream>

namespace goref::testing {
namespace {

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

template <typename T>
bool parse_dec(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Removes every occurrence of marker from s; true if there was one.
bool take_marker(std::string& s, std::string_view marker) {
  bool found = false;
  for (size_t p; (p = s.find(marker)) != std::string::npos;) {
    s.erase(p, marker.size());
    found = true;
  }
  return found;
}

// The bracket contents: "status[ (leaked)][ (scan)][ (durable)][, N minutes][, locked to
// thread][, synctest bubble N]" (runtime.goroutineheader; the markers exist since 1.26, 1.21 and
// 1.24 respectively).
bool parse_status(std::string_view content, TbGoroutine& g) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t c = content.find(", ", start);
    parts.push_back(content.substr(start, c == std::string_view::npos ? c : c - start));
    if (c == std::string_view::npos) break;
    start = c + 2;
  }
  g.status = std::string(parts[0]);
  g.leaked = take_marker(g.status, " (leaked)");
  g.scan = take_marker(g.status, " (scan)");
  if (g.status.empty()) return false;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string_view p = parts[i];
    if (p == "locked to thread") {
      g.locked_to_thread = true;
    } else if (ends_with(p, " minutes")) {
      if (!parse_dec(p.substr(0, p.size() - 8), g.wait_minutes)) return false;
    } else if (starts_with(p, "synctest bubble ")) {
      if (!parse_dec(p.substr(16), g.synctest_bubble)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// "goroutine 7 [select, locked to thread]:", with an optional " gp=0x… m=N mp=0x…" (crashes and
// GOTRACEBACK=system) before the bracket and labels inside (1.26) or after (1.27) it.
std::optional<TbGoroutine> parse_header(std::string_view l) {
  if (!starts_with(l, "goroutine ") || !ends_with(l, ":")) return std::nullopt;
  l.remove_prefix(10);
  l.remove_suffix(1);
  size_t sp = l.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  TbGoroutine g;
  if (!parse_dec(l.substr(0, sp), g.id)) return std::nullopt;
  size_t lb = l.find('[', sp);
  if (lb == std::string_view::npos) return std::nullopt;
  std::string_view content;
  constexpr std::string_view kLabels26 = " labels:{";
  size_t lab = l.find(kLabels26, lb);
  if (lab != std::string_view::npos && ends_with(l, "}]")) {
    // Go 1.26 (GODEBUG=tracebacklabels=1): labels are the last item inside the brackets and may
    // themselves contain "]" inside quotes, so the bracket ends at the end of the line.
    content = l.substr(lb + 1, lab - lb - 1);
    size_t from = lab + kLabels26.size();
    g.labels = std::string(l.substr(from, l.size() - 2 - from));
  } else {
    size_t rb = l.find(']', lb);
    if (rb == std::string_view::npos) return std::nullopt;
    content = l.substr(lb + 1, rb - lb - 1);
    std::string_view rest = l.substr(rb + 1);
    if (!rest.empty()) {
      // Go 1.27: ` {k: v, "odd key": "x y"}` after the bracket.
      if (!starts_with(rest, " {") || !ends_with(rest, "}")) return std::nullopt;
      g.labels = std::string(rest.substr(2, rest.size() - 3));
    }
  }
  if (!parse_status(content, g)) return std::nullopt;
  return g;
}

// "main.parkChan(0xc00003a7b8?)": the arguments never contain parentheses (runtime.printArgs
// prints hex words, "?", "{", "}", "_", "..." and ", "), so they start at the last "(".
bool parse_call(std::string_view l, TbFrame& f) {
  if (!ends_with(l, ")")) return false;
  size_t open = l.rfind('(');
  if (open == std::string_view::npos || open == 0) return false;
  f.function = std::string(l.substr(0, open));
  f.args = std::string(l.substr(open + 1, l.size() - open - 2));
  f.inlined = f.args == "...";
  return true;
}

// "\t/abs/main.go:24 +0x1d", "\t/abs/x.go:90" (inlined), "… +0x1d fp=0x… sp=0x… pc=0x…"
// (crashes, GOTRACEBACK=system), cgo symbolizer "\tfile:line pc=0x…" or "\tpc=0x…".
bool parse_position(std::string_view l, TbFrame& f) {
  if (!starts_with(l, "\t")) return false;
  l.remove_prefix(1);
  std::string_view rest;
  if (starts_with(l, "pc=")) {
    rest = l;
  } else {
    // The last ":<digits>" followed by the end or a space; a path may itself contain ':'.
    size_t colon = std::string_view::npos;
    for (size_t p = l.size(); p-- > 0;) {
      if (l[p] != ':') continue;
      size_t end = l.find(' ', p);
      if (end == std::string_view::npos) end = l.size();
      if (is_digits(l.substr(p + 1, end - p - 1))) {
        colon = p;
        break;
      }
    }
    if (colon == std::string_view::npos || colon == 0) return false;
    size_t end = l.find(' ', colon);
    if (end == std::string_view::npos) end = l.size();
    f.file = std::string(l.substr(0, colon));
    if (!parse_dec(l.substr(colon + 1, end - colon - 1), f.line)) return false;
    rest = l.substr(end);
  }
  while (!rest.empty()) {
    if (rest[0] == ' ') {
      rest.remove_prefix(1);
      continue;
    }
    size_t end = rest.find(' ');
    std::string_view tok = rest.substr(0, end);
    if (starts_with(tok, "+0x")) {
      f.offset = std::string(tok);
    } else if (!starts_with(tok, "fp=") && !starts_with(tok, "sp=") && !starts_with(tok, "pc=")) {
      return false;
    }
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  return true;
}

}  // namespace

std::vector<TbGoroutine> parse_traceback(std::string_view text) {
  std::vector<TbGoroutine> out;
  TbGoroutine* cur = nullptr;
  bool in_ancestors = false;
  enum class Pending { kNone, kFrame, kCreatedBy } pending = Pending::kNone;
  TbFrame pf;
  std::string pending_line;

  auto drop_pending = [&] {
    if (pending != Pending::kNone && cur) cur->unparsed.push_back(pending_line);
    pending = Pending::kNone;
  };

  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view l = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (ends_with(l, "\r")) l.remove_suffix(1);

    if (starts_with(l, "goroutine ")) {
      if (auto g = parse_header(l)) {
        drop_pending();
        out.push_back(std::move(*g));
        cur = &out.back();
        in_ancestors = false;
        continue;
      }
    }
    if (!cur) continue;
    if (l.empty()) {  // a blank line ends the goroutine
      drop_pending();
      cur = nullptr;
      continue;
    }
    if (in_ancestors) continue;

    if (l[0] == '\t') {
      if (l == "\tgoroutine running on other thread; stack unavailable") {
        drop_pending();
        cur->stack_unavailable = true;
        continue;
      }
      if (pending != Pending::kNone && parse_position(l, pf)) {
        if (pending == Pending::kFrame)
          cur->frames.push_back(pf);
        else
          cur->created_by = pf;
        pending = Pending::kNone;
        continue;
      }
      drop_pending();
      cur->unparsed.emplace_back(l);
      continue;
    }

    drop_pending();
    pf = TbFrame{};
    pending_line = std::string(l);
    if (starts_with(l, "created by ")) {
      std::string_view rest = l.substr(11);
      constexpr std::string_view kIn = " in goroutine ";
      size_t in = rest.rfind(kIn);
      if (in != std::string_view::npos &&
          parse_dec(rest.substr(in + kIn.size()), cur->created_by_goroutine)) {
        rest = rest.substr(0, in);
      }
      pf.function = std::string(rest);
      pending = Pending::kCreatedBy;
    } else if (l == "...additional frames elided...") {
      cur->frames_elided = true;
      cur->elided_at = cur->frames.size();
    } else if (starts_with(l, "...") && ends_with(l, " frames elided...")) {
      if (!parse_dec(l.substr(3, l.size() - 3 - 17), cur->elided_count)) {
        cur->unparsed.emplace_back(l);
        continue;
      }
      cur->frames_elided = true;
      cur->elided_at = cur->frames.size();
    } else if (starts_with(l, "[originating from goroutine ")) {
      cur->has_ancestors = true;
      in_ancestors = true;
    } else if (starts_with(l, "non-Go function at pc=")) {
      pf.function = "non-Go function";
      pf.offset = std::string(l.substr(19));  // "pc=0x…"
      pf.non_go = true;
      cur->frames.push_back(pf);
    } else if (parse_call(l, pf)) {
      pending = Pending::kFrame;
    } else {
      // A cgo symbolizer frame: a bare function name (or "non-Go function") and a position line.
      pf.function = std::string(l);
      pf.non_go = true;
      pending = Pending::kFrame;
    }
  }
  drop_pending();
  return out;
}

std::string format_goroutine(const TbGoroutine& g) {
  std::ostringstream o;
  o << "goroutine " << g.id << " [" << g.status;
  if (g.leaked) o << " (leaked)";
  if (g.scan) o << " (scan)";
  if (g.wait_minutes >= 0) o << ", " << g.wait_minutes << " minutes";
  if (g.locked_to_thread) o << ", locked to thread";
  if (g.synctest_bubble >= 0) o << ", synctest bubble " << g.synctest_bubble;
  o << "]";
  if (!g.labels.empty()) o << " {" << g.labels << "}";
  o << ":\n";
  auto frame = [&](const TbFrame& f) {
    o << "\t" << f.file << ":" << f.line;
    if (!f.offset.empty()) o << " " << f.offset;
    o << "\n";
  };
  for (size_t i = 0; i < g.frames.size(); ++i) {
    if (g.frames_elided && g.elided_at == i) o << "..." << g.elided_count << " frames elided...\n";
    const TbFrame& f = g.frames[i];
    o << f.function << "(" << f.args << ")\n";
    frame(f);
  }
  if (g.stack_unavailable) o << "\tgoroutine running on other thread; stack unavailable\n";
  if (g.created_by) {
    o << "created by " << g.created_by->function;
    if (g.created_by_goroutine) o << " in goroutine " << g.created_by_goroutine;
    o << "\n";
    frame(*g.created_by);
  }
  for (const auto& u : g.unparsed) o << "?? " << u << "\n";
  return o.str();
}

}  // namespace goref::testing
