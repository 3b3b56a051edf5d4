// binary::Dwarf on damaged DWARF: copies of real fixtures with their debug sections decompressed
// (objcopy) and then edited: a typedef made to point at itself, random bytes overwritten,
// the file truncated. Every outcome must be a value (an error or a result), never a crash, a
// sanitizer report or an endless walk.
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "goref/binary/dwarf.h"
#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

using binary::Dwarf;
using binary::TypeKind;
using binary::TypeRef;

struct Section {
  uint64_t offset = 0, size = 0;
};

// A section's file range, read with libelf directly.
std::optional<Section> section(const std::string& path, const char* want) {
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<Section> out;
  size_t shstrndx = 0;
  if (e != nullptr && elf_getshdrstrndx(e, &shstrndx) == 0) {
    for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn != nullptr; scn = elf_nextscn(e, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr) continue;
      const char* name = elf_strptr(e, shstrndx, sh.sh_name);
      if (name != nullptr && strcmp(name, want) == 0 && (sh.sh_flags & SHF_COMPRESSED) == 0)
        out = Section{sh.sh_offset, sh.sh_size};
    }
  }
  if (e != nullptr) elf_end(e);
  close(fd);
  return out;
}

std::vector<char> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::vector<char>& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// The fixture with uncompressed .debug_* sections, so their bytes can be edited in place.
std::string decompressed_fixture(const FixtureParam& p, const std::string& dir) {
  auto exe = build_fixture(p.spec("basic"));
  if (!exe) return "";
  std::string out = dir + "/basic-plain";
  auto r = run_command({"objcopy", "--decompress-debug-sections", *exe, out});
  return r.exit_code == 0 ? out : "";
}

bool acceptable(const Error& e) {
  return e.code() == Errc::kBadFormat || e.code() == Errc::kNotFound;
}

// A failed query must report malformed or missing data.
template <class T>
void check(const Result<T>& r) {
  if (!r.ok()) {
    EXPECT_TRUE(acceptable(r.error())) << r.error().message();
  }
}

// Exercises every query on a (possibly damaged) Dwarf and checks each failure is reported as
// malformed or missing data.
void exercise(const Dwarf& dw) {
  for (const char* name :
       {"main.probe", "*main.probe", "runtime.g", "runtime.m", "runtime.mspan", "runtime.gobuf",
        "internal/abi.Type", "interface {}", "[]uint8", "string", "map[string]int"}) {
    auto t = dw.type(name);
    if (!t) continue;
    auto ti = dw.info(*t);
    if (!ti.ok()) {
      EXPECT_TRUE(acceptable(ti.error())) << ti.error().message();
      continue;
    }
    if (ti->runtime_type) (void)dw.type_for_runtime_type(*ti->runtime_type);
    for (auto ref : {ti->target, ti->go_elem, ti->go_key}) {
      if (!ref) continue;
      auto r = dw.info(*ref);
      check(r);
      auto s = dw.strip_typedefs(*ref);
      check(s);
    }
    auto ms = dw.members(*t);
    if (!ms.ok()) {
      EXPECT_TRUE(acceptable(ms.error())) << ms.error().message();
      continue;
    }
    for (const auto& m : *ms) {
      auto mi = dw.info(m.type);
      check(mi);
      auto mm = dw.members(m.type);
      check(mm);
    }
    auto dotted = dw.member(*t, "stack.lo");
    check(dotted);
  }
  for (const char* c : {"runtime._Gdead", "runtime.heapArenaBytes"}) (void)dw.constant(c);
  for (const char* v : {"main.gMarker", "runtime.allgs"}) {
    auto var = dw.variable(v);
    if (var) (void)dw.info(var->type);
  }
  (void)dw.producer();
}

class DwarfCorrupt : public ::testing::TestWithParam<FixtureParam> {};

// The typedef Go emits for main.probe is edited to name itself as its target: following it must
// stop with an error.
TEST_P(DwarfCorrupt, TypedefCycleIsAnError) {
  std::string dir = scratch_dir("dwarf_cycle_" + param_name({GetParam(), 0}));
  std::string plain = decompressed_fixture(GetParam(), dir);
  ASSERT_NE(plain, "");
  auto info_sec = section(plain, ".debug_info");
  ASSERT_TRUE(info_sec.has_value());

  uint64_t td = 0, st = 0;
  {
    auto d = Dwarf::open(plain);
    ASSERT_TRUE(d.ok()) << d.error().message();
    auto ptr = (*d)->info(*(*d)->type("*main.probe"));
    ASSERT_TRUE(ptr.ok() && ptr->target.has_value());
    td = ptr->target->die_offset;
    auto tdi = (*d)->info(*ptr->target);
    ASSERT_TRUE(tdi.ok());
    ASSERT_EQ(tdi->kind, TypeKind::kTypedef);
    ASSERT_EQ(tdi->name, "main.probe");
    st = (*d)->type("main.probe")->die_offset;
  }
  // Go's typedef DIE: a one-byte abbrev code, the name inline (DW_FORM_string), then the target
  // as a 4-byte DW_FORM_ref_addr. Check that shape before editing so a change fails loudly.
  auto bytes = slurp(plain);
  uint64_t pos = info_sec->offset + td;
  const std::string name("main.probe\0", 11);
  ASSERT_LT(pos + 1 + name.size() + 4, bytes.size());
  ASSERT_LT(static_cast<unsigned char>(bytes[pos]), 0x80u);
  ASSERT_EQ(std::string(&bytes[pos + 1], name.size()), name);
  uint32_t ref = 0;
  memcpy(&ref, &bytes[pos + 1 + name.size()], 4);
  ASSERT_EQ(ref, st);
  uint32_t self = static_cast<uint32_t>(td);
  memcpy(&bytes[pos + 1 + name.size()], &self, 4);
  std::string cyclic = dir + "/basic-cycle";
  spit(cyclic, bytes);

  auto d = Dwarf::open(cyclic);
  ASSERT_TRUE(d.ok()) << d.error().message();
  auto s = (*d)->strip_typedefs(TypeRef{td});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), Errc::kBadFormat);
  auto m = (*d)->members(TypeRef{td});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), Errc::kBadFormat);
  auto i = (*d)->info(TypeRef{td});
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.error().code(), Errc::kBadFormat);
  // The struct itself is intact.
  auto ms = (*d)->members(*(*d)->type("main.probe"));
  ASSERT_TRUE(ms.ok()) << ms.error().message();
  EXPECT_EQ(ms->size(), 8u);
  exercise(**d);
}

// Bytes overwritten with fixed seeds: a few anywhere in .debug_info (mostly breaking the index
// walk at open), some inside the DIEs of main.probe and runtime.g (left for the lazy decoding to
// trip over), and a couple in .debug_abbrev.
TEST_P(DwarfCorrupt, RandomDamageGivesErrorsNotCrashes) {
  std::string dir = scratch_dir("dwarf_random_" + param_name({GetParam(), 0}));
  std::string plain = decompressed_fixture(GetParam(), dir);
  ASSERT_NE(plain, "");
  auto info_sec = section(plain, ".debug_info");
  auto abbrev_sec = section(plain, ".debug_abbrev");
  ASSERT_TRUE(info_sec && abbrev_sec);
  std::vector<uint64_t> targets;
  {
    auto d = Dwarf::open(plain);
    ASSERT_TRUE(d.ok()) << d.error().message();
    for (const char* t : {"main.probe", "runtime.g", "*main.probe"})
      targets.push_back((*d)->type(t)->die_offset);
  }
  const auto original = slurp(plain);
  std::string damaged = dir + "/basic-damaged";
  int opened = 0, refused = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    auto bytes = original;
    if (seed <= 10) {
      for (uint32_t k = 0; k < seed; ++k)
        bytes[info_sec->offset + rng() % info_sec->size] = static_cast<char>(rng() & 0xff);
    } else if (seed <= 34) {
      // Within the first 1 KiB of a type's DIE (its members follow it).
      uint64_t base = targets[seed % targets.size()];
      for (int k = 0; k < 3; ++k) {
        uint64_t off = std::min<uint64_t>(base + rng() % 1024, info_sec->size - 1);
        bytes[info_sec->offset + off] = static_cast<char>(rng() & 0xff);
      }
    } else {
      for (int k = 0; k < 2; ++k)
        bytes[abbrev_sec->offset + rng() % abbrev_sec->size] = static_cast<char>(rng() & 0xff);
    }
    spit(damaged, bytes);
    auto d = Dwarf::open(damaged);
    if (!d.ok()) {
      EXPECT_TRUE(acceptable(d.error())) << "seed " << seed << ": " << d.error().message();
      ++refused;
      continue;
    }
    ++opened;
    exercise(**d);
  }
  EXPECT_EQ(opened + refused, 40);
  RecordProperty("opened", opened);
  RecordProperty("refused", refused);
}

TEST_P(DwarfCorrupt, TruncatedFileIsAnError) {
  std::string dir = scratch_dir("dwarf_trunc_" + param_name({GetParam(), 0}));
  std::string plain = decompressed_fixture(GetParam(), dir);
  ASSERT_NE(plain, "");
  auto info_sec = section(plain, ".debug_info");
  ASSERT_TRUE(info_sec.has_value());
  auto bytes = slurp(plain);
  // Cut inside .debug_info: the section headers at the end of the file are lost too.
  bytes.resize(info_sec->offset + info_sec->size / 2);
  std::string cut = dir + "/basic-cut";
  spit(cut, bytes);
  auto d = Dwarf::open(cut);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), Errc::kBadFormat) << d.error().message();
}

INSTANTIATE_TEST_SUITE_P(Go, DwarfCorrupt, ::testing::ValuesIn(all_versions()), param_name);

}  // namespace
}  // namespace goref::testing
