// binary::Dwarf against real Go binaries of every supported version and build mode. Expected
// values come from the fixture itself (unsafe.Sizeof/Offsetof, the addresses of its globals as it
// prints them), from Go's fixed numbering (reflect kinds, goroutine status values), and from
// runtime layouts measured on real binaries of each version (the research notes).
#include "goref/binary/dwarf.h"

#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

using binary::Dwarf;
using binary::TypeKind;
using binary::TypeRef;

// "1.21.13" → 21
int minor_of(const std::string& version) {
  auto a = version.find('.');
  return std::stoi(version.substr(a + 1));
}

// The lowest PT_LOAD vaddr of an ELF file, page-aligned, read with libelf directly.
std::optional<uint64_t> lowest_load_vaddr(const std::string& path) {
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<uint64_t> lowest;
  size_t n = 0;
  if (e != nullptr && elf_getphdrnum(e, &n) == 0) {
    for (size_t i = 0; i < n; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(e, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) continue;
      if (!lowest || ph.p_vaddr < *lowest) lowest = ph.p_vaddr;
    }
  }
  if (e != nullptr) elf_end(e);
  close(fd);
  if (lowest) *lowest &= ~(static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) - 1);
  return lowest;
}

// Where the kernel mapped the executable's file offset 0, from /proc/PID/maps.
std::optional<uint64_t> exe_map_start(pid_t pid, const std::string& exe) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string canon = std::filesystem::canonical(exe).string();
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream ls(line);
    std::string range, perms, offset, dev, inode, path;
    ls >> range >> perms >> offset >> dev >> inode >> path;
    if (path == canon && std::stoull(offset, nullptr, 16) == 0)
      return std::stoull(range.substr(0, range.find('-')), nullptr, 16);
  }
  return std::nullopt;
}

// One run of the basic fixture per build: its facts and its load bias, gathered once and shared
// by the tests of that build.
struct Observed {
  std::string exe;
  std::map<std::string, std::string> facts;
  uint64_t bias = 0;
  std::string error;
  [[nodiscard]] std::string fact(const std::string& k) const {
    auto it = facts.find(k);
    return it == facts.end() ? "" : it->second;
  }
  [[nodiscard]] uint64_t fact_u64(const std::string& k) const {
    auto it = facts.find(k);
    return it == facts.end() ? 0 : std::stoull(it->second, nullptr, 0);
  }
};

const Observed& observe(const FixtureParam& p) {
  static std::map<std::string, Observed> cache;
  std::string key = p.version + "/" + build_mode_name(p.mode);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Observed& o = cache[key];
  auto exe = build_fixture(p.spec("basic"));
  if (!exe) {
    o.error = exe.error().message();
    return o;
  }
  o.exe = *exe;
  auto fx = RunningFixture::start(*exe);
  if (!fx) {
    o.error = fx.error().message();
    return o;
  }
  o.facts = (*fx)->facts();
  auto start = exe_map_start((*fx)->pid(), *exe);
  auto low = lowest_load_vaddr(*exe);
  if (!start || !low) {
    o.error = "cannot compute the load bias of " + *exe;
    return o;
  }
  o.bias = *start - *low;
  return o;
}

class DwarfByBuild : public ::testing::TestWithParam<FixtureParam> {
 protected:
  void SetUp() override {
    obs_ = &observe(GetParam());
    ASSERT_TRUE(obs_->error.empty()) << obs_->error;
    auto d = Dwarf::open(obs_->exe);
    ASSERT_TRUE(d.ok()) << d.error().message();
    dw_ = std::move(*d);
  }
  const Observed* obs_ = nullptr;
  std::unique_ptr<Dwarf> dw_;
};

TEST_P(DwarfByBuild, ProbeLayoutMatchesTheProgramsOwnOffsets) {
  auto t = dw_->type("main.probe");
  ASSERT_TRUE(t.has_value());
  auto ti = dw_->info(*t);
  ASSERT_TRUE(ti.ok()) << ti.error().message();
  EXPECT_EQ(ti->name, "main.probe");
  EXPECT_EQ(ti->kind, TypeKind::kStruct);
  EXPECT_EQ(ti->go_kind, 25);  // reflect.Struct
  EXPECT_EQ(ti->size, obs_->fact_u64("type.main.probe.size"));
  ASSERT_NE(obs_->fact("type.main.probe.size"), "");

  auto ms = dw_->members(*t);
  ASSERT_TRUE(ms.ok()) << ms.error().message();
  std::vector<std::string> names;
  for (const auto& m : *ms) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"A", "B", "C", "D", "E", "F", "G", "H"}));
  for (const auto& m : *ms) {
    std::string fact = "offset.main.probe." + m.name;
    ASSERT_NE(obs_->fact(fact), "") << fact;
    EXPECT_EQ(m.offset, obs_->fact_u64(fact)) << m.name;
    EXPECT_FALSE(m.embedded) << m.name;
    auto one = dw_->member(*t, m.name);
    ASSERT_TRUE(one.ok()) << one.error().message();
    EXPECT_EQ(one->offset, m.offset);
  }

  // Go's reflect.Kind numbering: String 24, Slice 23, Map 21, Interface 20, Pointer 22, Array 17.
  const std::map<std::string, int64_t> kinds = {{"A", 3},  {"B", 6},  {"C", 24}, {"D", 23},
                                                {"E", 22}, {"F", 17}, {"G", 21}, {"H", 20}};
  for (const auto& [field, kind] : kinds) {
    auto m = dw_->member(*t, field);
    ASSERT_TRUE(m.ok()) << m.error().message();
    auto mi = dw_->info(m->type);
    ASSERT_TRUE(mi.ok()) << mi.error().message();
    EXPECT_EQ(mi->go_kind, kind) << field << " " << mi->name;
  }
  auto f = dw_->info(dw_->member(*t, "F")->type);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, TypeKind::kArray);
  EXPECT_EQ(f->array_count, 3u);
  EXPECT_EQ(f->size, 6u);
  auto e = dw_->info(dw_->member(*t, "E")->type);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->name, "*main.probe");
  EXPECT_EQ(e->size, 8u);
  auto d = dw_->info(dw_->member(*t, "D")->type);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->go_elem.has_value());
  EXPECT_EQ(dw_->info(*d->go_elem)->name, "int");
  auto g = dw_->info(dw_->member(*t, "G")->type);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(g->go_key.has_value() && g->go_elem.has_value());
  EXPECT_EQ(dw_->info(*g->go_key)->name, "string");
  EXPECT_EQ(dw_->info(*g->go_elem)->name, "int");

  auto missing = dw_->member(*t, "Z");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), Errc::kNotFound);
}

TEST_P(DwarfByBuild, BuiltinTypesByName) {
  // Go's own representation: int is an 8-byte base type of kind Int (2); a slice is a
  // {array, len, cap} struct of kind Slice (23); a string is {str, len} of kind String (24).
  auto i = dw_->info(dw_->type("int").value_or(TypeRef{}));
  ASSERT_TRUE(i.ok()) << i.error().message();
  EXPECT_EQ(i->kind, TypeKind::kBase);
  EXPECT_EQ(i->size, 8u);
  EXPECT_EQ(i->go_kind, 2);

  auto bs = dw_->type("[]uint8");
  ASSERT_TRUE(bs.has_value());
  auto b = dw_->info(*bs);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ(b->kind, TypeKind::kStruct);
  EXPECT_EQ(b->size, 24u);
  EXPECT_EQ(b->go_kind, 23);
  ASSERT_TRUE(b->go_elem.has_value());
  EXPECT_EQ(dw_->info(*b->go_elem)->name, "uint8");
  EXPECT_EQ(dw_->member(*bs, "array")->offset, 0u);
  EXPECT_EQ(dw_->member(*bs, "len")->offset, 8u);
  EXPECT_EQ(dw_->member(*bs, "cap")->offset, 16u);

  auto str = dw_->type("string");
  ASSERT_TRUE(str.has_value());
  EXPECT_EQ(dw_->info(*str)->go_kind, 24);
  EXPECT_EQ(dw_->member(*str, "len")->offset, 8u);

  auto pg = dw_->info(dw_->type("*runtime.g").value_or(TypeRef{}));
  ASSERT_TRUE(pg.ok()) << pg.error().message();
  EXPECT_EQ(pg->kind, TypeKind::kPointer);
  EXPECT_EQ(pg->go_kind, 22);
  ASSERT_TRUE(pg->target.has_value());
  EXPECT_EQ(dw_->strip_typedefs(*pg->target).value_or(TypeRef{}), *dw_->type("runtime.g"));

  EXPECT_FALSE(dw_->type("main.noSuchType").has_value());
}

TEST_P(DwarfByBuild, GlobalsAreAtThePrintedAddresses) {
  bool pie = GetParam().mode == BuildMode::kPie;
  if (pie)
    EXPECT_NE(obs_->bias, 0u);
  else
    EXPECT_EQ(obs_->bias, 0u);
  for (const char* name : {"main.gMarker", "main.gCounter", "main.gProbe"}) {
    std::string fact = std::string("global.") + name;
    ASSERT_NE(obs_->fact(fact), "") << fact;
    auto v = dw_->variable(name);
    ASSERT_TRUE(v.has_value()) << name;
    EXPECT_EQ(v->name, name);
    uint64_t printed = obs_->fact_u64(fact);
    if (pie)
      EXPECT_EQ(v->address, printed - obs_->bias) << name;
    else
      EXPECT_EQ(v->address, printed) << name;
  }
  auto marker = dw_->info(dw_->variable("main.gMarker")->type);
  ASSERT_TRUE(marker.ok());
  EXPECT_EQ(marker->name, "[32]uint8");
  EXPECT_EQ(marker->size, 32u);
  EXPECT_EQ(dw_->info(dw_->variable("main.gProbe")->type)->name, "*main.probe");
  EXPECT_TRUE(dw_->variable("runtime.allgs").has_value());
  EXPECT_FALSE(dw_->variable("main.noSuchGlobal").has_value());
}

TEST_P(DwarfByBuild, RuntimeConstants) {
  // Goroutine status numbering, unchanged since Go 1.x; heapArenaBytes is 64 MiB on linux/amd64.
  const std::map<std::string, int64_t> want = {
      {"runtime._Gidle", 0},      {"runtime._Grunnable", 1},
      {"runtime._Grunning", 2},   {"runtime._Gsyscall", 3},
      {"runtime._Gwaiting", 4},   {"runtime._Gdead", 6},
      {"runtime._Gpreempted", 9}, {"runtime.heapArenaBytes", 64 << 20}};
  for (const auto& [name, value] : want) {
    auto c = dw_->constant(name);
    ASSERT_TRUE(c.has_value()) << name;
    EXPECT_EQ(*c, value) << name;
  }
  EXPECT_FALSE(dw_->constant("runtime.noSuchConstant").has_value());
}

// runtime.g layout per minor version, measured with DWARF on real binaries of each version
// (research notes go-runtime.md §2.2 and go-1.27.md).
struct GLayout {
  uint64_t size, sched, atomicstatus, goid, waitreason, gopc, startpc;
};
const std::map<int, GLayout> kGLayouts = {
    {21, {408, 56, 144, 152, 176, 280, 296}}, {22, {424, 56, 144, 152, 176, 280, 296}},
    {23, {432, 56, 152, 160, 184, 288, 304}}, {24, {440, 56, 152, 160, 184, 288, 304}},
    {25, {440, 56, 144, 152, 176, 280, 296}}, {26, {456, 56, 144, 152, 176, 288, 304}},
    {27, {456, 56, 144, 152, 176, 288, 304}},
};

TEST_P(DwarfByBuild, RuntimeLayoutsMatchMeasuredOnes) {
  int minor = minor_of(GetParam().version);
  auto lay = kGLayouts.find(minor);
  ASSERT_NE(lay, kGLayouts.end()) << "no oracle for Go 1." << minor;
  auto g = dw_->type("runtime.g");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(dw_->info(*g)->size, lay->second.size);
  const std::map<std::string, uint64_t> offsets = {{"stack", 0},
                                                   {"stack.lo", 0},
                                                   {"stack.hi", 8},
                                                   {"sched", lay->second.sched},
                                                   {"sched.sp", lay->second.sched},
                                                   {"sched.pc", lay->second.sched + 8},
                                                   {"atomicstatus", lay->second.atomicstatus},
                                                   {"goid", lay->second.goid},
                                                   {"waitreason", lay->second.waitreason},
                                                   {"gopc", lay->second.gopc},
                                                   {"startpc", lay->second.startpc}};
  for (const auto& [path, off] : offsets) {
    auto m = dw_->member(*g, path);
    ASSERT_TRUE(m.ok()) << m.error().message();
    EXPECT_EQ(m->offset, off) << path;
  }
  EXPECT_EQ(dw_->info(dw_->member(*g, "goid")->type)->size, 8u);
  EXPECT_EQ(dw_->info(dw_->member(*g, "waitreason")->type)->size, 1u);
  auto deep = dw_->member(*g, "stack.nosuch");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().code(), Errc::kNotFound);

  // gobuf lost "ret" in 1.25.
  auto gobuf = dw_->type("runtime.gobuf");
  ASSERT_TRUE(gobuf.has_value());
  EXPECT_EQ(dw_->member(*gobuf, "ret").ok(), minor < 25);
  EXPECT_EQ(dw_->info(*gobuf)->size, minor < 25 ? 56u : 48u);

  // Allocation headers (mspan.largeType) from 1.22.
  auto mspan = dw_->type("runtime.mspan");
  ASSERT_TRUE(mspan.has_value());
  EXPECT_EQ(dw_->member(*mspan, "largeType").ok(), minor >= 22);

  // Swiss maps from 1.24, the classic hmap before.
  EXPECT_EQ(dw_->type("internal/runtime/maps.Map").has_value(), minor >= 24);
  EXPECT_EQ(dw_->type("runtime.hmap").has_value(), minor < 24);

  // Green Tea's inline mark bits, 128 bytes, in 1.26 and 1.27.
  auto gt = dw_->type("runtime.spanInlineMarkBits");
  EXPECT_EQ(gt.has_value(), minor >= 26);
  if (gt) {
    EXPECT_EQ(dw_->info(*gt)->size, 128u);
  }

  // internal/abi.Type is 48 bytes in every supported version.
  auto abi = dw_->type("internal/abi.Type");
  ASSERT_TRUE(abi.has_value());
  EXPECT_EQ(dw_->info(*abi)->size, 48u);
  EXPECT_EQ(dw_->member(*abi, "Kind_")->offset, 23u);

  // Go's source declares `type PtrType struct { Type; Elem *Type }`: Type is embedded.
  auto ptrtype = dw_->type("internal/abi.PtrType");
  ASSERT_TRUE(ptrtype.has_value());
  auto embedded = dw_->member(*ptrtype, "Type");
  ASSERT_TRUE(embedded.ok()) << embedded.error().message();
  EXPECT_TRUE(embedded->embedded);
  EXPECT_EQ(embedded->offset, 0u);
  // Members refer to the named typedef; behind it is the struct type() returns.
  EXPECT_EQ(dw_->info(embedded->type)->kind, TypeKind::kTypedef);
  EXPECT_EQ(dw_->strip_typedefs(embedded->type).value_or(TypeRef{}), *abi);
  auto elem = dw_->member(*ptrtype, "Elem");
  ASSERT_TRUE(elem.ok()) << elem.error().message();
  EXPECT_FALSE(elem->embedded);
  EXPECT_EQ(elem->offset, 48u);
  // Through the embedded struct, as Go's promoted fields read.
  EXPECT_EQ(dw_->member(*ptrtype, "Type.Kind_")->offset, 23u);
}

TEST_P(DwarfByBuild, RuntimeTypeOffsetsMapBackToTheirTypes) {
  for (const char* name : {"main.probe", "*main.probe"}) {
    auto t = dw_->type(name);
    ASSERT_TRUE(t.has_value()) << name;
    auto ti = dw_->info(*t);
    ASSERT_TRUE(ti.ok()) << ti.error().message();
    ASSERT_TRUE(ti->runtime_type.has_value()) << name;
    EXPECT_NE(*ti->runtime_type, 0u) << name;
    auto back = dw_->type_for_runtime_type(*ti->runtime_type);
    ASSERT_TRUE(back.has_value()) << name;
    EXPECT_EQ(*back, *t) << name;
    EXPECT_EQ(dw_->info(*back)->name, name);
  }
  EXPECT_NE(*dw_->info(*dw_->type("main.probe"))->runtime_type,
            *dw_->info(*dw_->type("*main.probe"))->runtime_type);
  EXPECT_FALSE(dw_->type_for_runtime_type(0).has_value());

  // *main.probe points at the typedef Go emits for the named struct; following it gives the
  // struct itself.
  auto ptr = dw_->info(*dw_->type("*main.probe"));
  ASSERT_TRUE(ptr->target.has_value());
  auto under = dw_->strip_typedefs(*ptr->target);
  ASSERT_TRUE(under.ok()) << under.error().message();
  EXPECT_EQ(*under, *dw_->type("main.probe"));
}

// The SHF_COMPRESSED flag of a section, read with libelf directly.
std::optional<bool> section_compressed(const std::string& path, const char* want) {
  elf_version(EV_CURRENT);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<bool> out;
  size_t shstrndx = 0;
  if (e != nullptr && elf_getshdrstrndx(e, &shstrndx) == 0) {
    for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn != nullptr; scn = elf_nextscn(e, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr) continue;
      const char* name = elf_strptr(e, shstrndx, sh.sh_name);
      if (name != nullptr && strcmp(name, want) == 0) out = (sh.sh_flags & SHF_COMPRESSED) != 0;
    }
  }
  if (e != nullptr) elf_end(e);
  close(fd);
  return out;
}

TEST_P(DwarfByBuild, ProducerAndDwarfVersion) {
  // Every Go version writes zlib-compressed debug sections; everything above read through them.
  EXPECT_EQ(section_compressed(obs_->exe, ".debug_info"), true);
  EXPECT_NE(dw_->producer().find("go" + GetParam().version), std::string::npos) << dw_->producer();
  EXPECT_EQ(dw_->version(), minor_of(GetParam().version) < 25 ? 4 : 5);
  auto s = dw_->stats();
  EXPECT_GT(s.units, 1u);
  EXPECT_GT(s.runtime_types, 0u);
}

INSTANTIATE_TEST_SUITE_P(Go, DwarfByBuild,
                         ::testing::ValuesIn(versions_and_modes(
                             {BuildMode::kDefault, BuildMode::kPie, BuildMode::kNoOpt})),
                         param_name);

class DwarfStripped : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(DwarfStripped, OpenSaysTheBinaryHasNoDwarf) {
  auto exe = build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto d = Dwarf::open(*exe);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), Errc::kNoDwarf);
  EXPECT_EQ(d.error().message(),
            *exe +
                " has no DWARF debug info (built with -ldflags=-w or stripped); goref needs it: "
                "rebuild without -w/-s, or keep an unstripped copy and pass it with --exe");
}

INSTANTIATE_TEST_SUITE_P(Go, DwarfStripped,
                         ::testing::ValuesIn(versions_and_modes({BuildMode::kStripped})),
                         param_name);

TEST(DwarfErrors, TextFileIsBadFormat) {
  std::string path = scratch_dir("dwarf_text") + "/notes.txt";
  std::ofstream(path) << "not an executable\n";
  auto d = Dwarf::open(path);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), Errc::kBadFormat);
}

TEST(DwarfErrors, MissingFileIsNotFound) {
  auto d = Dwarf::open(scratch_dir("dwarf_missing") + "/no-such-binary");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), Errc::kNotFound);
}

}  // namespace
}  // namespace goref::testing
