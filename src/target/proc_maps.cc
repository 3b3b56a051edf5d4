#include "goref/target/proc_maps.h"

#include <charconv>
#include <string>

#include "goref/target/procfs.h"

namespace goref::target {
namespace {

// Splits off the next space-delimited field (fields are separated by exactly one space up to the
// inode; the path is preceded by padding).
std::string_view next_field(std::string_view& rest) {
  size_t sp = rest.find(' ');
  std::string_view f = rest.substr(0, sp);
  rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
  return f;
}

template <class T>
bool parse_num(std::string_view s, int base, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

Error bad_line(std::string_view line, std::string_view why) {
  return Error(Errc::kBadFormat,
               "maps line \"" + std::string(line.substr(0, 200)) + "\": " + std::string(why));
}

constexpr std::string_view kDeleted = " (deleted)";

}  // namespace

Result<ProcMapsEntry> parse_proc_maps_line(std::string_view line) {
  std::string_view rest = line;
  ProcMapsEntry e;

  std::string_view range = next_field(rest);
  size_t dash = range.find('-');
  uint64_t start = 0, end = 0;
  if (dash == std::string_view::npos || !parse_num(range.substr(0, dash), 16, start) ||
      !parse_num(range.substr(dash + 1), 16, end))
    return bad_line(line, "bad address range");
  if (end <= start) return bad_line(line, "empty or inverted address range");
  e.mapping.range = {Addr(start), Addr(end)};

  std::string_view perms = next_field(rest);
  if (perms.size() != 4) return bad_line(line, "bad permissions");
  auto flag = [&](size_t i, char set) -> int {
    if (perms[i] == set) return 1;
    if (perms[i] == '-') return 0;
    return -1;
  };
  int r = flag(0, 'r'), w = flag(1, 'w'), x = flag(2, 'x');
  if (r < 0 || w < 0 || x < 0 || (perms[3] != 'p' && perms[3] != 's'))
    return bad_line(line, "bad permissions");
  e.mapping.read = r == 1;
  e.mapping.write = w == 1;
  e.mapping.exec = x == 1;
  e.shared = perms[3] == 's';

  // The offset is printed with at least 8 hex digits; offsets of device mappings can use all 16.
  if (!parse_num(next_field(rest), 16, e.mapping.offset)) return bad_line(line, "bad offset");

  std::string_view dev = next_field(rest);
  size_t colon = dev.find(':');
  if (colon == std::string_view::npos || !parse_num(dev.substr(0, colon), 16, e.dev_major) ||
      !parse_num(dev.substr(colon + 1), 16, e.dev_minor))
    return bad_line(line, "bad device");

  // The inode is the last field that may end the line: anonymous mappings have no path and, on
  // some kernels, no padding after the inode.
  size_t sp = rest.find(' ');
  std::string_view inode = rest.substr(0, sp);
  if (!parse_num(inode, 10, e.inode)) return bad_line(line, "bad inode");
  std::string_view path = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
  // Padding aligns the path column; the path may contain spaces. (A path that starts with a
  // space loses it: the format cannot tell padding from the name.)
  size_t first = path.find_first_not_of(' ');
  path = first == std::string_view::npos ? std::string_view() : path.substr(first);

  if (e.inode != 0 && path.size() > kDeleted.size() && path.ends_with(kDeleted)) {
    e.deleted = true;
    path.remove_suffix(kDeleted.size());
  }
  e.mapping.path = std::string(path);
  return e;
}

Result<std::vector<ProcMapsEntry>> parse_proc_maps(std::string_view text) {
  std::vector<ProcMapsEntry> out;
  size_t lineno = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++lineno;
    if (line.empty()) {
      if (text.empty()) break;  // the trailing newline
      return Error(Errc::kBadFormat, "maps line " + std::to_string(lineno) + ": empty line");
    }
    auto e = parse_proc_maps_line(line);
    if (!e) return std::move(e).error().context("maps line " + std::to_string(lineno));
    if (!out.empty() && e->mapping.range.start < out.back().mapping.range.end)
      return Error(Errc::kBadFormat, "maps line " + std::to_string(lineno) + ": mapping " +
                                         e->mapping.range.start.hex() +
                                         " overlaps or precedes the previous one");
    out.push_back(std::move(*e));
  }
  return out;
}

Result<std::vector<Mapping>> read_proc_maps(Pid pid) {
  std::string path = "/proc/" + pid.str() + "/maps";
  GOREF_TRY(std::string text, read_proc_file(path));
  GOREF_TRY(auto entries, parse_proc_maps(text).context(path));
  std::vector<Mapping> out;
  out.reserve(entries.size());
  for (auto& e : entries) out.push_back(std::move(e.mapping));
  return out;
}

}  // namespace goref::target
