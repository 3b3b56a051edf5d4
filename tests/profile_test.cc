// The pprof layer: gzip bounds, parsing, and the reference-profile builder's invariants.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "goref/profile/pprof.h"
#include "goref/profile/reference_profile.h"

namespace goref::profile {
namespace {

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span<const char>(s));
}

TEST(Gzip, RoundTrip) {
  std::string text(100000, 'x');
  for (size_t i = 0; i < text.size(); i += 7) text[i] = static_cast<char>('a' + i % 26);
  auto gz = gzip(bytes_of(text));
  ASSERT_TRUE(gz.ok());
  EXPECT_LT(gz->size(), text.size() / 4);
  auto back = gunzip(*gz, 1 << 20);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(back->data()), back->size()), text);
}

TEST(Gzip, TruncatedAndCorruptStreamsAreErrors) {
  auto gz = gzip(bytes_of(std::string(5000, 'q')));
  ASSERT_TRUE(gz.ok());
  auto cut = std::span<const std::byte>(*gz).first(gz->size() / 2);
  EXPECT_FALSE(gunzip(cut, 1 << 20).ok());
  std::vector<std::byte> bad = *gz;
  for (size_t i = 10; i < bad.size(); i += 3) bad[i] ^= std::byte{0x5a};
  EXPECT_FALSE(gunzip(bad, 1 << 20).ok());
}

TEST(Gzip, OutputBoundIsEnforcedWithoutAllocatingIt) {
  // 64 MiB of zeros compress to ~64 KiB: a small file claiming a large output.
  std::string zeros(64 << 20, '\0');
  auto gz = gzip(bytes_of(zeros));
  ASSERT_TRUE(gz.ok());
  auto r = gunzip(*gz, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kBadFormat);
}

Profile sample_profile() {
  ReferenceProfileBuilder b;
  std::vector<std::string> a = {"buf. ([]uint8)", "$mapval. (*main.entry)", "main.registry"};
  std::vector<std::string> c = {"main.list"};
  b.add(a, 2, 8192);
  b.add(a, 1, 4096);  // merged with the first
  b.add(c, 3, 96);
  b.add_comment("test");
  b.set_time_nanos(42);
  return b.build();
}

TEST(ReferenceProfile, MergesPathsAndKeepsIdsConsistent) {
  Profile p = sample_profile();
  ASSERT_EQ(p.sample_type_size(), 2);
  EXPECT_EQ(p.string_table(p.sample_type(0).type()), "inuse_objects");
  EXPECT_EQ(p.string_table(p.sample_type(1).unit()), "bytes");
  EXPECT_EQ(p.string_table(p.default_sample_type()), "inuse_space");
  EXPECT_EQ(p.string_table(0), "");
  std::set<std::string> strings(p.string_table().begin(), p.string_table().end());
  EXPECT_EQ(strings.size(), static_cast<size_t>(p.string_table_size())) << "duplicate strings";
  ASSERT_EQ(p.sample_size(), 2);
  EXPECT_EQ(p.sample(0).value(0), 3);
  EXPECT_EQ(p.sample(0).value(1), 12288);
  EXPECT_EQ(p.sample(1).value(1), 96);
  std::set<uint64_t> locs, funcs;
  for (const auto& l : p.location()) locs.insert(l.id());
  for (const auto& f : p.function()) {
    funcs.insert(f.id());
    EXPECT_LT(f.name(), p.string_table_size());
  }
  EXPECT_EQ(locs.size(), 4u);
  for (const auto& s : p.sample())
    for (uint64_t id : s.location_id()) EXPECT_TRUE(locs.count(id));
  for (const auto& l : p.location())
    for (const auto& line : l.line()) EXPECT_TRUE(funcs.count(line.function_id()));
  // Leaf first: the first sample's last location is the root variable.
  const auto& root_loc = p.location(static_cast<int>(p.sample(0).location_id(2) - 1));
  const auto& root_fn = p.function(static_cast<int>(root_loc.line(0).function_id() - 1));
  EXPECT_EQ(p.string_table(root_fn.name()), "main.registry");
}

TEST(ReferenceProfile, WriteThenReadRoundTrip) {
  auto path = (std::filesystem::temp_directory_path() / "goref-profile-test.pb.gz").string();
  ASSERT_TRUE(write_profile_file(sample_profile(), path).ok());
  auto back = read_profile_file(path);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->sample_size(), 2);
  EXPECT_EQ(back->time_nanos(), 42);
  std::filesystem::remove(path);
}

TEST(ReferenceProfile, ParseRejectsGarbage) {
  EXPECT_FALSE(parse_profile(bytes_of("definitely not a profile")).ok());
  EXPECT_FALSE(read_profile_file("/nonexistent/goref.pb.gz").ok());
}

}  // namespace
}  // namespace goref::profile
