// goref cpu: samples a running Go program's CPU use at a high rate with perf_event_open — the
// target is never stopped or traced — and writes a pprof CPU profile symbolized through its
// gopclntab (inlined calls included); --annotate also charges bound checks and nil checks.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "cli/checks_common.h"
#include "cli/command.h"
#include "cli/exit_code.h"
#include "cli/timing.h"
#include "goref/annotate/annotate_profile.h"
#include "goref/profile/cpu_profile.h"
#include "goref/profile/pprof.h"
#include "goref/target/perf_sampler.h"
#include "goref/target/proc_maps.h"
#include "goref/target/procfs.h"

namespace goref::cli {
namespace {

struct CpuOptions {
  int pid = 0;
  std::string duration = "10s";
  uint32_t hz = 999;
  std::string out = "goref.cpu.pb.gz";
  bool annotate = false;
  int top = 10;
};

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) {
  g_stop.store(true);
}

// "10s", "500ms", "2m", or plain seconds.
Result<std::chrono::nanoseconds> parse_duration(const std::string& s) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    used = 0;
  }
  std::string unit = s.substr(used);
  double scale = unit == "ms" ? 1e6 : unit == "s" || unit.empty() ? 1e9 : unit == "m" ? 60e9 : -1;
  if (used == 0 || scale < 0 || v <= 0 || v * scale > 24 * 3600e9)
    return Error(Errc::kUsage, "bad --duration '" + s + "': use e.g. 10s, 500ms or 2m");
  return std::chrono::nanoseconds(int64_t(v * scale));
}

// The executable's mappings symbolize through gopclntab; other mappings (the vDSO, libc in a
// cgo program) keep bare addresses.
void add_mappings(profile::CpuProfileBuilder& b, const std::vector<target::Mapping>& maps,
                  const std::string& exe, const Executable& x) {
  std::vector<target::Mapping> exec;
  for (const auto& m : maps)
    if (m.exec) exec.push_back(m);
  // The executable first, as Go's profiler lists it.
  std::stable_partition(exec.begin(), exec.end(),
                        [&](const target::Mapping& m) { return m.path == exe; });
  for (const auto& m : exec) {
    profile::CpuMapping cm{m.range.start.value(),
                           m.range.end.value(),
                           m.offset,
                           m.path,
                           x.elf->build_id().value_or(""),
                           {}};
    if (m.path != exe) cm.build_id.clear();
    if (m.path == exe) {
      const binary::ElfFile* elf = x.elf.get();
      const binary::Pclntab* tab = x.tab.get();
      uint64_t start = cm.start, offset = cm.offset;
      cm.symbolize = [elf, tab, start, offset](uint64_t addr) {
        std::vector<profile::SymbolizedFrame> out;
        auto va = elf->vaddr_at_offset(addr - start + offset);
        if (!va) return out;
        for (auto& f : tab->symbolize(*va)) out.push_back({f.function, f.file, f.line});
        return out;
      };
    }
    b.add_mapping(std::move(cm));
  }
}

void print_top(const profile::Profile& p, int top) {
  // Flat samples per innermost function, as `go tool pprof -top` would list them.
  std::map<uint64_t, std::string> fn;
  for (const auto& f : p.function()) fn[f.id()] = p.string_table(int(f.name()));
  std::map<uint64_t, std::string> leaf_fn;
  for (const auto& l : p.location())
    leaf_fn[l.id()] =
        l.line_size() > 0 ? fn[l.line(0).function_id()] : fmt::format("{:#x}", l.address());
  std::map<std::string, int64_t> flat;
  int64_t total = 0;
  for (const auto& s : p.sample()) {
    total += s.value(0);
    if (s.location_id_size() > 0) flat[leaf_fn[s.location_id(0)]] += s.value(0);
  }
  std::vector<std::pair<std::string, int64_t>> v(flat.begin(), flat.end());
  std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second > b.second; });
  fmt::print("\ntop functions by samples (flat):\n");
  for (size_t i = 0; i < v.size() && int(i) < top; ++i)
    fmt::print("  {:>10}  {:>5.1f}%  {}\n", v[i].second,
               total ? 100.0 * double(v[i].second) / double(total) : 0.0, v[i].first);
}

Result<int> run_cpu(const CpuOptions& o) {
  GOREF_TRY(auto duration, parse_duration(o.duration));
  if (o.hz < 1 || o.hz > 100000)
    return Error(Errc::kUsage,
                 "--hz must be between 1 and 100000 (the kernel caps it at "
                 "/proc/sys/kernel/perf_event_max_sample_rate)");
  Pid pid(o.pid);
  std::string proc_exe = "/proc/" + pid.str() + "/exe";
  std::error_code ec;
  auto exe = std::filesystem::read_symlink(proc_exe, ec);
  if (ec == std::errc::no_such_file_or_directory)
    return Error(Errc::kNoSuchProcess, "process " + pid.str() + " does not exist");
  // The link needs ptrace read access to the process, as does sampling it: say how to get it.
  if (ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted)
    return target::ptrace_permission_error(pid, "read the executable of", ec.value());
  if (ec) return Error(Errc::kIo, "process " + pid.str() + ": " + proc_exe + ": " + ec.message());
  // Through /proc/PID/exe: the running file even if it was replaced or deleted on disk.
  // /proc/PID/maps drops the " (deleted)" the link carries for a replaced executable.
  std::string exe_path = exe.string();
  if (exe_path.ends_with(" (deleted)")) exe_path.resize(exe_path.size() - 10);
  auto x = open_executable(proc_exe, false);
  if (!x.ok()) return std::move(x).error().context("process " + pid.str());
  GOREF_TRY(auto maps, target::read_proc_maps(pid));

  profile::CpuProfileBuilder builder(int64_t(1e9 / o.hz));
  add_mappings(builder, maps, exe_path, *x);

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;  // no SA_RESTART: poll returns at once
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  auto wall = std::chrono::system_clock::now();
  auto t0 = Clock::now();
  GOREF_TRY(auto sampler, target::PerfSampler::start(pid, o.hz));
  bool alive = true;
  while (alive && !g_stop.load() && Clock::now() - t0 < duration) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(duration - (Clock::now() - t0));
    GOREF_TRY(alive, sampler->poll(int(std::clamp<int64_t>(left.count(), 1, 100)),
                                   [&](const target::PerfSampleView& s) {
                                     builder.add(s.pcs, int64_t(s.period_ns));
                                   }));
  }
  auto elapsed = Clock::now() - t0;
  size_t threads = sampler->threads();
  uint64_t lost = sampler->lost(), throttled = sampler->throttled();
  // Read what is left in the buffers, then close the events.
  (void)sampler->poll(
      0, [&](const target::PerfSampleView& s) { builder.add(s.pcs, int64_t(s.period_ns)); });
  sampler.reset();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);

  profile::Profile p = builder.build(
      std::chrono::duration_cast<std::chrono::nanoseconds>(wall.time_since_epoch()).count(),
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  double secs = std::chrono::duration<double>(elapsed).count();
  fmt::print("process {} ({}): {} samples in {:.2f} s at {} Hz from {} threads{}{}\n", o.pid,
             exe.filename().string(), builder.samples(), secs, o.hz, threads,
             lost ? fmt::format(", {} lost", lost) : "",
             throttled ? fmt::format(", throttled {} times by the kernel", throttled) : "");
  if (!alive) fmt::print("the process exited during sampling; the profile covers its life\n");
  if (o.annotate) {
    GOREF_TRY(auto r, annotate::annotate_profile(p, *x->elf, *x->tab, x->checks));
    print_check_summary(r, x->checks, exe.string(), o.top);
  }
  print_top(p, o.top);
  GOREF_CHECK(profile::write_profile_file(p, o.out));
  std::fflush(stdout);
  fmt::print(stderr, "goref: CPU profile written to {} (view: go tool pprof -top {})\n", o.out,
             o.out);
  return kExitOk;
}

}  // namespace

Command add_cpu_command(CLI::App& root) {
  auto o = std::make_shared<CpuOptions>();
  auto* app = root.add_subcommand(
      "cpu", "sample a running Go program's CPU use at a high rate (the target is not stopped)");
  app->add_option("pid", o->pid, "process id of a running Go program")->required();
  app->add_option("-d,--duration", o->duration, "how long to sample: 10s, 500ms, 2m")
      ->capture_default_str();
  app->add_option("--hz", o->hz, "samples per second per running thread")->capture_default_str();
  app->add_option("-o,--output", o->out, "where to write the profile")->capture_default_str();
  app->add_flag("--annotate", o->annotate,
                "charge samples on bound checks and nil checks to runtime.boundcheck and "
                "runtime.nilcheck");
  app->add_option("--top", o->top, "how many functions the summary lists")->capture_default_str();
  return {app, [o] { return run_cpu(*o); }};
}

}  // namespace goref::cli
