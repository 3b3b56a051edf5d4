// The Go fixture harness: builds the Go programs under integration/fixtures/ with every supported
// Go toolchain (integration/go-versions.txt, materialised by scripts/go-toolchains.sh), caches
// the binaries, starts them, waits for their READY line and keeps the key=value facts they
// printed about themselves. A RunningFixture is killed and reaped when it goes out of scope.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "goref/base/result.h"

namespace goref::testing {

struct GoToolchain {
  std::string version;  // "1.21.13"
  std::string goroot;
  [[nodiscard]] std::string go() const { return goroot + "/bin/go"; }
  [[nodiscard]] std::string minor() const;  // "1.21"
};

// Every toolchain in go-versions.txt; fails loudly (in the Result) if one is missing, with the
// command that installs it.
Result<std::vector<GoToolchain>> go_toolchains();
// The versions listed in go-versions.txt (without looking for the toolchains).
std::vector<std::string> go_versions();
Result<GoToolchain> go_toolchain(const std::string& version);

enum class BuildMode {
  kDefault,   // go build
  kPie,       // -buildmode=pie
  kNoOpt,     // -gcflags=all=-N -l
  kStripped,  // -ldflags=-s -w
  kNoDwarf,   // -ldflags=-w: symbols kept, DWARF dropped
};
std::string build_mode_name(BuildMode m);

struct BuildSpec {
  std::string fixture;  // directory under integration/fixtures
  std::string version;  // toolchain version
  BuildMode mode = BuildMode::kDefault;
  std::string goexperiment;  // GOEXPERIMENT value, empty for the default
};

// Builds (or finds in the cache) the fixture and returns the path of the executable. gcflags, if
// set, is passed as -gcflags=VALUE (for the compiler's debug reports).
Result<std::string> build_fixture(const BuildSpec& spec, const std::string& gcflags = {});
// What the go command printed on stderr when it built exe (kept beside the cached binary, so a
// cached build still has the compiler's reports).
Result<std::string> fixture_build_output(const std::string& exe);

class RunningFixture {
 public:
  // Starts exe with args and waits (up to timeout_s) for READY on its stdout.
  static Result<std::unique_ptr<RunningFixture>> start(const std::string& exe,
                                                       const std::vector<std::string>& args = {},
                                                       int timeout_s = 120);
  ~RunningFixture();
  RunningFixture(const RunningFixture&) = delete;
  RunningFixture& operator=(const RunningFixture&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] const std::string& exe() const { return exe_; }
  [[nodiscard]] const std::map<std::string, std::string>& facts() const { return facts_; }
  // The fact's value; an empty string if absent (tests assert presence separately).
  [[nodiscard]] std::string fact(const std::string& key) const;
  [[nodiscard]] uint64_t fact_u64(const std::string& key) const;  // decimal or 0x hex
  // All facts whose key starts with prefix, with the prefix removed.
  [[nodiscard]] std::map<std::string, std::string> facts_with_prefix(const std::string& p) const;

  // True if the process still exists and is not stopped or traced (state from /proc).
  [[nodiscard]] bool running_untraced() const;
  // The tracer pid of every thread that has one (empty when nobody traces the process).
  [[nodiscard]] std::vector<pid_t> tracers() const;

 private:
  RunningFixture() = default;
  pid_t pid_ = -1;
  int out_fd_ = -1;  // read end of the fixture's stdout, kept open until the kill
  std::string exe_;
  std::map<std::string, std::string> facts_;
};

// Writes a core of a running process with gdb's gcore. The process keeps running.
Result<std::string> gcore(pid_t pid, const std::string& out_prefix);

// A fresh directory under the build tree for test outputs.
std::string scratch_dir(const std::string& name);

// Runs a command and captures stdout, stderr and exit status.
struct CommandResult {
  int exit_code = -1;  // or 128+signal
  std::string out;
  std::string err;
};
CommandResult run_command(const std::vector<std::string>& argv, int timeout_s = 300);

// Starts a command in the background with stdout and stderr written to the given files
// ("/dev/null" drops them). Returns its pid, or -1; the caller waits for it.
pid_t spawn_command(const std::vector<std::string>& argv, const std::string& out_path = "/dev/null",
                    const std::string& err_path = "/dev/null");

}  // namespace goref::testing
