// Core note parsing from hand-built bytes: NT_FILE, NT_PRSTATUS (+ the register layouts),
// NT_PRPSINFO, NT_AUXV, and the note list itself, including truncated and lying notes.
#include "goref/target/core_notes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core_bytes.h"
#include "goref/target/core_regs.h"

namespace goref::target::notes {
namespace {

using testing_core::add_note;
using testing_core::Buf;

Buf file_note() {
  Buf d;
  d.u64(3).u64(4096);
  d.u64(0x400000).u64(0x4ad000).u64(0);
  d.u64(0x4ad000).u64(0x595000).u64(0xad);
  d.u64(0x7f0000000000).u64(0x7f0000001000).u64(2);
  d.str("/app/server").str("/app/server").str("/usr/lib/x86_64-linux-gnu/libc.so.6");
  return d;
}

TEST(CoreNotes, FileNoteEntriesAndNames) {
  Buf d = file_note();
  auto f = parse_file_note(d.span());
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->page_size, 4096u);
  ASSERT_EQ(f->entries.size(), 3u);
  EXPECT_EQ(f->entries[0].range, (AddrRange{Addr(0x400000), Addr(0x4ad000)}));
  EXPECT_EQ(f->entries[0].offset, 0u);
  EXPECT_EQ(f->entries[0].path, "/app/server");
  EXPECT_EQ(f->entries[1].range, (AddrRange{Addr(0x4ad000), Addr(0x595000)}));
  EXPECT_EQ(f->entries[1].offset, 0xad000u);  // pages × page size
  EXPECT_EQ(f->entries[2].offset, 0x2000u);
  EXPECT_EQ(f->entries[2].path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
}

TEST(CoreNotes, FileNoteCountLargerThanTheNoteIsRejected) {
  Buf d;
  d.u64(uint64_t{1} << 60).u64(4096).u64(0x1000).u64(0x2000).u64(0).str("/x");
  auto f = parse_file_note(d.span());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), Errc::kBadFormat);
  EXPECT_NE(f.error().message().find("do not fit"), std::string::npos) << f.error().message();

  // Two entries announced, the triples fit, but only one path follows.
  Buf two;
  two.u64(2).u64(4096);
  two.u64(0x1000).u64(0x2000).u64(0).u64(0x2000).u64(0x3000).u64(1);
  two.str("/only-one").fill(40, 'x');  // the second path is never terminated
  f = parse_file_note(two.span());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("path 1 of 2"), std::string::npos) << f.error().message();
}

TEST(CoreNotes, FileNoteTruncatedAtEveryLengthNeverOverruns) {
  Buf d = file_note();
  for (size_t n = 0; n < d.size(); ++n) {
    // A heap copy of exactly n bytes, so an overrun is caught by the address sanitizer.
    std::vector<std::byte> cut(d.span().begin(), d.span().begin() + static_cast<long>(n));
    auto f = parse_file_note(cut);
    EXPECT_FALSE(f.ok()) << "accepted a note cut to " << n << " bytes";
  }
}

TEST(CoreNotes, FileNoteBadPageSizeAndBackwardsEntry) {
  Buf d;
  d.u64(1).u64(3000).u64(0x1000).u64(0x2000).u64(0).str("/x").zeros(8);
  EXPECT_FALSE(parse_file_note(d.span()).ok());
  Buf back;
  back.u64(1).u64(4096).u64(0x2000).u64(0x1000).u64(0).str("/x").zeros(8);
  auto f = parse_file_note(back.span());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("before it starts"), std::string::npos);
}

// struct elf_prstatus on amd64: 112 bytes of header, 27 registers, pr_fpvalid (+ padding).
Buf amd64_prstatus(int32_t tid) {
  Buf d;
  d.zeros(32).i32(tid).zeros(112 - 36);
  for (uint64_t i = 0; i < 27; ++i) d.u64(0x1000 + i);
  d.i32(1).zeros(4);
  return d;
}

TEST(CoreNotes, PrstatusThreadIdAndAmd64Registers) {
  Buf d = amd64_prstatus(4242);
  ASSERT_EQ(d.size(), 0x150u);  // as readelf reports for amd64 cores
  auto st = parse_prstatus(d.span(), gregset_size(Arch::kAmd64));
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(st->tid, Tid(4242));
  auto regs = registers_from_gregset(Arch::kAmd64, st->reg);
  ASSERT_TRUE(regs.ok());
  EXPECT_EQ(regs->ngpr, 27);
  EXPECT_EQ(regs->fp, 0x1000u + 4);         // rbp
  EXPECT_EQ(regs->pc, 0x1000u + 16);        // rip
  EXPECT_EQ(regs->sp, 0x1000u + 19);        // rsp
  EXPECT_EQ(regs->tls_base, 0x1000u + 21);  // fs_base
  EXPECT_EQ(regs->lr, 0u);
  EXPECT_EQ(regs->gpr[26], 0x1000u + 26);  // gs
}

TEST(CoreNotes, PrstatusArm64Registers) {
  Buf d;
  d.zeros(32).i32(77).zeros(112 - 36);
  for (uint64_t i = 0; i < 34; ++i) d.u64(0x2000 + i);
  d.i32(1).zeros(4);
  auto st = parse_prstatus(d.span(), gregset_size(Arch::kArm64));
  ASSERT_TRUE(st.ok());
  auto regs = registers_from_gregset(Arch::kArm64, st->reg);
  ASSERT_TRUE(regs.ok());
  EXPECT_EQ(regs->ngpr, 34);
  EXPECT_EQ(regs->fp, 0x2000u + 29);
  EXPECT_EQ(regs->lr, 0x2000u + 30);
  EXPECT_EQ(regs->sp, 0x2000u + 31);
  EXPECT_EQ(regs->pc, 0x2000u + 32);
  EXPECT_EQ(regs->tls_base, 0u);  // NT_ARM_TLS, not pr_reg
}

TEST(CoreNotes, PrstatusTooSmallIsRejected) {
  Buf d = amd64_prstatus(1);
  for (size_t n : {size_t{0}, size_t{35}, size_t{112}, size_t{112 + 27 * 8 - 1}}) {
    std::vector<std::byte> cut(d.span().begin(), d.span().begin() + static_cast<long>(n));
    EXPECT_FALSE(parse_prstatus(cut, gregset_size(Arch::kAmd64)).ok()) << n;
  }
  std::vector<std::byte> exact(d.span().begin(), d.span().begin() + 112 + 27 * 8);
  EXPECT_TRUE(parse_prstatus(exact, gregset_size(Arch::kAmd64)).ok());
}

TEST(CoreNotes, PrpsinfoPid) {
  Buf d;
  d.zeros(24).i32(31337).zeros(0x88 - 28);
  EXPECT_EQ(parse_prpsinfo_pid(d.span()), Pid(31337));
  std::vector<std::byte> cut(d.span().begin(), d.span().begin() + 27);
  EXPECT_FALSE(parse_prpsinfo_pid(cut).has_value());
}

TEST(CoreNotes, AuxvLookupStopsAtNullAndAtTheEnd) {
  Buf d;
  d.u64(kAtPagesz).u64(4096).u64(kAtEntry).u64(0x4827a0).u64(kAtNull).u64(0).u64(25).u64(1);
  Auxv a = parse_auxv(d.span());
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(auxv_lookup(a, kAtEntry), 0x4827a0u);
  EXPECT_EQ(auxv_lookup(a, kAtPagesz), 4096u);
  EXPECT_FALSE(auxv_lookup(a, 25).has_value());  // after AT_NULL

  Buf odd;  // no AT_NULL, and a half pair at the end
  odd.u64(kAtEntry).u64(0x1234).u64(kAtPagesz);
  a = parse_auxv(odd.span());
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(auxv_lookup(a, kAtEntry), 0x1234u);
}

TEST(CoreNotes, SplitNotesByOwnerAndType) {
  Buf seg;
  Buf ps = amd64_prstatus(9);
  Buf fn = file_note();
  Buf odd;
  odd.u32(0xabcdef).zeros(1);  // 5 bytes: padded to 8
  add_note(seg, "CORE", kNtPrstatus, ps.span());
  add_note(seg, "LINUX", kNtArmTls, odd.span());
  add_note(seg, "CORE", kNtFile, fn.span());
  NoteList l = split_notes(seg.span());
  EXPECT_FALSE(l.truncated);
  ASSERT_EQ(l.notes.size(), 3u);
  EXPECT_EQ(l.notes[0].name, "CORE");
  EXPECT_EQ(l.notes[0].type, kNtPrstatus);
  EXPECT_EQ(l.notes[0].desc.size(), ps.size());
  EXPECT_EQ(l.notes[1].name, "LINUX");
  EXPECT_EQ(l.notes[1].desc.size(), 5u);
  EXPECT_EQ(l.notes[2].type, kNtFile);
  EXPECT_TRUE(parse_file_note(l.notes[2].desc).ok());
}

TEST(CoreNotes, SplitNotesKeepsWhatPrecedesATruncatedOrLyingNote) {
  Buf seg;
  Buf ps = amd64_prstatus(9);
  add_note(seg, "CORE", kNtPrstatus, ps.span());
  size_t first = seg.size();
  add_note(seg, "CORE", kNtPrstatus, ps.span());
  for (size_t n = first; n < seg.size(); ++n) {
    std::vector<std::byte> cut(seg.span().begin(), seg.span().begin() + static_cast<long>(n));
    NoteList l = split_notes(cut);
    EXPECT_EQ(l.notes.size(), 1u) << n;
    EXPECT_EQ(l.truncated, n > first) << n;
  }
  // A descriptor size far beyond the segment.
  Buf lie;
  lie.u32(5).u32(0xfffffff0).u32(kNtPrstatus).str("CORE").pad4().zeros(16);
  NoteList l = split_notes(lie.span());
  EXPECT_TRUE(l.notes.empty());
  EXPECT_TRUE(l.truncated);
}

}  // namespace
}  // namespace goref::target::notes
