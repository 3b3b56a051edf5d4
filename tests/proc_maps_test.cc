// /proc/PID/maps parsing against lines in the kernel's exact layout, including the awkward ones:
// paths with spaces, deleted files, pseudo-paths, anonymous mappings without padding, 64-bit
// offsets; and rejection of malformed lines.
#include "goref/target/proc_maps.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "goref/target/procfs.h"

namespace goref::target {
namespace {

TEST(ProcMaps, FileBackedLine) {
  auto e = parse_proc_maps_line(
      "560ecf30f000-560ecf314000 r-xp 00002000 fe:00 247026                     /usr/bin/cat");
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->mapping.range.start, Addr(0x560ecf30f000));
  EXPECT_EQ(e->mapping.range.end, Addr(0x560ecf314000));
  EXPECT_TRUE(e->mapping.read);
  EXPECT_FALSE(e->mapping.write);
  EXPECT_TRUE(e->mapping.exec);
  EXPECT_FALSE(e->shared);
  EXPECT_EQ(e->mapping.offset, 0x2000u);
  EXPECT_EQ(e->dev_major, 0xfeu);
  EXPECT_EQ(e->dev_minor, 0u);
  EXPECT_EQ(e->inode, 247026u);
  EXPECT_FALSE(e->deleted);
  EXPECT_EQ(e->mapping.path, "/usr/bin/cat");
}

TEST(ProcMaps, PathWithSpacesIsKeptWhole) {
  auto e = parse_proc_maps_line(
      "7f6b43ae4000-7f6b43ae7000 rw-s 00000000 08:11 9  /tmp/my dir/lib  two.so");
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->mapping.path, "/tmp/my dir/lib  two.so");
  EXPECT_TRUE(e->shared);
  EXPECT_EQ(e->dev_major, 8u);
  EXPECT_EQ(e->dev_minor, 0x11u);
}

TEST(ProcMaps, DeletedFileLosesTheSuffixAndIsFlagged) {
  auto e = parse_proc_maps_line(
      "7f0000000000-7f0000001000 r--p 00001000 00:1c 4242                       /memfd:go "
      "(deleted)");
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_TRUE(e->deleted);
  EXPECT_EQ(e->mapping.path, "/memfd:go");
}

TEST(ProcMaps, PseudoPathsAndAnonymousMappings) {
  auto vdso = parse_proc_maps_line(
      "7f6b43d74000-7f6b43d76000 r-xp 00000000 00:00 0                          [vdso]");
  ASSERT_TRUE(vdso.ok());
  EXPECT_EQ(vdso->mapping.path, "[vdso]");
  EXPECT_EQ(vdso->inode, 0u);

  auto stack = parse_proc_maps_line(
      "7ffc73724000-7ffc73745000 rw-p 00000000 00:00 0                          [stack]");
  ASSERT_TRUE(stack.ok());
  EXPECT_EQ(stack->mapping.path, "[stack]");
  EXPECT_TRUE(stack->mapping.write);

  // Anonymous: a single space after the inode, or none at all on older kernels.
  for (const char* line : {"5582bfc59000-5582bfc69000 rw-p 00000000 00:00 0 ",
                           "5582bfc59000-5582bfc69000 rw-p 00000000 00:00 0"}) {
    auto anon = parse_proc_maps_line(line);
    ASSERT_TRUE(anon.ok()) << line;
    EXPECT_EQ(anon->mapping.path, "") << line;
    EXPECT_EQ(anon->mapping.range.size(), 0x10000u);
  }

  // A "(deleted)" that is part of an anonymous mapping's name is not a deleted file.
  auto named = parse_proc_maps_line(
      "7f0000000000-7f0000001000 rw-p 00000000 00:00 0                          [anon:x "
      "(deleted)]");
  ASSERT_TRUE(named.ok());
  EXPECT_FALSE(named->deleted);
  EXPECT_EQ(named->mapping.path, "[anon:x (deleted)]");

  auto vsyscall = parse_proc_maps_line(
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]");
  ASSERT_TRUE(vsyscall.ok());
  EXPECT_EQ(vsyscall->mapping.range.start, Addr(0xffffffffff600000));
  EXPECT_FALSE(vsyscall->mapping.read);
  EXPECT_TRUE(vsyscall->mapping.exec);
}

TEST(ProcMaps, HugeOffset) {
  auto e = parse_proc_maps_line(
      "7f0000000000-7f0000200000 rw-s fffffffffffff000 00:05 1024               /dev/mem");
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->mapping.offset, 0xfffffffffffff000u);
}

TEST(ProcMaps, MalformedLinesAreRejected) {
  const char* bad[] = {
      "",
      "garbage",
      "7f00-7e00 r--p 00000000 00:00 0",           // inverted range
      "7f00-7f00 r--p 00000000 00:00 0",           // empty range
      "7f00 r--p 00000000 00:00 0",                // no dash
      "7f00-8g00 r--p 00000000 00:00 0",           // bad hex
      "7f00-8f00 r--q 00000000 00:00 0",           // bad sharing flag
      "7f00-8f00 rw 00000000 00:00 0",             // short permissions
      "7f00-8f00 wr-p 00000000 00:00 0",           // permission letters out of place
      "7f00-8f00 r--p 0000zz00 00:00 0",           // bad offset
      "7f00-8f00 r--p 00000000 0000 0",            // bad device
      "7f00-8f00 r--p 00000000 00:00 12x  /a",     // bad inode
      "7f00-8f00 r--p 00000000 00:00",             // missing inode
      "7f00-8f00 r--p 10000000000000000 00:00 0",  // offset overflows 64 bits
  };
  for (const char* line : bad) {
    auto e = parse_proc_maps_line(line);
    ASSERT_FALSE(e.ok()) << "accepted: \"" << line << "\"";
    EXPECT_EQ(e.error().code(), Errc::kBadFormat);
  }
}

TEST(ProcMaps, WholeFileMustBeOrdered) {
  auto ok = parse_proc_maps(
      "1000-2000 r--p 00000000 00:00 0\n"
      "2000-3000 rw-p 00000000 00:00 0                  [heap]\n");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[1].mapping.path, "[heap]");

  auto overlap = parse_proc_maps(
      "1000-3000 r--p 00000000 00:00 0\n"
      "2000-4000 r--p 00000000 00:00 0\n");
  ASSERT_FALSE(overlap.ok());
  EXPECT_NE(overlap.error().message().find("line 2"), std::string::npos);

  auto bad = parse_proc_maps("1000-2000 r--p 00000000 00:00 0\nnonsense\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("line 2"), std::string::npos);

  auto blank = parse_proc_maps("1000-2000 r--p 00000000 00:00 0\n\n2000-3000 r--p 0 00:00 0\n");
  EXPECT_FALSE(blank.ok());
}

// The test process's own maps: every line of a real kernel's output parses, and the mapping
// holding this function's code is executable.
TEST(ProcMaps, OwnProcessMapsParse) {
  auto maps = read_proc_maps(Pid(getpid()));
  ASSERT_TRUE(maps.ok()) << maps.error().message();
  ASSERT_FALSE(maps->empty());
  auto code = Addr(reinterpret_cast<uintptr_t>(&parse_proc_maps_line));
  bool found = false;
  for (const auto& m : *maps)
    if (m.range.contains(code)) {
      found = true;
      EXPECT_TRUE(m.exec);
      EXPECT_TRUE(m.read);
    }
  EXPECT_TRUE(found);
}

TEST(ProcMaps, MissingProcessIsNoSuchProcess) {
  // pid_max is at most 2^22, so this pid cannot exist.
  auto maps = read_proc_maps(Pid(1 << 23));
  ASSERT_FALSE(maps.ok());
  EXPECT_EQ(maps.error().code(), Errc::kNoSuchProcess);
}

TEST(Procfs, StatusField) {
  std::string text = "Name:\tgo prog\nTgid:\t42\nTracerPid:\t0\n";
  EXPECT_EQ(status_field(text, "Tgid"), "42");
  EXPECT_EQ(status_field(text, "Name"), "go prog");
  EXPECT_EQ(status_field(text, "Tracer"), std::nullopt);
  EXPECT_EQ(status_field(text, "Pid"), std::nullopt);
}

}  // namespace
}  // namespace goref::target
