// Parameters for tests that run across the Go version × build mode matrix.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/fixture.h"

namespace goref::testing {

struct FixtureParam {
  std::string version;
  BuildMode mode = BuildMode::kDefault;
  std::string goexperiment;  // empty: the version's default
  [[nodiscard]] BuildSpec spec(const std::string& fixture) const {
    return BuildSpec{fixture, version, mode, goexperiment};
  }
};

// gtest prints parameters with this (instead of a byte dump).
inline void PrintTo(const FixtureParam& p, std::ostream* os) {
  *os << "go" << p.version << "/" << build_mode_name(p.mode);
  if (!p.goexperiment.empty()) *os << "/GOEXPERIMENT=" << p.goexperiment;
}

// Every listed version, default build mode.
std::vector<FixtureParam> all_versions();
// Every listed version × each of the given modes.
std::vector<FixtureParam> versions_and_modes(const std::vector<BuildMode>& modes);

// The listed version of a Go minor release ("1.24" → "1.24.13"), or empty.
std::string version_of(const std::string& minor);

// "go1_21_13_pie" ("go1_26_10_default_nogreenteagc" with an experiment): a gtest-safe name.
std::string param_name(const ::testing::TestParamInfo<FixtureParam>& info);

}  // namespace goref::testing
