#include "cli/open_target.h"

#include <fmt/format.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>

#include "goref/binary/elf_file.h"
#include "goref/target/core_target.h"
#include "goref/target/detach_on_signal.h"

namespace goref::cli {
namespace {

Result<std::unique_ptr<runtime::Program>> open_program(const std::string& exe,
                                                       const std::string& what) {
  auto prog = runtime::Program::open(exe);
  if (!prog.ok() && prog.error().code() == Errc::kNotGo)
    return Error(Errc::kNotGo, what + " is not a Go program (no Go build info in " + exe + ")");
  if (!prog.ok()) return std::move(prog).error().context(what);
  return prog;
}

// An --exe given for a live process must be the same build as the one running: otherwise every
// address and layout read from it would be wrong.
Result<void> same_build(const runtime::Program& given, const std::string& running,
                        const std::string& given_path) {
  auto elf = binary::ElfFile::open(running);
  if (!elf.ok()) return std::move(elf).error().context(running);
  auto a = (*elf)->go_build_id(), b = given.elf().go_build_id();
  if (!a || !b) a = (*elf)->build_id(), b = given.elf().build_id();
  if (a && b && *a != *b)
    return Error(Errc::kUsage, given_path + " is not the executable the process runs (build ID " +
                                   *b + ", the process has " + *a + ")");
  return {};
}

}  // namespace

Result<OpenedTarget> open_target(
    int pid, const std::string& exe, const std::string& core,
    const std::function<Result<void>(const runtime::Program&)>& prepare) {
  OpenedTarget o;
  if (pid > 0) {
    GOREF_CHECK(target::install_detach_on_signal());
    o.what = "process " + std::to_string(pid);
    // Read the executable before stopping anything: the pause is only for copying memory.
    if (kill(pid, 0) != 0 && errno == ESRCH)
      return Error(Errc::kNoSuchProcess, o.what + " does not exist");
    std::string proc_exe = "/proc/" + std::to_string(pid) + "/exe";
    GOREF_TRY(o.program, open_program(exe.empty() ? proc_exe : exe, o.what));
    if (!exe.empty()) GOREF_CHECK(same_build(*o.program, proc_exe, exe));
    if (prepare) GOREF_CHECK(prepare(*o.program));
    GOREF_TRY(auto lt, target::LiveTarget::attach(Pid(pid)));
    o.live = lt.get();
    o.target = std::move(lt);
  } else {
    o.what = "core " + core;
    GOREF_TRY(o.program, open_program(exe, exe));
    if (prepare) GOREF_CHECK(prepare(*o.program));
    GOREF_TRY(auto ct, target::CoreTarget::open(core, exe));
    for (const auto& w : ct->warnings()) fmt::print(stderr, "goref: warning: {}\n", w);
    o.target = std::move(ct);
  }
  return o;
}

Error exited_while_read(int pid, const std::string& outcome) {
  return Error(Errc::kNoSuchProcess, "process " + std::to_string(pid) +
                                         " exited while goref was reading it (it ended or was "
                                         "killed); " +
                                         outcome);
}

}  // namespace goref::cli
