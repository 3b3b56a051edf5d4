// parse_build_info on hand-built .go.buildinfo sections: versions with experiment suffixes in the
// spellings of Go 1.25 and 1.26+, modinfo framing and build settings, and truncated or garbage
// input.
#include "goref/binary/build_info.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace goref::binary {
namespace {

using Buf = std::vector<std::byte>;

void put_uvarint(Buf& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<std::byte>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  b.push_back(static_cast<std::byte>(v));
}

void put_str(Buf& b, const std::string& s) {
  put_uvarint(b, s.size());
  for (char c : s) b.push_back(static_cast<std::byte>(c));
}

// The 16-byte sentinels cmd/go wraps modinfo in.
const std::string kStart =
    std::string("0w\xaf\x0c\x92t\x08\x02\x41\xe1\xc1\x07\xe6\xd6\x18\xe6", 16);
const std::string kEnd =
    std::string("\xf9\x32\x43\x31\x86\x18\x20\x72\x00\x82\x42\x10\x41\x16\xd8\xf2", 16);

Buf section(const std::string& version, const std::string& modinfo, uint8_t flags = 2) {
  Buf b;
  for (char c : kBuildInfoMagic) b.push_back(static_cast<std::byte>(c));
  b.push_back(std::byte{8});
  b.push_back(static_cast<std::byte>(flags));
  b.resize(32);
  put_str(b, version);
  put_str(b, modinfo);
  b.resize(b.size() + 7);  // trailing padding, as in a real section
  return b;
}

const std::string kModinfo =
    "path\tgoref.test/basic\n"
    "mod\tgoref.test/basic\t(devel)\t\n"
    "dep\tgolang.org/x/sys\tv0.1.0\th1:abc=\n"
    "build\t-buildmode=pie\n"
    "build\t-compiler=gc\n"
    "build\t-ldflags=\"-s -w\"\n"
    "build\tCGO_ENABLED=1\n"
    "build\tGOARCH=amd64\n"
    "build\tGOEXPERIMENT=nogreenteagc\n"
    "build\tGOOS=linux\n";

TEST(BuildInfo, PlainVersionAndModinfo) {
  auto bi = parse_build_info(section("go1.26.8", kStart + kModinfo + kEnd));
  ASSERT_TRUE(bi.ok()) << bi.error().message();
  EXPECT_EQ(bi->version, "go1.26.8");
  EXPECT_EQ(bi->raw_version, "go1.26.8");
  EXPECT_EQ(bi->major, 1);
  EXPECT_EQ(bi->minor, 26);
  EXPECT_EQ(bi->patch, 8);
  EXPECT_TRUE(bi->experiments.empty());
  EXPECT_EQ(bi->modinfo, kModinfo);  // sentinels stripped
  EXPECT_EQ(bi->path, "goref.test/basic");
  EXPECT_EQ(bi->main_module, "goref.test/basic");
  EXPECT_EQ(bi->settings.at("-buildmode"), "pie");
  EXPECT_EQ(bi->settings.at("-compiler"), "gc");
  EXPECT_EQ(bi->settings.at("-ldflags"), "-s -w");  // unquoted
  EXPECT_EQ(bi->settings.at("CGO_ENABLED"), "1");
  EXPECT_EQ(bi->settings.at("GOARCH"), "amd64");
  EXPECT_EQ(bi->settings.at("GOEXPERIMENT"), "nogreenteagc");
  EXPECT_EQ(bi->settings.count("golang.org/x/sys"), 0u);
  EXPECT_EQ(bi->settings.size(), 7u);
  EXPECT_TRUE(bi->at_least(1, 26));
  EXPECT_FALSE(bi->at_least(1, 27));
}

TEST(BuildInfo, ExperimentSuffixUpTo125) {
  auto bi = parse_build_info(section("go1.25.12 X:greenteagc", ""));
  ASSERT_TRUE(bi.ok()) << bi.error().message();
  EXPECT_EQ(bi->version, "go1.25.12");
  EXPECT_EQ(bi->raw_version, "go1.25.12 X:greenteagc");
  EXPECT_EQ(bi->minor, 25);
  EXPECT_EQ(bi->patch, 12);
  EXPECT_EQ(bi->experiments, std::vector<std::string>{"greenteagc"});
  EXPECT_TRUE(bi->modinfo.empty());
  EXPECT_TRUE(bi->settings.empty());
}

TEST(BuildInfo, ExperimentSuffixFrom126) {
  auto bi = parse_build_info(section("go1.26.10-X:nogreenteagc", ""));
  ASSERT_TRUE(bi.ok()) << bi.error().message();
  EXPECT_EQ(bi->version, "go1.26.10");
  EXPECT_EQ(bi->patch, 10);
  EXPECT_EQ(bi->experiments, std::vector<std::string>{"nogreenteagc"});

  auto multi = parse_build_info(section("go1.27.4-X:nogreenteagc,mapsplitgroup", ""));
  ASSERT_TRUE(multi.ok());
  EXPECT_EQ(multi->version, "go1.27.4");
  EXPECT_EQ(multi->minor, 27);
  EXPECT_EQ(multi->experiments, (std::vector<std::string>{"nogreenteagc", "mapsplitgroup"}));
}

TEST(BuildInfo, OtherVersionShapes) {
  BuildInfo bi;
  parse_go_version("go1.21rc2", bi);
  EXPECT_EQ(bi.major, 1);
  EXPECT_EQ(bi.minor, 21);
  EXPECT_EQ(bi.patch, 0);
  parse_go_version("devel go1.27-abcdef Tue Jan 1 00:00:00 2026 +0000 X:simd", bi);
  EXPECT_EQ(bi.minor, 27);
  EXPECT_EQ(bi.experiments, std::vector<std::string>{"simd"});
  parse_go_version("garbage", bi);
  EXPECT_EQ(bi.major, 0);
  EXPECT_EQ(bi.version, "garbage");
}

TEST(BuildInfo, ModinfoWithoutSentinelsIsKeptWhole) {
  auto bi = parse_build_info(section("go1.22.12", "path\tx\n"));
  ASSERT_TRUE(bi.ok());
  EXPECT_EQ(bi->modinfo, "path\tx\n");
  EXPECT_EQ(bi->path, "x");
}

TEST(BuildInfo, LongModinfoUsesMultiByteLength) {
  std::string mod = kModinfo;
  for (int i = 0; i < 100; ++i)
    mod += "dep\texample.com/m" + std::to_string(i) + "\tv1.0.0\th1:x=\n";
  auto bi = parse_build_info(section("go1.24.13 X:noswissmap", kStart + mod + kEnd));
  ASSERT_TRUE(bi.ok()) << bi.error().message();
  EXPECT_GT(mod.size(), 128u);
  EXPECT_EQ(bi->modinfo, mod);
  EXPECT_EQ(bi->experiments, std::vector<std::string>{"noswissmap"});
}

TEST(BuildInfo, RejectsGarbageAndTruncation) {
  EXPECT_EQ(parse_build_info(Buf{}).error().code(), Errc::kBadFormat);
  Buf garbage(64, std::byte{0x41});
  EXPECT_EQ(parse_build_info(garbage).error().code(), Errc::kBadFormat);
  // Pre-1.18 pointer format.
  EXPECT_EQ(parse_build_info(section("go1.17", "", 0)).error().code(), Errc::kUnsupported);

  Buf full = section("go1.26.8", kStart + kModinfo + kEnd);
  full.resize(full.size() - 7);  // drop the padding: the modinfo ends exactly at the end
  ASSERT_TRUE(parse_build_info(full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    Buf cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
    auto r = parse_build_info(cut);
    EXPECT_FALSE(r.ok()) << "accepted a section cut at " << n;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), Errc::kBadFormat);
    }
  }
  // A huge declared length must not be trusted.
  Buf huge = section("go1.26.8", "");
  huge.resize(32);
  put_uvarint(huge, uint64_t{1} << 40);
  EXPECT_EQ(parse_build_info(huge).error().code(), Errc::kBadFormat);
}

}  // namespace
}  // namespace goref::binary
