#include "goref/annotate/annotate_profile.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "goref/binary/elf_file.h"
#include "goref/binary/pclntab.h"

namespace goref::annotate {
namespace {

using perftools::profiles::Location;
using perftools::profiles::Mapping;

class Strings {
 public:
  explicit Strings(profile::Profile& p) : p_(p) {
    for (int i = 0; i < p.string_table_size(); ++i) ids_.emplace(p.string_table(i), i);
  }
  int64_t intern(std::string_view s) {
    auto it = ids_.find(std::string(s));
    if (it != ids_.end()) return it->second;
    int64_t id = p_.string_table_size();
    p_.add_string_table(std::string(s));
    ids_.emplace(std::string(s), id);
    return id;
  }
  [[nodiscard]] std::string_view at(int64_t i) const {
    return i >= 0 && i < p_.string_table_size() ? std::string_view(p_.string_table(int(i)))
                                                : std::string_view();
  }

 private:
  profile::Profile& p_;
  std::unordered_map<std::string, int64_t> ids_;
};

// The mapping of the executable: the one whose file has the executable's name, else the first
// (Go's profiler lists the main executable first).
Result<const Mapping*> main_mapping(const profile::Profile& p, const Strings& strs,
                                    const binary::ElfFile& elf) {
  if (p.mapping_size() == 0)
    return Error(Errc::kUsage,
                 "the profile has no mappings, so its addresses cannot be placed in " + elf.path());
  std::string exe_name = std::filesystem::path(elf.path()).filename();
  const Mapping* found = &p.mapping(0);
  for (const auto& m : p.mapping())
    if (std::filesystem::path(std::string(strs.at(m.filename()))).filename() == exe_name) {
      found = &m;
      break;
    }
  std::string_view want = strs.at(found->build_id());
  auto gnu = elf.build_id();
  if (!want.empty() && gnu && want != *gnu)
    return Error(Errc::kUsage, "the profile was taken of build ID " + std::string(want) + ", but " +
                                   elf.path() + " has build ID " + *gnu +
                                   "; give the executable the profile was taken of with --exe");
  return found;
}

// Profile address → link-time address: to a file offset through the mapping, then to the
// PT_LOAD that holds that offset. Right for PIE (mapped at a random base, file offset 0) and
// non-PIE alike.
std::optional<uint64_t> to_vaddr(const Mapping& m, uint64_t addr, const binary::ElfFile& elf) {
  if (addr < m.memory_start() || (m.memory_limit() != 0 && addr >= m.memory_limit()))
    return std::nullopt;
  return elf.vaddr_at_offset(addr - m.memory_start() + m.file_offset());
}

// Function names as the runtime's profiler writes them (funcNameForPrint: "pkg.F[...]") and as
// gopclntab has them ("pkg.F[go.shape.int]") agree up to the first '['.
std::string_view name_stem(std::string_view n) {
  return n.substr(0, n.find('['));
}

size_t value_index(const profile::Profile& p, const Strings& strs) {
  for (int i = 0; i < p.sample_type_size(); ++i)
    if (strs.at(p.sample_type(i).type()) == "samples") return size_t(i);
  return 0;
}

}  // namespace

Result<AnnotateResult> annotate_profile(profile::Profile& p, const binary::ElfFile& elf,
                                        const binary::Pclntab& tab, const CheckIndex& checks) {
  Strings strs(p);
  GOREF_TRY(const Mapping* mapping, main_mapping(p, strs, elf));
  AnnotateResult r;
  const uint64_t mapping_id = mapping->id();
  r.mapping_file = std::string(strs.at(mapping->filename()));
  size_t vi = value_index(p, strs);
  if (p.sample_type_size() > 0)
    r.value_type = std::string(strs.at(p.sample_type(int(vi)).type())) + "/" +
                   std::string(strs.at(p.sample_type(int(vi)).unit()));

  std::unordered_map<uint64_t, int> loc_index;  // id → index in p.location
  uint64_t max_loc = 0, max_fn = 0;
  for (int i = 0; i < p.location_size(); ++i) {
    loc_index[p.location(i).id()] = i;
    max_loc = std::max(max_loc, p.location(i).id());
  }
  std::unordered_map<uint64_t, std::string_view> fn_name;
  std::unordered_map<uint64_t, std::string_view> fn_file;
  for (const auto& f : p.function()) {
    fn_name[f.id()] = strs.at(f.name());
    fn_file[f.id()] = strs.at(f.filename());
    max_fn = std::max(max_fn, f.id());
  }

  // Which locations of the executable are checks, and the same-binary sanity check.
  std::unordered_map<uint64_t, const CheckSite*> site_of;  // location id → site
  size_t named = 0;
  for (const auto& loc : p.location()) {
    if (loc.mapping_id() != mapping_id) continue;
    ++r.locations_in_mapping;
    auto va = to_vaddr(*mapping, loc.address(), elf);
    if (loc.line_size() > 0) {
      ++named;
      auto f = va ? tab.find_func(*va) : std::nullopt;
      auto it = fn_name.find(loc.line(loc.line_size() - 1).function_id());
      if (!f || it == fn_name.end() || name_stem(f->name()) != name_stem(it->second))
        ++r.locations_mismatched;
    }
    if (!va) continue;
    if (const CheckSite* s = checks.find(*va)) site_of[loc.id()] = s;
  }
  if (named >= 4 && r.locations_mismatched * 2 > named)
    return Error(Errc::kUsage,
                 std::to_string(r.locations_mismatched) + " of " + std::to_string(named) +
                     " sampled locations name functions that " + elf.path() +
                     " does not have at those addresses: the profile was taken of another "
                     "build; give its executable with --exe");

  // Pseudo functions, reused if the profile was annotated before.
  auto pseudo = [&](std::string_view name) -> uint64_t {
    for (const auto& [id, n] : fn_name)
      if (n == name) return id;
    auto* f = p.add_function();
    f->set_id(++max_fn);
    f->set_name(strs.intern(name));
    f->set_system_name(strs.intern(name));
    f->set_filename(strs.intern(""));
    fn_name[f->id()] = name;
    return f->id();
  };
  const uint64_t bound_fn = site_of.empty() ? 0 : pseudo(kBoundCheckFunction);
  const uint64_t nil_fn = site_of.empty() ? 0 : pseudo(kNilCheckFunction);

  std::unordered_set<uint64_t> caller_locs;
  for (const auto& s : p.sample())
    for (int i = 1; i < s.location_id_size(); ++i) caller_locs.insert(s.location_id(i));

  std::unordered_map<uint64_t, uint64_t> leaf_clone;  // original id → id its leaf uses get
  std::unordered_set<uint64_t> edited;
  using Key = std::tuple<CheckKind, std::string, std::string, int64_t>;
  std::map<Key, int64_t> per_line;
  for (auto& s : *p.mutable_sample()) {
    int64_t v = int(vi) < s.value_size() ? s.value(int(vi)) : 0;
    r.total += v;
    if (s.location_id_size() == 0) continue;
    uint64_t leaf = s.location_id(0);
    auto site = site_of.find(leaf);
    if (site == site_of.end()) continue;
    CheckKind kind = site->second->kind;
    (kind == CheckKind::kBounds ? r.bounds : r.nil) += v;

    uint64_t id = leaf;
    if (caller_locs.count(leaf)) {
      auto [it, fresh] = leaf_clone.try_emplace(leaf, 0);
      if (fresh) {
        Location copy = p.location(loc_index.at(leaf));
        copy.set_id(++max_loc);
        it->second = copy.id();
        loc_index[copy.id()] = p.location_size();
        *p.add_location() = std::move(copy);
        ++r.locations_cloned;
      }
      id = it->second;
      s.set_location_id(0, id);
    }
    Location& loc = *p.mutable_location(loc_index.at(id));
    uint64_t fn = kind == CheckKind::kBounds ? bound_fn : nil_fn;
    const bool done = loc.line_size() > 0 && (loc.line(0).function_id() == bound_fn ||
                                              loc.line(0).function_id() == nil_fn);
    // The real innermost frame: the first line once a pseudo line is in place.
    const int real = done ? 1 : 0;
    int64_t line = loc.line_size() > real ? loc.line(real).line() : 0;
    if (!done && edited.insert(id).second) {
      perftools::profiles::Line pl;
      pl.set_function_id(fn);
      pl.set_line(line);
      auto* lines = loc.mutable_line();
      lines->Add(std::move(pl));
      // Add appends; move the new line to the front (innermost).
      for (int i = lines->size() - 1; i > 0; --i) lines->SwapElements(i, i - 1);
      ++r.locations_edited;
    }
    std::string func, file;
    if (loc.line_size() > 1) {
      func = std::string(fn_name[loc.line(1).function_id()]);
      file = std::string(fn_file[loc.line(1).function_id()]);
    }
    per_line[{kind, func, file, line}] += v;
  }
  for (auto& [k, v] : per_line)
    r.lines.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), v});
  std::stable_sort(r.lines.begin(), r.lines.end(),
                   [](const CheckLine& a, const CheckLine& b) { return a.value > b.value; });
  return r;
}

}  // namespace goref::annotate
