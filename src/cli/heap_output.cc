#include "cli/heap_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "cli/json.h"
#include "goref/profile/pprof.h"
#include "goref/profile/reference_profile.h"

namespace goref::cli {
namespace {

constexpr size_t kJsonPaths = 100;

std::string human(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / 1073741824.0);
  if (b >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB", b / 1048576.0);
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

// Node ids ordered by cumulative bytes, largest first (ties by id, for stable output).
std::vector<uint32_t> by_bytes(const scan::HeapAnalysis& a,
                               const std::vector<std::pair<uint64_t, uint64_t>>& cum,
                               bool roots_only) {
  std::vector<uint32_t> ids;
  const auto& nodes = a.tree.nodes();
  for (uint32_t i = 0; i < nodes.size(); ++i)
    if ((!roots_only || nodes[i].parent == scan::RefTree::kNone) && cum[i].second > 0)
      ids.push_back(i);
  std::sort(ids.begin(), ids.end(), [&](uint32_t x, uint32_t y) {
    return cum[x].second != cum[y].second ? cum[x].second > cum[y].second : x < y;
  });
  return ids;
}

// Node ids ordered by their own bytes, largest first.
std::vector<uint32_t> by_flat_bytes(const scan::HeapAnalysis& a) {
  std::vector<uint32_t> ids;
  const auto& nodes = a.tree.nodes();
  for (uint32_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].bytes > 0) ids.push_back(i);
  std::sort(ids.begin(), ids.end(), [&](uint32_t x, uint32_t y) {
    return nodes[x].bytes != nodes[y].bytes ? nodes[x].bytes > nodes[y].bytes : x < y;
  });
  return ids;
}

std::string joined_path(const scan::HeapAnalysis& a, uint32_t n) {
  auto p = a.tree.path(n);
  std::string s;
  for (size_t i = p.size(); i-- > 0;) {
    s += p[i];
    if (i > 0) s += " / ";
  }
  return s;
}

// Deep paths (a linked list) keep their root and their last hops.
std::string shortened(const std::string& p) {
  constexpr size_t kMax = 160;
  if (p.size() <= kMax) return p;
  size_t root_end = p.find(" / ");
  std::string head = p.substr(0, root_end == std::string::npos ? 40 : root_end);
  return head + " / … / " + p.substr(p.size() - (kMax - head.size() - 7));
}

}  // namespace

std::string format_heap_text(const scan::HeapAnalysis& a, const HeapOutputOptions& o) {
  auto cum = a.tree.cumulative();
  auto roots = by_bytes(a, cum, true);
  std::string s = fmt::format("goref: heap of {}: {} in {} objects reachable from {} roots\n",
                              o.title, human(a.mark.bytes), a.mark.objects, roots.size());
  uint64_t garbage = a.allocated_bytes - std::min(a.allocated_bytes, a.mark.bytes);
  s += fmt::format(
      "       ({} more in {} allocated objects is garbage the GC has not yet freed)\n\n",
      human(garbage), a.allocated_objects - std::min(a.allocated_objects, a.mark.objects));
  s += fmt::format("{:>12} {:>6} {:>10}  {}\n", "inuse_space", "%", "objects", "root");
  for (size_t i = 0; i < std::min(o.top, roots.size()); ++i) {
    uint32_t r = roots[i];
    double pct = a.mark.bytes ? 100.0 * cum[r].second / a.mark.bytes : 0;
    s += fmt::format("{:>12} {:>5.1f}% {:>10}  {}\n", human(cum[r].second), pct, cum[r].first,
                     a.tree.name(a.tree.nodes()[r]));
  }
  if (roots.size() > o.top) s += fmt::format("{:>12}  … {} more roots\n", "", roots.size() - o.top);
  auto flat = by_flat_bytes(a);
  s += fmt::format("\n{:>12} {:>6} {:>10}  {}\n", "flat", "%", "objects",
                   "reference path (root first)");
  for (size_t i = 0; i < std::min(o.top, flat.size()); ++i) {
    const auto& n = a.tree.nodes()[flat[i]];
    double pct = a.mark.bytes ? 100.0 * n.bytes / a.mark.bytes : 0;
    s += fmt::format("{:>12} {:>5.1f}% {:>10}  {}\n", human(n.bytes), pct, n.objects,
                     shortened(joined_path(a, flat[i])));
  }
  for (const auto& w : a.warnings) s += "goref: warning: " + w + "\n";
  return s;
}

std::string format_heap_json(const scan::HeapAnalysis& a, const HeapOutputOptions& o) {
  auto cum = a.tree.cumulative();
  auto roots = by_bytes(a, cum, true);
  std::string s = "{\"target\":" + json_string(o.title);
  s += fmt::format(",\"reachable\":{{\"objects\":{},\"bytes\":{}}}", a.mark.objects, a.mark.bytes);
  s += fmt::format(",\"allocated\":{{\"objects\":{},\"bytes\":{}}}", a.allocated_objects,
                   a.allocated_bytes);
  s += ",\"roots\":[";
  for (size_t i = 0; i < roots.size(); ++i) {
    uint32_t r = roots[i];
    if (i) s += ",";
    s += fmt::format("{{\"name\":{},\"objects\":{},\"bytes\":{}}}",
                     json_string(a.tree.name(a.tree.nodes()[r])), cum[r].first, cum[r].second);
  }
  // The paths that hold the most bytes themselves (flat), as pprof's -top lists them.
  s += "],\"paths\":[";
  auto flat = by_flat_bytes(a);
  for (size_t i = 0; i < std::min<size_t>(flat.size(), kJsonPaths); ++i) {
    uint32_t n = flat[i];
    if (i) s += ",";
    s += fmt::format(
        "{{\"path\":{},\"objects\":{},\"bytes\":{},\"cum_objects\":{},\"cum_bytes\":{}}}",
        json_string(joined_path(a, n)), a.tree.nodes()[n].objects, a.tree.nodes()[n].bytes,
        cum[n].first, cum[n].second);
  }
  s += "],\"warnings\":[";
  for (size_t i = 0; i < a.warnings.size(); ++i) s += (i ? "," : "") + json_string(a.warnings[i]);
  s += "]}\n";
  return s;
}

Result<void> write_heap_profile(const scan::HeapAnalysis& a, const std::string& path,
                                const std::string& comment) {
  profile::ReferenceProfileBuilder b;
  const auto& nodes = a.tree.nodes();
  for (uint32_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].objects > 0 || nodes[i].bytes > 0)
      b.add(a.tree.path(i), static_cast<int64_t>(nodes[i].objects),
            static_cast<int64_t>(nodes[i].bytes));
  b.set_time_nanos(std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count());
  b.add_comment(comment);
  for (const auto& w : a.warnings) b.add_comment("partial: " + w);
  return profile::write_profile_file(b.build(), path);
}

}  // namespace goref::cli
