// Unwinding throughput and pause: the manystacks fixture parks N goroutines (default 100,000),
// each `depth` calls of main.recurse deep, in a channel receive. The benchmark attaches, reads
// runtime.allgs, copies every parked goroutine's live stack [sched.sp, stack.hi) in one read
// each, detaches (the pause ends there), and then unwinds every copy with each method: the
// compiled pcsp table, a pcvalue decode per frame, frame pointers, and libdw's CFI. Every method's
// frames are compared with the compiled-table result, so a wrong method cannot look fast.
//
//   goref_unwind_bench [--go VERSION] [--n N] [--depth D] [--reps R] [--pie]
//   goref_unwind_bench --table EXE [--reps R]   (compiled-table build time for any Go binary)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "goref/binary/dwarf.h"
#include "goref/binary/elf_file.h"
#include "goref/binary/pclntab.h"
#include "goref/target/live_target.h"
#include "goref/unwind/cfi_unwinder.h"
#include "goref/unwind/compiled_pcsp.h"
#include "goref/unwind/unwinder.h"
#include "harness/fixture.h"
#include "unwind_support.h"

namespace goref {
namespace {

using Clock = std::chrono::steady_clock;
using unwind::Unwinder;

double secs(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

int fail(const Error& e) {
  std::fprintf(stderr, "%s\n", e.message().c_str());
  return 1;
}

// Eager build of the compiled pcsp table for every function of exe, reps times.
int table_only(const std::string& path, int reps) {
  auto elf = binary::ElfFile::open(path);
  if (!elf) return fail(elf.error());
  auto tab = binary::Pclntab::open(**elf);
  if (!tab) return fail(tab.error());
  std::vector<double> ms;
  size_t runs = 0, bytes = 0;
  for (int i = 0; i < reps; ++i) {
    auto c = unwind::CompiledPcsp::build(*tab, unwind::CompiledPcsp::Mode::kEager);
    if (!c) return fail(c.error());
    ms.push_back(secs(c->build_time()) * 1e3);
    runs = c->runs();
    bytes = c->memory_bytes();
  }
  std::sort(ms.begin(), ms.end());
  auto tu = Clock::now();
  Unwinder u(*tab, 0, (*elf)->arch());
  double unwinder_ms = secs(Clock::now() - tu) * 1e3;
  std::printf(
      "%s: %zu functions, %zu pcsp runs, %.2f MiB; eager build best %.2f ms, median "
      "%.2f ms; Unwinder construction %.2f ms\n",
      path.c_str(), tab->nfunc(), runs, static_cast<double>(bytes) / (1 << 20), ms.front(),
      ms[ms.size() / 2], unwinder_ms);
  return 0;
}

int run(int argc, char** argv) {
  std::string version, table;
  int n = 100000, depth = 20, reps = 5;
  bool pie = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--go")
      version = next();
    else if (a == "--n")
      n = std::atoi(next());
    else if (a == "--depth")
      depth = std::atoi(next());
    else if (a == "--reps")
      reps = std::atoi(next());
    else if (a == "--pie")
      pie = true;
    else if (a == "--table")
      table = next();
    else {
      std::fprintf(stderr,
                   "usage: goref_unwind_bench [--go VERSION] [--n N] [--depth D] [--reps R] "
                   "[--pie]\n");
      return 2;
    }
  }
  if (n <= 0 || depth < 0 || reps <= 0) return 2;
  if (!table.empty()) return table_only(table, reps);
  if (version.empty()) version = testing::go_versions().back();

  auto exe = testing::build_fixture(
      {"manystacks", version, pie ? testing::BuildMode::kPie : testing::BuildMode::kDefault, {}});
  if (!exe) return fail(exe.error());
  auto fx = testing::RunningFixture::start(
      *exe, {"-n", std::to_string(n), "-depth", std::to_string(depth)}, 600);
  if (!fx) return fail(fx.error());
  auto elf = binary::ElfFile::open(*exe);
  if (!elf) return fail(elf.error());
  auto tab = binary::Pclntab::open(**elf);
  if (!tab) return fail(tab.error());
  auto bias = testing::bias_from_entry(*tab, "main.park", (*fx)->fact_u64("func.main.park"));
  if (!bias) return fail(bias.error());
  auto dw = binary::Dwarf::open(*exe);
  if (!dw) return fail(dw.error());
  auto layout = testing::g_layout(**dw);
  if (!layout) return fail(layout.error());

  // Compiled table build: eager for every function, and the Unwinder (eager table + names).
  auto tb = Clock::now();
  auto eager = unwind::CompiledPcsp::build(*tab, unwind::CompiledPcsp::Mode::kEager);
  double eager_s = secs(Clock::now() - tb);
  if (!eager) return fail(eager.error());
  tb = Clock::now();
  Unwinder unwinder(*tab, *bias, (*elf)->arch());
  double unwinder_s = secs(Clock::now() - tb);

  // The pause: attach, read the gs, copy the parked goroutines' live stacks, detach. Once with
  // one read per g and per stack, once with neighbouring ranges coalesced into larger reads.
  struct Snapshot {
    std::vector<unwind::StackImage> stacks;
    std::vector<unwind::StartState> starts;
    std::vector<uint64_t> gaddrs;
    size_t ngs = 0, copied = 0, reads = 0;
  };
  auto snapshot = [&](bool coalesce) -> Result<Snapshot> {
    Snapshot snap;
    auto t0 = Clock::now();
    GOREF_TRY(auto t, target::LiveTarget::attach(Pid((*fx)->pid())));
    auto t_attached = Clock::now();
    GOREF_TRY(auto gs, testing::read_allgs(*t, **dw, *layout, *bias, coalesce));
    snap.ngs = gs.size();
    auto t_gs = Clock::now();
    std::vector<testing::Range> ranges;
    for (const auto& g : gs) {
      // Parked goroutines only (_Gwaiting, not in a system call); dead gs have no stack.
      if (g.status != 4 || g.syscallsp != 0 || g.sp < g.lo || g.sp >= g.hi) continue;
      ranges.push_back({g.sp, g.hi - g.sp});
      snap.starts.push_back({g.pc, g.sp, g.bp, 0});
      snap.gaddrs.push_back(g.addr);
    }
    snap.stacks.resize(ranges.size());
    if (coalesce) {
      GOREF_TRY(auto blocks, testing::read_coalesced(*t, ranges, 4096, 4 << 20, &snap.reads));
      for (size_t i = 0; i < ranges.size(); ++i)
        snap.stacks[i] = {Addr(ranges[i].addr), std::move(blocks[i])};
    } else {
      for (size_t i = 0; i < ranges.size(); ++i) {
        GOREF_TRY(snap.stacks[i].bytes, t->read_bytes(Addr(ranges[i].addr), ranges[i].len));
        snap.stacks[i].lo = Addr(ranges[i].addr);
        ++snap.reads;
      }
    }
    for (const auto& st : snap.stacks) snap.copied += st.bytes.size();
    auto t_copied = Clock::now();
    GOREF_CHECK(t->detach());
    auto t1 = Clock::now();
    std::printf(
        "pause, %s: %.1f ms (attach %.1f ms, read %zu gs %.1f ms, copy %zu stacks in "
        "%zu reads %.1f ms, detach %.1f ms; threads stopped %.1f ms)\n",
        coalesce ? "coalesced reads" : "one read per g and per stack", secs(t1 - t0) * 1e3,
        secs(t_attached - t0) * 1e3, gs.size(), secs(t_gs - t_attached) * 1e3, snap.stacks.size(),
        snap.reads, secs(t_copied - t_gs) * 1e3, secs(t1 - t_copied) * 1e3,
        std::chrono::duration<double>(t->pause()).count() * 1e3);
    return snap;
  };
  auto single = snapshot(false);
  if (!single) return fail(single.error());
  auto coalesced = snapshot(true);
  if (!coalesced) return fail(coalesced.error());
  // The fixture's goroutines stay parked: both snapshots must hold the same bytes for them
  // (runtime goroutines such as the scavenger may have run in between).
  {
    std::map<uint64_t, size_t> by_g;
    for (size_t i = 0; i < single->gaddrs.size(); ++i) by_g[single->gaddrs[i]] = i;
    size_t same = 0;
    for (size_t i = 0; i < coalesced->gaddrs.size(); ++i) {
      auto it = by_g.find(coalesced->gaddrs[i]);
      if (it == by_g.end()) continue;
      const auto& a = single->stacks[it->second];
      const auto& b = coalesced->stacks[i];
      if (a.lo == b.lo && a.bytes == b.bytes) {
        ++same;
        continue;
      }
      auto u = unwinder.unwind(b, coalesced->starts[i]);
      for (const auto& f : u.frames)
        if (f.function == "main.park") {
          std::fprintf(stderr, "the two snapshots differ for parked g %#llx\n",
                       static_cast<unsigned long long>(coalesced->gaddrs[i]));
          return 1;
        }
    }
    if (same < static_cast<size_t>(n)) {
      std::fprintf(stderr, "only %zu stacks equal in both snapshots\n", same);
      return 1;
    }
  }
  const auto& stacks = coalesced->stacks;
  const auto& starts = coalesced->starts;
  std::printf("go%s%s, %zu goroutines in allgs, %zu parked stacks copied (%.1f MiB), depth %d\n",
              version.c_str(), pie ? " pie" : "", coalesced->ngs, stacks.size(),
              static_cast<double>(coalesced->copied) / (1 << 20), depth);
  std::printf(
      "pclntab: %zu functions; compiled pcsp: %zu runs, %.2f MiB, eager build %.2f ms; "
      "Unwinder construction %.2f ms\n",
      tab->nfunc(), eager->runs(), static_cast<double>(eager->memory_bytes()) / (1 << 20),
      eager_s * 1e3, unwinder_s * 1e3);

  auto cfi = unwind::CfiUnwinder::open(*exe, *tab, *bias, (*elf)->arch());
  if (!cfi) return fail(cfi.error());

  // Reference results, checked: every parked goroutine ends at goexit.
  std::vector<unwind::Unwound> ref(stacks.size());
  std::map<std::string, size_t> stops;
  size_t ref_frames = 0;
  for (size_t i = 0; i < stacks.size(); ++i) {
    ref[i] = unwinder.unwind(stacks[i], starts[i]);
    ref_frames += ref[i].frames.size();
    stops[std::string(unwind::stop_reason_name(ref[i].stop))]++;
  }
  std::printf("frames: %zu (%.1f per goroutine); stops:", ref_frames,
              static_cast<double>(ref_frames) / static_cast<double>(stacks.size()));
  for (const auto& [k, v] : stops) std::printf(" %s=%zu", k.c_str(), v);
  std::printf("\n");

  // Lazy table: the functions these stacks touch, built on first lookup.
  {
    auto lazy = unwind::CompiledPcsp::build(*tab, unwind::CompiledPcsp::Mode::kLazy);
    if (!lazy) return fail(lazy.error());
    auto tl = Clock::now();
    for (const auto& u : ref)
      for (const auto& f : u.frames)
        if (auto fn = tab->find_func(f.pc - *bias)) (void)lazy->sp_delta(*fn, f.pc - *bias);
    std::printf(
        "lazy table: setup %.2f ms; one pass over every frame (find_func + sp_delta, "
        "building %zu functions on first use) %.2f ms\n",
        secs(lazy->build_time()) * 1e3, lazy->built_functions(), secs(Clock::now() - tl) * 1e3);
  }

  struct Row {
    const char* name;
    std::function<unwind::Unwound(size_t)> fn;
  };
  std::vector<Row> rows = {
      {"compiled pcsp", [&](size_t i) { return unwinder.unwind(stacks[i], starts[i]); }},
      {"decode pcsp",
       [&](size_t i) {
         return unwinder.unwind(stacks[i], starts[i], Unwinder::Method::kDecodePcsp);
       }},
      {"frame pointers",
       [&](size_t i) {
         return unwinder.unwind(stacks[i], starts[i], Unwinder::Method::kFramePointer);
       }},
      {"libdw CFI", [&](size_t i) { return (*cfi)->unwind(stacks[i], starts[i]); }},
  };
  std::printf("%-16s %14s %14s %12s %10s\n", "method", "best frames/s", "median", "best ms",
              "mismatch");
  for (const Row& r : rows) {
    std::vector<double> rates, times;
    size_t mismatches = 0;
    int r_reps = std::string(r.name) == "libdw CFI" ? std::min(reps, 2) : reps;
    for (int rep = 0; rep < r_reps; ++rep) {
      size_t frames = 0;
      auto ts = Clock::now();
      for (size_t i = 0; i < stacks.size(); ++i) {
        unwind::Unwound u = r.fn(i);
        frames += u.frames.size();
        if (rep == 0 && unwind::compare(ref[i], u)) ++mismatches;
      }
      double s = secs(Clock::now() - ts);
      times.push_back(s);
      rates.push_back(static_cast<double>(frames) / s);
    }
    std::sort(rates.begin(), rates.end());
    std::printf("%-16s %14.0f %14.0f %12.1f %10zu\n", r.name, rates.back(), rates[rates.size() / 2],
                *std::min_element(times.begin(), times.end()) * 1e3, mismatches);
  }
  return 0;
}

}  // namespace
}  // namespace goref

int main(int argc, char** argv) {
  return goref::run(argc, argv);
}
