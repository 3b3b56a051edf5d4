#include "goref/target/fake_target.h"

#include <gtest/gtest.h>

namespace goref::target {
namespace {

TEST(FakeTarget, ReadsAcrossAdjacentRegionsAndStopsAtGap) {
  FakeTarget t;
  t.map(Addr(0x1000), std::vector<std::byte>(16, std::byte{0xaa}));
  t.map(Addr(0x1010), std::vector<std::byte>(16, std::byte{0xbb}));
  std::vector<std::byte> buf(40);
  auto n = t.read_some(Addr(0x1008), buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 24u);  // 8 of the first region, all 16 of the second, then the gap
  EXPECT_EQ(buf[0], std::byte{0xaa});
  EXPECT_EQ(buf[8], std::byte{0xbb});

  auto exact = t.read_exact(Addr(0x1008), buf);
  ASSERT_FALSE(exact.ok());
  EXPECT_EQ(exact.error().code(), Errc::kShortRead);
  EXPECT_NE(exact.error().message().find("0x1008"), std::string::npos);
}

TEST(FakeTarget, UnmappedReadIsAnError) {
  FakeTarget t;
  auto v = t.read<uint64_t>(Addr(0x5000));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code(), Errc::kUnmapped);
}

TEST(FakeTarget, WrappingReadIsRejected) {
  FakeTarget t;
  t.map(Addr(~0ull - 7), std::vector<std::byte>(8));
  std::vector<std::byte> buf(16);
  EXPECT_FALSE(t.read_exact(Addr(~0ull - 7), buf).ok());
}

TEST(FakeTarget, FindMapping) {
  FakeTarget t;
  t.map(Addr(0x1000), std::vector<std::byte>(0x100), "/bin/x");
  t.map(Addr(0x3000), std::vector<std::byte>(0x100));
  ASSERT_NE(t.find_mapping(Addr(0x10ff)), nullptr);
  EXPECT_EQ(t.find_mapping(Addr(0x10ff))->path, "/bin/x");
  EXPECT_EQ(t.find_mapping(Addr(0x1100)), nullptr);
  EXPECT_EQ(t.find_mapping(Addr(0x0fff)), nullptr);
  EXPECT_NE(t.find_mapping(Addr(0x3000)), nullptr);
}

TEST(Result, ContextPrefixesMessage) {
  Result<int> r = Error(Errc::kShortRead, "short read");
  auto r2 = std::move(r).context("mspan 0x10: field nelems");
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().message(), "mspan 0x10: field nelems: short read");
}

}  // namespace
}  // namespace goref::target
