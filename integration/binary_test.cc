// The ELF, build-info and pclntab readers against real Go programs: every supported toolchain ×
// {default, pie, noopt, stripped}. The basic fixture states its Go version, function entries
// and source positions (runtime.FuncForPC) and the logical frames of a stack captured inside an
// inlined call (runtime.CallersFrames); goref's readers must agree with the runtime exactly.
#include <elf.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "goref/base/addr.h"
#include "goref/binary/build_info.h"
#include "goref/binary/elf_file.h"
#include "goref/binary/pclntab.h"
#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

using binary::ElfFile;
using binary::Pclntab;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

uint64_t parse_u64(const std::string& s) {
  return std::stoull(s, nullptr, 0);
}

// The load bias of a running executable, computed without goref: the start of the mapping of
// the executable at file offset 0, minus the page-aligned vaddr of its first PT_LOAD (read here
// straight from the ELF program headers).
Result<uint64_t> load_bias(pid_t pid, const std::string& exe) {
  std::ifstream f(exe, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!f.read(reinterpret_cast<char*>(&eh), sizeof eh)) return Error(Errc::kIo, "read ehdr");
  uint64_t first_vaddr = UINT64_MAX;
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    f.seekg(static_cast<std::streamoff>(eh.e_phoff + uint64_t(i) * eh.e_phentsize));
    if (!f.read(reinterpret_cast<char*>(&ph), sizeof ph)) return Error(Errc::kIo, "read phdr");
    if (ph.p_type == PT_LOAD) {
      first_vaddr = ph.p_vaddr & ~uint64_t{0xfff};
      break;
    }
  }
  if (first_vaddr == UINT64_MAX) return Error(Errc::kNotFound, "no PT_LOAD");
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // start-end perms offset dev inode path
    std::istringstream ls(line);
    std::string range, perms, offset, dev, inode, path;
    ls >> range >> perms >> offset >> dev >> inode >> path;
    if (path != exe || std::stoull(offset, nullptr, 16) != 0) continue;
    return std::stoull(range.substr(0, range.find('-')), nullptr, 16) - first_vaddr;
  }
  return Error(Errc::kNotFound, "no mapping of " + exe + " at offset 0");
}

// Every position the runtime reported (func.* and callers.frame.* facts) symbolizes the same
// way through tab; bias is the fixture's load bias.
void expect_runtime_positions(const Pclntab& tab, const RunningFixture& run, uint64_t bias,
                              BuildMode mode) {
  auto funcs = run.facts_with_prefix("func.");
  ASSERT_EQ(funcs.size(), 4u);
  for (const auto& [key, value] : funcs) {
    SCOPED_TRACE("func." + key + "=" + value);
    auto parts = split(value, '|');
    ASSERT_EQ(parts.size(), 4u);
    uint64_t entry = parse_u64(parts[0]) - bias;
    auto f = tab.find_func(entry);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->entry(), entry);
    EXPECT_EQ(f->name(), parts[1]);
    EXPECT_EQ(f->pcsp_at(entry), 0);
    auto fr = tab.symbolize(entry);
    ASSERT_FALSE(fr.empty());
    EXPECT_EQ(fr[0].function, parts[1]);
    EXPECT_EQ(fr[0].file, parts[2]);
    EXPECT_EQ(fr[0].line, std::stoi(parts[3]));
    EXPECT_FALSE(fr[0].inlined);
    EXPECT_EQ(fr[0].entry, entry);
  }

  // Logical frames of the stack captured inside the inlined helper.
  struct Fact {
    uint64_t pc;
    std::string function, file;
    int line;
  };
  std::vector<Fact> frames;
  for (int i = 0;; ++i) {
    std::string v = run.fact("callers.frame." + std::to_string(i));
    if (v.empty()) break;
    auto p = split(v, '|');
    ASSERT_EQ(p.size(), 4u) << v;
    frames.push_back({parse_u64(p[0]), p[1], p[2], std::stoi(p[3])});
  }
  ASSERT_GE(frames.size(), 4u);
  for (const auto& fr : frames) {
    SCOPED_TRACE(fr.function + " at " + to_hex(fr.pc));
    auto got = tab.symbolize(fr.pc - bias);
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got[0].function, fr.function);
    EXPECT_EQ(got[0].file, fr.file);
    EXPECT_EQ(got[0].line, fr.line);
  }
  // frame.1 (the helper) and frame.2 (its caller) are one physical call: runtime.Callers
  // recorded the helper's return pc, and a second pc one past it for the inlined-into caller.
  size_t helper = 0;
  while (helper < frames.size() && frames[helper].function != "main.inlinedHelper") ++helper;
  ASSERT_LT(helper + 1, frames.size());
  bool inlined = frames[helper + 1].pc == frames[helper].pc + 1;
  // With -N -l nothing is inlined: the helper is a physical frame of its own.
  EXPECT_EQ(inlined, mode != BuildMode::kNoOpt);
  if (inlined) {
    const Fact& inner = frames[helper];
    const Fact& outer = frames[helper + 1];
    EXPECT_EQ(outer.function, "main.callersOuter");
    uint64_t ret = inner.pc + 1;  // the physical return address runtime.Callers recorded
    auto pcs = split(run.fact("callers.pcs"), ',');
    bool listed = false;
    for (const auto& s : pcs) listed |= parse_u64(s) == ret;
    EXPECT_TRUE(listed) << "return pc " << to_hex(ret) << " not in callers.pcs";
    auto got = tab.symbolize(ret - 1 - bias);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].function, "main.inlinedHelper");
    EXPECT_TRUE(got[0].inlined);
    EXPECT_EQ(got[0].file, inner.file);
    EXPECT_EQ(got[0].line, inner.line);
    EXPECT_EQ(got[1].function, "main.callersOuter");
    EXPECT_FALSE(got[1].inlined);
    EXPECT_EQ(got[1].file, outer.file);
    EXPECT_EQ(got[1].line, outer.line);
    EXPECT_EQ(got[0].entry, got[1].entry);
  }
}

class BinaryByVersionMode : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(BinaryByVersionMode, ReadersAgreeWithTheRuntime) {
  const auto mode = GetParam().mode;
  auto exe = build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  const RunningFixture& run = **fx;
  auto bias = load_bias(run.pid(), *exe);
  ASSERT_TRUE(bias.ok()) << bias.error().message();
  if (mode == BuildMode::kPie) {
    EXPECT_NE(*bias, 0u);  // the kernel never loads an ET_DYN executable at its link address 0
  } else {
    EXPECT_EQ(*bias, 0u);
  }

  auto opened = ElfFile::open(*exe);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  const ElfFile& elf = **opened;
  EXPECT_EQ(elf.is_pie(), mode == BuildMode::kPie);
  EXPECT_FALSE(elf.is_core());
  EXPECT_TRUE(elf.go_build_id().has_value());
  const bool stripped = mode == BuildMode::kStripped;
  EXPECT_EQ(elf.has_symtab(), !stripped);
  EXPECT_EQ(elf.has_dwarf(), !stripped);

  // Build info.
  auto bi = binary::read_build_info(elf);
  ASSERT_TRUE(bi.ok()) << bi.error().message();
  EXPECT_EQ(bi->version, run.fact("version"));
  EXPECT_EQ(bi->raw_version, run.fact("version"));
  EXPECT_TRUE(bi->experiments.empty());
  EXPECT_EQ(bi->settings["-buildmode"], mode == BuildMode::kPie ? "pie" : "exe");
  EXPECT_EQ(bi->settings["GOARCH"], run.fact("goarch"));
  EXPECT_EQ(bi->main_module, "goref.test/basic");
  EXPECT_EQ("go" + GetParam().version, bi->version);

  // The function table.
  auto tab = Pclntab::open(elf);
  ASSERT_TRUE(tab.ok()) << tab.error().message();
  EXPECT_GT(tab->nfunc(), 1000u);
  EXPECT_EQ(tab->moduledata().from_symbol, !stripped);
  if (!stripped) {
    auto md = elf.symbol("runtime.firstmoduledata");
    ASSERT_TRUE(md);
    EXPECT_EQ(tab->moduledata().addr, md->value);
    auto text = elf.symbol("runtime.text");
    ASSERT_TRUE(text);
    EXPECT_EQ(tab->text_start(), text->value);
  }

  expect_runtime_positions(*tab, run, *bias, mode);
  if (!stripped) {
    auto leaf = split(run.fact("func.leafFunc"), '|');
    ASSERT_EQ(leaf.size(), 4u);
    auto sym = elf.symbol("main.leafFunc");
    ASSERT_TRUE(sym);
    EXPECT_EQ(sym->value, parse_u64(leaf[0]) - *bias);
  }

  // Every function: it is found at its own entry, and has pushed nothing there.
  size_t with_pcsp = 0;
  for (size_t i = 0; i < tab->nfunc(); ++i) {
    auto f = tab->func(i);
    auto found = tab->find_func(f.entry());
    ASSERT_TRUE(found) << f.name();
    EXPECT_EQ(found->index(), i) << f.name();
    if (f.pcsp() == 0) continue;
    ++with_pcsp;
    EXPECT_EQ(f.pcsp_at(f.entry()), 0) << f.name();
  }
  EXPECT_GT(with_pcsp, 1000u);
}

// With the section header table removed (as some packers and hand-stripped binaries have it),
// build info comes from the magic in the writable data, the pclntab from its header magic, the
// module data from a scan, and PIE relocations from PT_DYNAMIC.
TEST_P(BinaryByVersionMode, WorksWithoutSectionHeaders) {
  auto exe = build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  std::string copy = scratch_dir("binary_noshdr") + "/basic";
  {
    std::ifstream in(*exe, std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
  }
  {
    std::fstream f(copy, std::ios::binary | std::ios::in | std::ios::out);
    Elf64_Ehdr eh{};
    ASSERT_TRUE(f.read(reinterpret_cast<char*>(&eh), sizeof eh));
    eh.e_shoff = 0;
    eh.e_shnum = 0;
    eh.e_shstrndx = 0;
    f.seekp(0);
    ASSERT_TRUE(f.write(reinterpret_cast<const char*>(&eh), sizeof eh));
  }
  auto orig = ElfFile::open(*exe);
  auto bare = ElfFile::open(copy);
  ASSERT_TRUE(orig.ok() && bare.ok());
  EXPECT_TRUE((*bare)->sections().empty());
  EXPECT_FALSE((*bare)->has_symtab());
  EXPECT_EQ((*bare)->go_build_id(), (*orig)->go_build_id());  // from PT_NOTE

  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  auto bias = load_bias((*fx)->pid(), *exe);
  ASSERT_TRUE(bias.ok()) << bias.error().message();

  auto bi = binary::read_build_info(**bare);
  ASSERT_TRUE(bi.ok()) << bi.error().message();
  EXPECT_EQ(bi->version, (*fx)->fact("version"));
  EXPECT_EQ(bi->settings["-buildmode"], GetParam().mode == BuildMode::kPie ? "pie" : "exe");

  auto tab = Pclntab::open(**bare);
  ASSERT_TRUE(tab.ok()) << tab.error().message();
  auto ref = Pclntab::open(**orig);
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  EXPECT_FALSE(tab->moduledata().from_symbol);
  EXPECT_EQ(tab->moduledata().addr, ref->moduledata().addr);
  EXPECT_EQ(tab->address(), ref->address());
  EXPECT_EQ(tab->text_start(), ref->text_start());
  EXPECT_EQ(tab->gofunc(), ref->gofunc());
  EXPECT_EQ(tab->nfunc(), ref->nfunc());
  expect_runtime_positions(*tab, **fx, *bias, GetParam().mode);
}

INSTANTIATE_TEST_SUITE_P(Go, BinaryByVersionMode,
                         ::testing::ValuesIn(versions_and_modes({BuildMode::kDefault,
                                                                 BuildMode::kPie, BuildMode::kNoOpt,
                                                                 BuildMode::kStripped})),
                         param_name);

// Non-default GOEXPERIMENTs appear in the version string, in each version's spelling.
struct ExperimentCase {
  std::string version, goexperiment;
  std::vector<std::string> expected;
};

class BinaryExperiments : public ::testing::TestWithParam<ExperimentCase> {};

TEST_P(BinaryExperiments, VersionCarriesTheExperiment) {
  const auto& c = GetParam();
  auto exe = build_fixture(BuildSpec{"basic", c.version, BuildMode::kDefault, c.goexperiment});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto elf = ElfFile::open(*exe);
  ASSERT_TRUE(elf.ok()) << elf.error().message();
  auto bi = binary::read_build_info(**elf);
  ASSERT_TRUE(bi.ok()) << bi.error().message();
  EXPECT_EQ(bi->version, "go" + c.version);
  EXPECT_EQ(bi->experiments, c.expected) << bi->raw_version;
  EXPECT_EQ(bi->settings["GOEXPERIMENT"], c.goexperiment);
  // The table still opens with the experiment's runtime.
  auto tab = Pclntab::open(**elf);
  EXPECT_TRUE(tab.ok()) << (tab.ok() ? "" : tab.error().message());
}

std::vector<ExperimentCase> experiment_cases() {
  std::vector<ExperimentCase> out;
  for (const auto& v : go_versions()) {
    if (v.starts_with("1.24.")) out.push_back({v, "noswissmap", {"noswissmap"}});
    if (v.starts_with("1.25.")) out.push_back({v, "greenteagc", {"greenteagc"}});
    if (v.starts_with("1.26.")) out.push_back({v, "nogreenteagc", {"nogreenteagc"}});
    if (v.starts_with("1.27."))
      out.push_back({v, "nogreenteagc,mapsplitgroup", {"nogreenteagc", "mapsplitgroup"}});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Go, BinaryExperiments, ::testing::ValuesIn(experiment_cases()),
                         [](const ::testing::TestParamInfo<ExperimentCase>& info) {
                           std::string n = "go" + info.param.version;
                           for (char& ch : n)
                             if (ch == '.') ch = '_';
                           return n;
                         });

// Truncated executables and randomly corrupted function tables give errors or odd answers, never
// a crash or a hang (run under the sanitizers too).
TEST(BinaryCorrupt, TruncatedFilesAndFlippedTableBytes) {
  auto versions = go_versions();
  ASSERT_FALSE(versions.empty());
  auto exe = build_fixture(BuildSpec{"basic", versions.back(), BuildMode::kPie, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  std::string bytes;
  {
    std::ifstream in(*exe, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  std::string dir = scratch_dir("binary_corrupt");
  size_t opened = 0;
  for (size_t size : {size_t{0}, size_t{63}, size_t{64}, size_t{4096}, bytes.size() / 4,
                      bytes.size() / 2, bytes.size() * 3 / 4, bytes.size() - 1}) {
    std::string path = dir + "/trunc-" + std::to_string(size);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(size));
    auto elf = ElfFile::open(path);
    if (!elf.ok()) continue;
    ++opened;
    (void)binary::read_build_info(**elf);
    (void)(*elf)->symbol("main.main");
    std::byte buf[64];
    (void)(*elf)->read_vaddr((*elf)->entry(), buf);
    if (auto tab = Pclntab::open(**elf); tab.ok()) {
      for (size_t i = 0; i < tab->nfunc(); i += 17) (void)tab->symbolize(tab->func(i).entry());
    }
  }
  EXPECT_GT(opened, 0u);

  auto elf = ElfFile::open(*exe);
  ASSERT_TRUE(elf.ok());
  auto good = Pclntab::open(**elf);
  ASSERT_TRUE(good.ok()) << good.error().message();
  const binary::Section* sec = (*elf)->section(".gopclntab");
  if (!sec) sec = (*elf)->section(".data.rel.ro.gopclntab");
  ASSERT_NE(sec, nullptr);
  auto data = (*elf)->section_data(*sec);
  ASSERT_TRUE(data.ok());
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  size_t built = 0;
  for (int iter = 0; iter < 60; ++iter) {
    std::vector<std::byte> copy(data->begin(), data->end());
    // Flip bytes in the header and tables (first iterations hit the header hardest).
    int flips = 4 + iter;
    for (int k = 0; k < flips; ++k) {
      size_t at = iter < 10 ? next() % 80 : next() % copy.size();
      copy[at] ^= static_cast<std::byte>(1 + next() % 255);
    }
    auto tab = Pclntab::from_parts(
        std::move(copy), good->address(), good->text_start(), good->gofunc(),
        [&](uint64_t a, std::span<std::byte> out) { return (*elf)->read_vaddr(a, out); });
    if (!tab.ok()) continue;
    ++built;
    for (size_t i = 0; i < tab->nfunc(); i += 7) {
      auto f = tab->func(i);
      for (uint64_t pc : {f.entry(), f.entry() + 5, f.end() - 1}) {
        (void)tab->symbolize(pc);
        (void)f.pcsp_at(pc);
        (void)f.file_line_at(pc);
        (void)f.pcdata_at(binary::kPcdataStackMapIndex, pc);
      }
    }
  }
  EXPECT_GT(built, 10u);  // most flips land in tables, not in what build() validates
}

TEST(BinaryErrors, NonGoAndNonElfInputs) {
  auto t = ElfFile::open("/bin/true");
  ASSERT_TRUE(t.ok()) << t.error().message();
  auto bi = binary::read_build_info(**t);
  ASSERT_FALSE(bi.ok());
  EXPECT_EQ(bi.error().code(), Errc::kNotGo);
  EXPECT_NE(bi.error().message().find("not a Go program"), std::string::npos);
  auto tab = Pclntab::open(**t);
  ASSERT_FALSE(tab.ok());
  EXPECT_EQ(tab.error().code(), Errc::kNotFound);
  EXPECT_NE(tab.error().message().find(".gopclntab"), std::string::npos);

  std::string dir = scratch_dir("binary_errors");
  std::string text = dir + "/not-elf.txt";
  std::ofstream(text) << "this is a text file, long enough to hold an ELF header's worth\n";
  auto bad = ElfFile::open(text);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), Errc::kBadFormat);
  EXPECT_NE(bad.error().message().find("is not an ELF file"), std::string::npos);

  auto missing = ElfFile::open(dir + "/absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), Errc::kNotFound);
}

}  // namespace
}  // namespace goref::testing
