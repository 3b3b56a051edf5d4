// ReferenceProfileBuilder: a heap reference profile in pprof form. Each sample is one reference
// path, leaf first and root last, with its own objects and bytes; sample types are
// inuse_objects/count and inuse_space/bytes, inuse_space the default, so `go tool pprof` shows
// what each variable retains as a call graph of fields. Every distinct name is one Function and
// one Location; identical paths are merged.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "goref/profile/pprof.h"

namespace goref::profile {

class ReferenceProfileBuilder {
 public:
  ReferenceProfileBuilder();
  void add(std::span<const std::string> path_leaf_first, int64_t objects, int64_t bytes);
  void set_time_nanos(int64_t t) { time_nanos_ = t; }
  void add_comment(const std::string& c) { comments_.push_back(str(c)); }
  [[nodiscard]] Profile build() const;

 private:
  int64_t str(const std::string& s);
  uint64_t location(const std::string& name);

  std::vector<std::string> strings_;
  std::unordered_map<std::string, int64_t> string_ids_;
  std::vector<int64_t> location_names_;  // location/function id - 1 → name string
  std::unordered_map<std::string, uint64_t> location_ids_;
  struct Values {
    int64_t objects = 0, bytes = 0;
  };
  std::vector<std::vector<uint64_t>> paths_;
  std::vector<Values> values_;
  std::unordered_map<std::string, size_t> path_index_;  // key: location ids joined
  std::vector<int64_t> comments_;
  int64_t time_nanos_ = 0;
};

}  // namespace goref::profile
