// CoreTarget's spliced memory view on small hand-built core and executable files, where what the
// core holds and what it omits is known byte for byte: core bytes first, then the executable's
// where NT_FILE says it backs the range, and nothing invented for the rest.
#include "goref/target/core_target.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core_bytes.h"

namespace goref::target {
namespace {

namespace fs = std::filesystem;
using testing_core::add_note;
using testing_core::Buf;

constexpr uint64_t kText = 0x10000;    // exe-backed: 0x1000 bytes in the core, 0x1000 from the exe
constexpr uint64_t kData = 0x20000;    // anonymous: 0x1000 bytes in the core of 0x2000
constexpr uint64_t kRodata = 0x30000;  // exe-backed, not in the core at all
constexpr uint64_t kLib = 0x40000;     // another file, not in the core at all
constexpr uint64_t kEntry = 0x10010;
constexpr uint64_t kExeSize = 0x3000;

std::byte exe_byte(uint64_t off) {
  return std::byte(static_cast<uint8_t>(off * 13 + 5));
}
std::byte text_byte(uint64_t i) {
  return std::byte(static_cast<uint8_t>(0xa0 + i % 7));
}
std::byte data_byte(uint64_t i) {
  return std::byte(static_cast<uint8_t>(0x30 + i % 11));
}

Buf ehdr(uint16_t type, uint64_t entry, uint16_t phnum) {
  Elf64_Ehdr e{};
  std::memcpy(e.e_ident, ELFMAG, SELFMAG);
  e.e_ident[EI_CLASS] = ELFCLASS64;
  e.e_ident[EI_DATA] = ELFDATA2LSB;
  e.e_ident[EI_VERSION] = EV_CURRENT;
  e.e_type = type;
  e.e_machine = EM_X86_64;
  e.e_version = EV_CURRENT;
  e.e_entry = entry;
  e.e_phoff = sizeof(Elf64_Ehdr);
  e.e_ehsize = sizeof(Elf64_Ehdr);
  e.e_phentsize = sizeof(Elf64_Phdr);
  e.e_phnum = phnum;
  Buf b;
  b.bytes(std::as_bytes(std::span(&e, 1)));
  return b;
}

void phdr(Buf& b, uint32_t type, uint32_t flags, uint64_t off, uint64_t vaddr, uint64_t filesz,
          uint64_t memsz) {
  Elf64_Phdr p{};
  p.p_type = type;
  p.p_flags = flags;
  p.p_offset = off;
  p.p_vaddr = vaddr;
  p.p_filesz = filesz;
  p.p_memsz = memsz;
  p.p_align = 1;
  b.bytes(std::as_bytes(std::span(&p, 1)));
}

struct CoreSpec {
  bool with_prstatus = true;
  uint64_t file_note_count = 3;  // what NT_FILE claims
};

Buf notes(const CoreSpec& spec) {
  Buf seg;
  Buf psinfo;
  psinfo.zeros(24).i32(77).zeros(0x88 - 28);
  add_note(seg, "CORE", 3, psinfo.span());
  if (spec.with_prstatus) {
    for (int32_t tid : {78, 79}) {
      Buf st;
      st.zeros(32).i32(tid).zeros(112 - 36);
      for (uint64_t i = 0; i < 27; ++i) st.u64(uint64_t(tid) << 16 | i);
      st.i32(1).zeros(4);
      add_note(seg, "CORE", 1, st.span());
    }
  }
  Buf auxv;
  auxv.u64(6).u64(4096).u64(9).u64(kEntry).u64(0).u64(0);
  add_note(seg, "CORE", 6, auxv.span());
  Buf file;
  file.u64(spec.file_note_count).u64(4096);
  file.u64(kText).u64(kText + 0x2000).u64(0);
  file.u64(kRodata).u64(kRodata + 0x1000).u64(2);
  file.u64(kLib).u64(kLib + 0x1000).u64(0);
  // The path as the target saw it: not the host path of the executable.
  file.str("/ns/bin/prog").str("/ns/bin/prog").str("/ns/lib/libc.so.6");
  add_note(seg, "CORE", 0x46494c45, file.span());
  return seg;
}

class CoreFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("goref-core-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    exe_ = (dir_ / "prog").string();
    core_ = (dir_ / "core").string();
    write_exe(kEntry);
    write_core({});
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_exe(uint64_t entry) {
    Buf b;
    for (uint64_t i = 0; i < kExeSize; ++i) b.vec().push_back(exe_byte(i));
    Buf h = ehdr(ET_EXEC, entry, 1);
    phdr(h, PT_LOAD, PF_R | PF_X, 0, kText, kExeSize, kExeSize);
    std::copy(h.span().begin(), h.span().end(), b.vec().begin());
    save(exe_, b);
  }

  // ELF header, 3 program headers, notes, then the text and data bytes at 0x1000 and 0x2000.
  void write_core(const CoreSpec& spec, size_t cut = SIZE_MAX) {
    Buf n = notes(spec);
    const uint64_t note_off = sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr);
    Buf b = ehdr(ET_CORE, 0, 3);
    phdr(b, PT_NOTE, 0, note_off, 0, n.size(), 0);
    phdr(b, PT_LOAD, PF_R | PF_X, 0x1000, kText, 0x1000, 0x2000);
    phdr(b, PT_LOAD, PF_R | PF_W, 0x2000, kData, 0x1000, 0x2000);
    b.bytes(n.span());
    ASSERT_LE(b.size(), 0x1000u);
    b.zeros(0x1000 - b.size());
    for (uint64_t i = 0; i < 0x1000; ++i) b.vec().push_back(text_byte(i));
    for (uint64_t i = 0; i < 0x1000; ++i) b.vec().push_back(data_byte(i));
    if (cut < b.size()) b.vec().resize(cut);
    save(core_, b);
  }

  static void save(const std::string& path, const Buf& b) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(b.span().data()),
               static_cast<std::streamsize>(b.size()));
  }

  fs::path dir_;
  std::string exe_;
  std::string core_;
};

TEST_F(CoreFiles, SplicesCoreAndExecutableBytes) {
  auto t = CoreTarget::open(core_, exe_);
  ASSERT_TRUE(t.ok()) << t.error().message();
  CoreTarget& c = **t;
  EXPECT_TRUE(c.warnings().empty()) << c.warnings().front();
  EXPECT_EQ(c.target_executable_path(), "/ns/bin/prog");

  // The whole text mapping: the core's page, then the executable's page at file offset 0x1000.
  std::vector<std::byte> text(0x2000);
  ASSERT_TRUE(c.read_exact(Addr(kText), text).ok());
  for (uint64_t i = 0; i < 0x1000; ++i) ASSERT_EQ(text[i], text_byte(i)) << i;
  for (uint64_t i = 0x1000; i < 0x2000; ++i) ASSERT_EQ(text[i], exe_byte(i)) << i;
  EXPECT_EQ(c.source_of(Addr(kText + 0xfff)), CoreTarget::Source::kCore);
  EXPECT_EQ(c.source_of(Addr(kText + 0x1000)), CoreTarget::Source::kExecutable);

  // A read stops where the executable-backed mapping ends.
  std::vector<std::byte> buf(16);
  auto n = c.read_some(Addr(kText + 0x1ff8), buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 8u);

  // Anonymous memory past p_filesz is absent, not zero.
  n = c.read_some(Addr(kData + 0xff8), buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 8u);
  EXPECT_EQ(buf[7], data_byte(0xfff));
  n = c.read_some(Addr(kData + 0x1000), buf);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code(), Errc::kUnmapped);
  EXPECT_EQ(n.error().message().rfind("address 0x21000 is not in the core", 0), 0u)
      << n.error().message();

  // A mapping of the executable the core left out entirely: from file offset 2 pages.
  std::vector<std::byte> ro(0x1000);
  ASSERT_TRUE(c.read_exact(Addr(kRodata), ro).ok());
  for (uint64_t i = 0; i < 0x1000; ++i) ASSERT_EQ(ro[i], exe_byte(0x2000 + i)) << i;

  // Another file's mapping the core left out: known, but not readable.
  n = c.read_some(Addr(kLib), buf);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message().find("/ns/lib/libc.so.6"), std::string::npos);
  EXPECT_FALSE(c.read_some(Addr(0x5000), buf).ok());

  const auto& m = c.mappings();
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].range, (AddrRange{Addr(kText), Addr(kText + 0x2000)}));
  EXPECT_EQ(m[0].path, "/ns/bin/prog");
  EXPECT_TRUE(m[0].read && m[0].exec && !m[0].write);
  EXPECT_EQ(m[1].range, (AddrRange{Addr(kData), Addr(kData + 0x2000)}));
  EXPECT_EQ(m[1].path, "");
  EXPECT_TRUE(m[1].read && m[1].write && !m[1].exec);
  EXPECT_EQ(m[2].range.start, Addr(kRodata));
  EXPECT_EQ(m[2].offset, 0x2000u);
  EXPECT_TRUE(m[2].exec);  // from the executable's program header for that file offset
  EXPECT_EQ(m[3].path, "/ns/lib/libc.so.6");
}

TEST_F(CoreFiles, ThreadsPidRegistersAuxv) {
  auto t = CoreTarget::open(core_, exe_);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ((*t)->pid(), Pid(77));  // NT_PRPSINFO, not the first thread's id
  EXPECT_EQ((*t)->threads(), (std::vector<Tid>{Tid(78), Tid(79)}));
  auto r = (*t)->registers(Tid(79));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->pc, (uint64_t{79} << 16) | 16);
  EXPECT_EQ(r->tls_base, (uint64_t{79} << 16) | 21);
  EXPECT_EQ((*t)->registers(Tid(80)).error().code(), Errc::kNotFound);
  EXPECT_EQ((*t)->auxv(9), kEntry);
  EXPECT_EQ((*t)->executable_path(), exe_);
}

TEST_F(CoreFiles, TruncatedCoreIsUsableWithAWarning) {
  write_core({}, 0x2000 + 0x800);  // half of the data segment
  auto t = CoreTarget::open(core_, exe_);
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ((*t)->warnings().size(), 1u);
  EXPECT_EQ((*t)->warnings()[0], "segment 0x20000 is truncated in the core: 2048 of 4096 bytes");
  std::vector<std::byte> buf(0x1000);
  auto n = (*t)->read_some(Addr(kData), buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0x800u);
}

TEST_F(CoreFiles, CoreWithoutThreadsIsAnError) {
  write_core({.with_prstatus = false});
  auto t = CoreTarget::open(core_, exe_);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code(), Errc::kBadFormat);
  EXPECT_NE(t.error().message().find("no NT_PRSTATUS"), std::string::npos);
}

TEST_F(CoreFiles, LyingFileNoteIsAWarningAndTheExecutableIsNotUsed) {
  write_core({.file_note_count = uint64_t{1} << 40});
  auto t = CoreTarget::open(core_, exe_);
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_FALSE((*t)->warnings().empty());
  EXPECT_NE((*t)->warnings()[0].find("NT_FILE"), std::string::npos);
  std::vector<std::byte> buf(16);
  auto n = (*t)->read_some(Addr(kText + 0xff8), buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 8u);  // the core's bytes only
  EXPECT_FALSE((*t)->read_some(Addr(kRodata), buf).ok());
}

TEST_F(CoreFiles, ExecutableWithAnotherEntryPointIsFlagged) {
  write_exe(kEntry + 0x40);
  auto t = CoreTarget::open(core_, exe_);
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ((*t)->warnings().size(), 1u);
  EXPECT_NE((*t)->warnings()[0].find("may not be the one the core was produced from"),
            std::string::npos);
}

TEST_F(CoreFiles, MissingOrWrongExecutableIsAnError) {
  auto t = CoreTarget::open(core_, exe_ + ".missing");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code(), Errc::kNotFound);
  EXPECT_NE(t.error().message().find(exe_ + ".missing"), std::string::npos);
  t = CoreTarget::open(core_, core_);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(), core_ + " is an ELF core file, not an executable");
}

}  // namespace
}  // namespace goref::target
