// CoreTarget against gcore cores of the basic fixture, for every Go version × {default, pie}: the
// facts the running program printed about itself (pid, globals, threads and their TLS bases) must
// be what the core says, and bytes the core omits must come from the executable and equal the
// live process's. Plus the error paths on bad input.
#include "goref/target/core_target.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "harness/fixture.h"
#include "harness/matrix.h"

namespace goref::testing {
namespace {

namespace fs = std::filesystem;
using target::CoreTarget;

// Removes a (large) core file when the test ends, whatever happened.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    std::error_code ec;
    if (!path.empty()) fs::remove(path, ec);
  }
};

size_t task_count(pid_t pid) {
  size_t n = 0;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (d == nullptr) return 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// Bytes of the live process through /proc/PID/mem (the process is not traced; reading its memory
// only needs the same credentials).
std::vector<std::byte> live_bytes(pid_t pid, uint64_t addr, size_t n) {
  std::vector<std::byte> out(n);
  int fd = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  ssize_t got = ::pread(fd, out.data(), n, static_cast<off_t>(addr));
  ::close(fd);
  out.resize(got < 0 ? 0 : static_cast<size_t>(got));
  return out;
}

class CoreTargetByVersion : public ::testing::TestWithParam<FixtureParam> {};

TEST_P(CoreTargetByVersion, CoreMatchesTheLiveProcessFacts) {
  auto exe = build_fixture(GetParam().spec("basic"));
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  const pid_t pid = (*fx)->pid();

  std::string dir = scratch_dir("core_target_" + param_name({GetParam(), 0}));
  auto core = gcore(pid, dir + "/core");
  ASSERT_TRUE(core.ok()) << core.error().message();
  RemoveOnExit cleanup{*core};
  const size_t tasks = task_count(pid);  // the fixture is idle after READY: same as at gcore time

  auto t = CoreTarget::open(*core, *exe);
  ASSERT_TRUE(t.ok()) << t.error().message();
  CoreTarget& ct = **t;
  for (const auto& w : ct.warnings()) ADD_FAILURE() << "unexpected warning: " << w;
  EXPECT_EQ(ct.kind(), target::Kind::kCore);
  EXPECT_EQ(ct.arch(), target::host_arch());
  EXPECT_EQ(ct.pid(), Pid(pid));
  EXPECT_EQ(ct.executable_path(), *exe);

  // Globals.
  std::array<char, 32> marker{};
  ASSERT_TRUE(ct.read_exact(Addr((*fx)->fact_u64("global.main.gMarker")),
                            std::as_writable_bytes(std::span(marker)))
                  .ok());
  EXPECT_EQ(std::string(marker.data()), "goref-marker-basic");
  EXPECT_EQ((*fx)->fact("marker"), "goref-marker-basic");
  auto counter = ct.read<uint64_t>(Addr((*fx)->fact_u64("global.main.gCounter")));
  ASSERT_TRUE(counter.ok()) << counter.error().message();
  EXPECT_EQ(*counter, 0x1122334455667788u);

  // Threads and their TLS bases.
  auto tids = ct.threads();
  std::set<pid_t> tid_set;
  for (Tid t2 : tids) tid_set.insert(t2.value());
  EXPECT_EQ(tid_set.size(), tids.size());
  EXPECT_EQ(tids.size(), tasks);
  EXPECT_TRUE(tid_set.count(pid));
  auto tls = (*fx)->facts_with_prefix("thread.");
  ASSERT_FALSE(tls.empty());
  for (const auto& [key, value] : tls) {
    // key is "<tid>.tls_base"
    pid_t tid = std::stoi(key.substr(0, key.find('.')));
    EXPECT_TRUE(tid_set.count(tid)) << "thread " << tid;
    auto regs = ct.registers(Tid(tid));
    ASSERT_TRUE(regs.ok()) << regs.error().message();
    EXPECT_EQ(regs->tls_base, std::strtoull(value.c_str(), nullptr, 0)) << "thread " << tid;
    EXPECT_NE(regs->pc, 0u);
    EXPECT_NE(regs->sp, 0u);
  }

  // Code at main.main, through the core (or the executable where the core lacks it), against the
  // live process.
  std::string main_fact = (*fx)->fact("func.main");
  uint64_t main_entry = std::strtoull(main_fact.substr(0, main_fact.find('|')).c_str(), nullptr, 0);
  ASSERT_NE(main_entry, 0u);
  std::vector<std::byte> code(4096);
  auto n = ct.read_some(Addr(main_entry), code);
  ASSERT_TRUE(n.ok()) << n.error().message();
  auto live = live_bytes(pid, main_entry, 4096);
  ASSERT_EQ(live.size(), 4096u);
  ASSERT_EQ(*n, 4096u);
  EXPECT_EQ(code, live);

  // The text mapping names the executable (NT_FILE's path, here the same namespace as ours).
  std::string canonical = fs::canonical(*exe).string();
  EXPECT_EQ(ct.target_executable_path(), canonical);
  const target::Mapping* text = ct.find_mapping(Addr(main_entry));
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(text->path, canonical);
  EXPECT_TRUE(text->exec);
  EXPECT_FALSE(text->write);

  // gcore (coredump_filter 0x33) leaves out the executable's file-backed mappings that have no
  // private pages, except the one holding the ELF header: those bytes come from the executable.
  size_t from_exe = 0;
  for (const auto& m : ct.mappings()) {
    if (m.path != canonical) continue;
    for (uint64_t a = m.range.start.value(); a < m.range.end.value(); a += 4096) {
      if (ct.source_of(Addr(a)) != CoreTarget::Source::kExecutable) continue;
      size_t len = std::min<uint64_t>(4096, m.range.end.value() - a);
      std::vector<std::byte> got(len);
      ASSERT_TRUE(ct.read_exact(Addr(a), got).ok()) << to_hex(a);
      EXPECT_EQ(got, live_bytes(pid, a, len)) << "page " << to_hex(a);
      ++from_exe;
    }
  }
  EXPECT_GT(from_exe, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Go, CoreTargetByVersion,
    ::testing::ValuesIn(versions_and_modes({BuildMode::kDefault, BuildMode::kPie})), param_name);

// Bad input: clear one-line errors or warnings, never a crash.
class CoreTargetErrors : public ::testing::Test {
 protected:
  static std::string version() { return go_versions().back(); }
};

TEST_F(CoreTargetErrors, RejectsFilesThatAreNotCores) {
  auto exe = build_fixture({"basic", version(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  std::string dir = scratch_dir("core_target_errors");

  std::string text = dir + "/not-elf";
  std::ofstream(text) << "this is not an ELF file\n";
  auto r = CoreTarget::open(text, *exe);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kBadFormat);
  EXPECT_EQ(r.error().message(), text + " is not an ELF file");

  r = CoreTarget::open(*exe, *exe);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kBadFormat);
  EXPECT_EQ(r.error().message(), *exe + " is an ELF executable, not a core file");

  r = CoreTarget::open(dir + "/no-such-core", *exe);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kNotFound);
  EXPECT_NE(r.error().message().find(dir + "/no-such-core"), std::string::npos);
}

TEST_F(CoreTargetErrors, TruncatedMissingAndMismatchedExecutable) {
  auto exe = build_fixture({"basic", version(), BuildMode::kDefault, {}});
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto other = build_fixture({"basic", go_versions().front(), BuildMode::kDefault, {}});
  ASSERT_TRUE(other.ok()) << other.error().message();
  auto fx = RunningFixture::start(*exe);
  ASSERT_TRUE(fx.ok()) << fx.error().message();
  std::string dir = scratch_dir("core_target_truncated");
  auto core = gcore((*fx)->pid(), dir + "/core");
  ASSERT_TRUE(core.ok()) << core.error().message();
  RemoveOnExit cleanup{*core};

  // The executable does not exist.
  auto r = CoreTarget::open(*core, dir + "/no-such-exe");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kNotFound);
  EXPECT_NE(r.error().message().find(dir + "/no-such-exe"), std::string::npos);

  // Another Go version's build of the same program: its entry point is elsewhere.
  r = CoreTarget::open(*core, *other);
  ASSERT_TRUE(r.ok()) << r.error().message();
  bool warned = false;
  for (const auto& w : (*r)->warnings())
    warned = warned || w.find("may not be the one the core was produced from") != std::string::npos;
  EXPECT_TRUE(warned);

  // The first 64 KiB of the core.
  std::string cut = dir + "/core.cut";
  {
    std::ifstream in(*core, std::ios::binary);
    std::vector<char> head(64 << 10);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(cut, std::ios::binary).write(head.data(), in.gcount());
  }
  RemoveOnExit cleanup_cut{cut};
  r = CoreTarget::open(cut, *exe);
  if (r.ok()) {
    // Notes first (as the kernel writes them): usable, with a warning per truncated segment.
    bool truncated = false;
    for (const auto& w : (*r)->warnings())
      truncated = truncated || w.find("is truncated in the core") != std::string::npos;
    EXPECT_TRUE(truncated);
  } else {
    // Notes last (as gdb writes them): nothing to describe the threads.
    EXPECT_EQ(r.error().code(), Errc::kBadFormat);
    EXPECT_NE(r.error().message().find("truncated"), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace goref::testing
