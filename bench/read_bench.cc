// Live memory read throughput: LiveTarget::read_some against raw pread(2) of /proc/PID/mem,
// over a 1 GiB buffer of a stopped Go program (the basic fixture with -bigmem), in blocks of
// 16 MiB and 64 MiB. Each pass reads the whole region into one reused buffer; the last block of
// every pass is checked against the fixture's pattern byte(i*7 + i>>12), so a method that reads
// garbage (or nothing) fails instead of looking fast.
//
//   goref_bench [--mib N] [--reps N] [--go VERSION]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "goref/target/live_target.h"
#include "harness/fixture.h"

namespace goref {
namespace {

using Clock = std::chrono::steady_clock;

uint8_t pattern(uint64_t i) {
  return static_cast<uint8_t>(i * 7 + (i >> 12));
}

// Checks buf against the pattern at offset off of the region; returns the first bad index or -1.
long long first_mismatch(const std::vector<std::byte>& buf, size_t n, uint64_t off) {
  for (size_t i = 0; i < n; ++i)
    if (static_cast<uint8_t>(buf[i]) != pattern(off + i)) return static_cast<long long>(i);
  return -1;
}

struct Stats {
  std::vector<double> gibps;
  [[nodiscard]] double best() const { return *std::max_element(gibps.begin(), gibps.end()); }
  [[nodiscard]] double median() const {
    auto v = gibps;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
};

// One pass over [base, base+len) in blocks of buf.size() with read_block(addr, n) → bytes read.
// Returns GiB/s, or a negative value after printing the reason when the data is wrong.
double pass(const char* what, uint64_t base, size_t len, std::vector<std::byte>& buf,
            const std::function<size_t(uint64_t, size_t)>& read_block) {
  auto t0 = Clock::now();
  size_t last = 0;
  uint64_t last_off = 0;
  for (uint64_t off = 0; off < len; off += buf.size()) {
    size_t want = std::min<uint64_t>(buf.size(), len - off);
    size_t got = read_block(base + off, want);
    if (got != want) {
      std::fprintf(stderr, "%s: short read at +%#llx: %zu of %zu\n", what,
                   static_cast<unsigned long long>(off), got, want);
      return -1;
    }
    last = want;
    last_off = off;
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (long long bad = first_mismatch(buf, last, last_off); bad >= 0) {
    std::fprintf(stderr, "%s: wrong byte at +%#llx\n", what,
                 static_cast<unsigned long long>(last_off + bad));
    return -1;
  }
  return static_cast<double>(len) / double(1 << 30) / secs;
}

int run(int argc, char** argv) {
  int mib = 1024, reps = 7;
  std::string version;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--mib")
      mib = std::atoi(argv[i + 1]);
    else if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (a == "--go")
      version = argv[i + 1];
  }
  if (mib <= 0 || reps <= 0) {
    std::fprintf(stderr, "usage: goref_bench [--mib N] [--reps N] [--go VERSION]\n");
    return 2;
  }
  if (version.empty()) version = testing::go_versions().back();

  auto exe = testing::build_fixture({"basic", version, testing::BuildMode::kDefault, {}});
  if (!exe) {
    std::fprintf(stderr, "%s\n", exe.error().message().c_str());
    return 1;
  }
  auto fx = testing::RunningFixture::start(*exe, {"-bigmem=" + std::to_string(mib)}, 600);
  if (!fx) {
    std::fprintf(stderr, "%s\n", fx.error().message().c_str());
    return 1;
  }
  const uint64_t base = (*fx)->fact_u64("bigmem.addr");
  const size_t len = (*fx)->fact_u64("bigmem.len");
  auto t = target::LiveTarget::attach(Pid((*fx)->pid()));
  if (!t) {
    std::fprintf(stderr, "%s\n", t.error().message().c_str());
    return 1;
  }
  std::string mem_path = "/proc/" + std::to_string((*fx)->pid()) + "/mem";
  int fd = ::open(mem_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::perror(mem_path.c_str());
    return 1;
  }

  std::printf("go%s, %zu MiB region at %#llx, %d repetitions, %zu threads stopped\n",
              version.c_str(), len >> 20, static_cast<unsigned long long>(base), reps,
              (*t)->threads().size());
  std::printf("%-8s %-22s %10s %10s\n", "block", "method", "best GiB/s", "median");
  for (size_t block_mib : {16, 64}) {
    std::vector<std::byte> buf(block_mib << 20);
    std::memset(buf.data(), 0, buf.size());  // fault the buffer in outside the timing
    auto live = [&](uint64_t addr, size_t n) -> size_t {
      auto r = (*t)->read_some(Addr(addr), std::span(buf.data(), n));
      return r ? *r : 0;
    };
    auto raw = [&](uint64_t addr, size_t n) -> size_t {
      size_t done = 0;
      while (done < n) {
        ssize_t r = ::pread(fd, buf.data() + done, n - done, static_cast<off_t>(addr + done));
        if (r <= 0) break;
        done += static_cast<size_t>(r);
      }
      return done;
    };
    Stats s_live, s_raw;
    for (int rep = 0; rep < reps; ++rep) {  // interleaved, so drift affects both alike
      double a = pass("LiveTarget::read_some", base, len, buf, live);
      double b = pass("pread /proc/PID/mem", base, len, buf, raw);
      if (a < 0 || b < 0) return 1;
      s_live.gibps.push_back(a);
      s_raw.gibps.push_back(b);
    }
    std::printf("%3zu MiB  %-22s %10.2f %10.2f\n", block_mib, "LiveTarget::read_some",
                s_live.best(), s_live.median());
    std::printf("%3zu MiB  %-22s %10.2f %10.2f\n", block_mib, "pread /proc/PID/mem", s_raw.best(),
                s_raw.median());
    std::printf("%3zu MiB  ratio LiveTarget/pread: best %.2f, median %.2f\n", block_mib,
                s_live.best() / s_raw.best(), s_live.median() / s_raw.median());
  }
  ::close(fd);
  std::printf("threads stopped for %.2f s\n", std::chrono::duration<double>((*t)->pause()).count());
  return 0;
}

}  // namespace
}  // namespace goref

int main(int argc, char** argv) {
  return goref::run(argc, argv);
}
