#include "goref/profile/cpu_profile.h"

#include <string_view>

namespace goref::profile {

void CpuProfileBuilder::add(std::span<const uint64_t> pcs, int64_t cpu_ns) {
  if (pcs.empty()) return;
  std::vector<uint64_t> key;
  key.reserve(pcs.size());
  for (size_t i = 0; i < pcs.size(); ++i)
    key.push_back(i == 0 || pcs[i] == 0 ? pcs[i] : pcs[i] - 1);
  auto& v = stacks_[std::move(key)];
  ++v.count;
  v.ns += cpu_ns;
  ++nsamples_;
}

Profile CpuProfileBuilder::build(int64_t time_nanos, int64_t duration_nanos) const {
  Profile p;
  std::unordered_map<std::string, int64_t> strings;
  auto str = [&](std::string_view s) -> int64_t {
    auto [it, fresh] = strings.try_emplace(std::string(s), p.string_table_size());
    if (fresh) p.add_string_table(std::string(s));
    return it->second;
  };
  str("");
  auto value_type = [&](perftools::profiles::ValueType* vt, std::string_view type,
                        std::string_view unit) {
    vt->set_type(str(type));
    vt->set_unit(str(unit));
  };
  value_type(p.add_sample_type(), "samples", "count");
  value_type(p.add_sample_type(), "cpu", "nanoseconds");
  value_type(p.mutable_period_type(), "cpu", "nanoseconds");
  p.set_period(period_ns_);
  p.set_time_nanos(time_nanos);
  p.set_duration_nanos(duration_nanos);

  for (size_t i = 0; i < mappings_.size(); ++i) {
    const auto& m = mappings_[i];
    auto* pm = p.add_mapping();
    pm->set_id(i + 1);
    pm->set_memory_start(m.start);
    pm->set_memory_limit(m.limit);
    pm->set_file_offset(m.offset);
    pm->set_filename(str(m.file));
    pm->set_build_id(str(m.build_id));
    bool sym = bool(m.symbolize);
    pm->set_has_functions(sym);
    pm->set_has_filenames(sym);
    pm->set_has_line_numbers(sym);
    pm->set_has_inline_frames(sym);
  }

  std::unordered_map<uint64_t, uint64_t> loc_ids;
  std::map<std::pair<std::string, std::string>, uint64_t> fn_ids;
  auto location = [&](uint64_t addr) -> uint64_t {
    auto [it, fresh] = loc_ids.try_emplace(addr, loc_ids.size() + 1);
    if (!fresh) return it->second;
    auto* loc = p.add_location();
    loc->set_id(it->second);
    loc->set_address(addr);
    for (size_t i = 0; i < mappings_.size(); ++i) {
      const auto& m = mappings_[i];
      if (addr < m.start || addr >= m.limit) continue;
      loc->set_mapping_id(i + 1);
      if (!m.symbolize) break;
      for (const auto& f : m.symbolize(addr)) {
        auto [fit, fnew] = fn_ids.try_emplace({f.function, f.file}, fn_ids.size() + 1);
        if (fnew) {
          auto* fn = p.add_function();
          fn->set_id(fit->second);
          fn->set_name(str(f.function));
          fn->set_system_name(str(f.function));
          fn->set_filename(str(f.file));
        }
        auto* line = loc->add_line();
        line->set_function_id(fit->second);
        line->set_line(f.line);
      }
      break;
    }
    return it->second;
  };
  for (const auto& [stack, v] : stacks_) {
    auto* s = p.add_sample();
    for (uint64_t a : stack) s->add_location_id(location(a));
    s->add_value(v.count);
    s->add_value(v.ns);
  }
  return p;
}

}  // namespace goref::profile
