// The harness itself: every listed toolchain is present, builds the basic fixture, and the
// fixture reports the version it was built with.
#include <gtest/gtest.h>

#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

TEST(Harness, EveryListedToolchainIsInstalled) {
  auto tcs = go_toolchains();
  ASSERT_TRUE(tcs.ok()) << tcs.error().message();
  EXPECT_EQ(tcs->size(), go_versions().size());
  EXPECT_GE(tcs->size(), 7u);  // 1.21 through 1.27
}

class HarnessByVersion : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(HarnessByVersion, FixtureStartsAndReportsItsVersion) {
  auto exe = build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  EXPECT_EQ((*fx)->fact("version"), "go" + GetParam().version);
  EXPECT_EQ((*fx)->fact_u64("pid"), static_cast<uint64_t>((*fx)->pid()));
  EXPECT_TRUE((*fx)->running_untraced());
}

INSTANTIATE_TEST_SUITE_P(Go, HarnessByVersion, ::testing::ValuesIn(all_versions()), param_name);

}  // namespace
}  // namespace goref::testing
