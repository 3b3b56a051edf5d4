#include "harness/matrix.h"

#include <cctype>

namespace goref::testing {

std::vector<FixtureParam> all_versions() {
  return versions_and_modes({BuildMode::kDefault});
}

std::vector<FixtureParam> versions_and_modes(const std::vector<BuildMode>& modes) {
  std::vector<FixtureParam> out;
  for (const auto& v : go_versions())
    for (auto m : modes) out.push_back({v, m, {}});
  return out;
}

std::string version_of(const std::string& minor) {
  for (const auto& v : go_versions())
    if (v.starts_with(minor + ".")) return v;
  return {};
}

std::string param_name(const ::testing::TestParamInfo<FixtureParam>& info) {
  std::string s = "go" + info.param.version + "_" + build_mode_name(info.param.mode);
  if (!info.param.goexperiment.empty()) s += "_" + info.param.goexperiment;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

}  // namespace goref::testing
