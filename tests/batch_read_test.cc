// target::read_ranges: coalescing neighbouring ranges into few reads, and per-range results
// when a block spans unmapped memory.
#include <gtest/gtest.h>

#include "goref/target/batch_read.h"
#include "goref/target/fake_target.h"

namespace goref::target {
namespace {

std::vector<std::byte> pattern(size_t n, uint8_t seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::byte(static_cast<uint8_t>(seed + i));
  return v;
}

TEST(BatchRead, NeighboursShareOneRead) {
  FakeTarget t;
  auto mem = pattern(0x3000, 7);
  t.map(Addr(0x10000), mem);
  // Out of address order, overlapping, within the gap of each other.
  std::vector<Range> rs = {
      {Addr(0x12000), 0x100}, {Addr(0x10000), 0x40}, {Addr(0x10020), 0x40}, {Addr(0x10800), 0x10}};
  BatchReadStats st;
  auto got = read_ranges(t, rs, 8192, 1 << 20, &st);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(st.reads, 1u);
  EXPECT_EQ(st.bytes, 0x100u + 0x40 + 0x40 + 0x10);
  for (size_t i = 0; i < rs.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].error().message();
    uint64_t off = rs[i].addr - Addr(0x10000);
    EXPECT_EQ(*got[i], std::vector<std::byte>(mem.begin() + static_cast<long>(off),
                                              mem.begin() + static_cast<long>(off + rs[i].len)));
  }
}

TEST(BatchRead, BlockLimitAndGapSplitReads) {
  FakeTarget t;
  t.map(Addr(0x10000), pattern(0x10000, 1));
  std::vector<Range> rs = {{Addr(0x10000), 0x10}, {Addr(0x10100), 0x10}, {Addr(0x1c000), 0x10}};
  BatchReadStats st;
  auto got = read_ranges(t, rs, 0x200, 1 << 20, &st);
  EXPECT_EQ(st.reads, 2u);  // the first two together, the far one alone
  st = {};
  got = read_ranges(t, rs, 0x10000, 0x100, &st);
  EXPECT_EQ(st.reads, 3u);  // the block limit keeps each range apart
  for (auto& g : got) EXPECT_TRUE(g.ok());
}

TEST(BatchRead, UnmappedGapFallsBackPerRange) {
  FakeTarget t;
  t.map(Addr(0x10000), pattern(0x1000, 3));
  t.map(Addr(0x12000), pattern(0x1000, 9));
  std::vector<Range> rs = {{Addr(0x10000), 0x10}, {Addr(0x11800), 0x10}, {Addr(0x12000), 0x10}};
  auto got = read_ranges(t, rs, 0x2000, 1 << 20);
  ASSERT_TRUE(got[0].ok());
  EXPECT_FALSE(got[1].ok());  // unmapped: its own error, not the others'
  ASSERT_TRUE(got[2].ok());
  EXPECT_EQ((*got[2])[0], std::byte(9));
}

}  // namespace
}  // namespace goref::target
