#include "goref/base/bytes.h"

#include <gtest/gtest.h>

#include <vector>

namespace goref {
namespace {

std::vector<std::byte> bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

TEST(Bytes, UvarintDecodesGoEncoding) {
  auto b = bytes({0xac, 0x02, 0x01});
  auto v = read_uvarint(b, 0);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->value, 300u);
  EXPECT_EQ(v->length, 2u);
  auto w = read_uvarint(b, 2);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->value, 1u);
}

TEST(Bytes, UvarintRejectsTruncatedAndOverlong) {
  EXPECT_FALSE(read_uvarint(bytes({0x80, 0x80}), 0));
  EXPECT_FALSE(
      read_uvarint(bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}), 0));
  EXPECT_FALSE(read_uvarint(bytes({}), 0));
}

TEST(Bytes, LoadIsBoundsChecked) {
  auto b = bytes({1, 0, 0, 0, 2});
  EXPECT_EQ(load<uint32_t>(b, 0), 1u);
  EXPECT_FALSE(load<uint32_t>(b, 2));
  EXPECT_FALSE(load<uint32_t>(b, ~0ull - 1));
}

TEST(Bytes, CursorFailsOnceAndStaysFailed) {
  auto b = bytes({5, 'h', 'e', 'l', 'l', 'o'});
  ByteCursor c(b);
  EXPECT_EQ(c.uvarint(), 5u);
  EXPECT_EQ(c.str(5), "hello");
  EXPECT_TRUE(c.ok());
  (void)c.get<uint32_t>();
  EXPECT_FALSE(c.ok());
}

TEST(Bytes, CstrNeedsTerminator) {
  auto b = bytes({'a', 'b', 0, 'c'});
  EXPECT_EQ(read_cstr(b, 0), "ab");
  EXPECT_FALSE(read_cstr(b, 3));
}

}  // namespace
}  // namespace goref
