#include "goref/profile/reference_profile.h"

namespace goref::profile {

ReferenceProfileBuilder::ReferenceProfileBuilder() {
  str("");
}

int64_t ReferenceProfileBuilder::str(const std::string& s) {
  auto [it, inserted] = string_ids_.try_emplace(s, static_cast<int64_t>(strings_.size()));
  if (inserted) strings_.push_back(s);
  return it->second;
}

uint64_t ReferenceProfileBuilder::location(const std::string& name) {
  auto [it, inserted] = location_ids_.try_emplace(name, location_names_.size() + 1);
  if (inserted) location_names_.push_back(str(name));
  return it->second;
}

void ReferenceProfileBuilder::add(std::span<const std::string> path, int64_t objects,
                                  int64_t bytes) {
  std::vector<uint64_t> ids;
  std::string key;
  ids.reserve(path.size());
  for (const auto& n : path) {
    ids.push_back(location(n));
    key += std::to_string(ids.back());
    key += ',';
  }
  auto [it, inserted] = path_index_.try_emplace(key, paths_.size());
  if (inserted) {
    paths_.push_back(std::move(ids));
    values_.push_back({});
  }
  values_[it->second].objects += objects;
  values_[it->second].bytes += bytes;
}

Profile ReferenceProfileBuilder::build() const {
  Profile p;
  // build() is const: the fixed strings are added to a copy of the table.
  std::vector<std::string> strings = strings_;
  std::unordered_map<std::string, int64_t> ids = string_ids_;
  auto s = [&](const std::string& v) {
    auto [it, inserted] = ids.try_emplace(v, static_cast<int64_t>(strings.size()));
    if (inserted) strings.push_back(v);
    return it->second;
  };
  auto* objects = p.add_sample_type();
  objects->set_type(s("inuse_objects"));
  objects->set_unit(s("count"));
  auto* space = p.add_sample_type();
  space->set_type(s("inuse_space"));
  space->set_unit(s("bytes"));
  p.set_default_sample_type(s("inuse_space"));
  for (size_t i = 0; i < location_names_.size(); ++i) {
    auto* f = p.add_function();
    f->set_id(i + 1);
    f->set_name(location_names_[i]);
    f->set_system_name(location_names_[i]);
    auto* l = p.add_location();
    l->set_id(i + 1);
    l->add_line()->set_function_id(i + 1);
  }
  for (size_t i = 0; i < paths_.size(); ++i) {
    auto* smp = p.add_sample();
    for (uint64_t id : paths_[i]) smp->add_location_id(id);
    smp->add_value(values_[i].objects);
    smp->add_value(values_[i].bytes);
  }
  for (int64_t c : comments_) p.add_comment(c);
  p.set_time_nanos(time_nanos_);
  for (auto& v : strings) p.add_string_table(std::move(v));
  return p;
}

}  // namespace goref::profile
