#include "harness/fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace goref::testing {
namespace {

std::string source_dir() {
  return GOREF_SOURCE_DIR;
}

std::string toolchains_dir() {
  if (const char* d = std::getenv("GOREF_TOOLCHAINS"); d && *d) return d;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/goref/toolchains";
}

std::vector<char*> cstrs(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

uint64_t fnv1a(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Drains fds until both reach EOF or the deadline passes.
void drain(int out_fd, int err_fd, std::string& out, std::string& err,
           std::chrono::steady_clock::time_point deadline, bool& timed_out) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      timed_out = true;
      return;
    }
    int r = poll(fds, 2, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        fds[i].fd = -1;
        --open;
      } else {
        (i == 0 ? out : err).append(buf, static_cast<size_t>(n));
      }
    }
  }
}

CommandResult run_env(const std::vector<std::string>& argv, const std::vector<std::string>& env_add,
                      int timeout_s, const std::string& cwd = {}) {
  CommandResult res;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    res.err = "pipe failed";
    return res;
  }
  std::vector<std::string> args = argv;
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool overridden = false;
    for (const auto& a : env_add)
      if (kv.substr(0, kv.find('=') + 1) == a.substr(0, a.find('=') + 1)) overridden = true;
    if (!overridden) env.push_back(kv);
  }
  for (const auto& a : env_add) env.push_back(a);
  auto cargv = cstrs(args);
  auto cenv = cstrs(env);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execvpe(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  bool timed_out = false;
  drain(out_pipe[0], err_pipe[0], res.out, res.err,
        std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s), timed_out);
  if (timed_out) kill(pid, SIGKILL);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status))
    res.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    res.exit_code = 128 + WTERMSIG(status);
  if (timed_out) res.err += "\n[timed out after " + std::to_string(timeout_s) + "s]";
  return res;
}

}  // namespace

std::string GoToolchain::minor() const {
  auto dot = version.find('.', version.find('.') + 1);
  return version.substr(0, dot);
}

std::vector<std::string> go_versions() {
  std::vector<std::string> out;
  std::ifstream in(source_dir() + "/integration/go-versions.txt");
  std::string line;
  while (std::getline(in, line)) {
    auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    out.push_back(line.substr(b, line.find_last_not_of(" \t\r") - b + 1));
  }
  return out;
}

Result<GoToolchain> go_toolchain(const std::string& version) {
  GoToolchain tc{version, toolchains_dir() + "/go" + version};
  if (access(tc.go().c_str(), X_OK) != 0)
    return Error(Errc::kNotFound, "Go toolchain go" + version + " not found at " + tc.goroot +
                                      "; run scripts/go-toolchains.sh");
  return tc;
}

Result<std::vector<GoToolchain>> go_toolchains() {
  std::vector<GoToolchain> out;
  for (const auto& v : go_versions()) {
    GOREF_TRY(auto tc, go_toolchain(v));
    out.push_back(std::move(tc));
  }
  return out;
}

std::string build_mode_name(BuildMode m) {
  switch (m) {
    case BuildMode::kDefault:
      return "default";
    case BuildMode::kPie:
      return "pie";
    case BuildMode::kNoOpt:
      return "noopt";
    case BuildMode::kStripped:
      return "stripped";
    case BuildMode::kNoDwarf:
      return "nodwarf";
  }
  return "?";
}

Result<std::string> build_fixture(const BuildSpec& spec, const std::string& gcflags) {
  GOREF_TRY(auto tc, go_toolchain(spec.version));
  fs::path src = fs::path(source_dir()) / "integration" / "fixtures" / spec.fixture;
  if (!fs::is_directory(src)) return Error(Errc::kNotFound, "no fixture " + src.string());

  // Cache key: every file of the fixture, the toolchain and the build flags.
  uint64_t h = 1469598103934665603ull;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(src))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    h = fnv1a(fnv1a(h, f.filename().string()), ss.str());
  }
  h = fnv1a(
      h, spec.version + "|" + build_mode_name(spec.mode) + "|" + spec.goexperiment + "|" + gcflags);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(h));
  std::string tag = spec.fixture + "-go" + spec.version + "-" + build_mode_name(spec.mode) +
                    (spec.goexperiment.empty() ? "" : "-" + spec.goexperiment) +
                    (gcflags.empty() ? "" : "-gcflags");
  fs::path dir = fs::path(GOREF_FIXTURE_CACHE) / tag;
  fs::path exe = dir / (std::string(hash) + "-" + spec.fixture);
  if (fs::exists(exe)) return exe.string();
  fs::create_directories(dir);

  std::vector<std::string> argv = {tc.go(), "build", "-o"};
  fs::path tmp = dir / (std::string(hash) + ".tmp." + std::to_string(getpid()));
  argv.push_back(tmp.string());
  switch (spec.mode) {
    case BuildMode::kDefault:
      break;
    case BuildMode::kPie:
      argv.push_back("-buildmode=pie");
      break;
    case BuildMode::kNoOpt:
      argv.push_back("-gcflags=all=-N -l");
      break;
    case BuildMode::kStripped:
      argv.push_back("-ldflags=-s -w");
      break;
    case BuildMode::kNoDwarf:
      argv.push_back("-ldflags=-w");
      break;
  }
  if (!gcflags.empty()) argv.push_back("-gcflags=" + gcflags);
  argv.push_back(".");
  std::vector<std::string> env = {"GOTOOLCHAIN=local", "GOFLAGS=", "GO111MODULE=on",
                                  "GOROOT=" + tc.goroot};
  if (!spec.goexperiment.empty()) env.push_back("GOEXPERIMENT=" + spec.goexperiment);
  auto r = run_env(argv, env, 600, src.string());
  if (r.exit_code != 0)
    return Error(Errc::kIo, "building " + tag + " failed (exit " + std::to_string(r.exit_code) +
                                "): " + r.err);
  {
    std::ofstream log(tmp.string() + ".stderr", std::ios::binary);
    log << r.err;
  }
  // Log first: whoever finds the executable in the cache also finds its log.
  fs::rename(tmp.string() + ".stderr", exe.string() + ".stderr");
  fs::rename(tmp, exe);  // atomic: concurrent builders of the same key both end up correct
  return exe.string();
}

Result<std::string> fixture_build_output(const std::string& exe) {
  std::ifstream in(exe + ".stderr", std::ios::binary);
  if (!in) return Error(Errc::kNotFound, "no build log beside " + exe);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::unique_ptr<RunningFixture>> RunningFixture::start(const std::string& exe,
                                                              const std::vector<std::string>& args,
                                                              int timeout_s) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Error(Errc::kIo, "pipe failed");
  std::vector<std::string> argv = {exe};
  argv.insert(argv.end(), args.begin(), args.end());
  auto cargv = cstrs(argv);
  pid_t pid = fork();
  if (pid < 0) return Error(Errc::kIo, "fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(out_pipe[1], 1);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  std::unique_ptr<RunningFixture> f(new RunningFixture);
  f->pid_ = pid;
  f->exe_ = exe;

  std::string buf;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool ready = false;
  while (!ready) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) break;
    pollfd pfd{out_pipe[0], POLLIN, 0};
    int r = poll(&pfd, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char chunk[4096];
    ssize_t n = read(out_pipe[0], chunk, sizeof chunk);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line == "READY") {
        ready = true;
        break;
      }
      auto eq = line.find('=');
      if (eq != std::string::npos) f->facts_[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  // The write end stays open in the child; keep our read end open too so a late write by the
  // fixture never dies of SIGPIPE. It is closed with the process.
  if (!ready) {
    close(out_pipe[0]);
    return Error(Errc::kIo, "fixture " + exe + " did not print READY within " +
                                std::to_string(timeout_s) + "s");
  }
  f->out_fd_ = out_pipe[0];
  return f;
}

RunningFixture::~RunningFixture() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

std::string RunningFixture::fact(const std::string& key) const {
  auto it = facts_.find(key);
  return it == facts_.end() ? std::string() : it->second;
}

uint64_t RunningFixture::fact_u64(const std::string& key) const {
  return std::strtoull(fact(key).c_str(), nullptr, 0);
}

std::map<std::string, std::string> RunningFixture::facts_with_prefix(const std::string& p) const {
  std::map<std::string, std::string> out;
  for (auto it = facts_.lower_bound(p); it != facts_.end() && it->first.rfind(p, 0) == 0; ++it)
    out[it->first.substr(p.size())] = it->second;
  return out;
}

std::vector<pid_t> RunningFixture::tracers() const {
  std::vector<pid_t> out;
  std::string task = "/proc/" + std::to_string(pid_) + "/task";
  DIR* d = opendir(task.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream st(task + "/" + e->d_name + "/status");
    std::string line;
    while (std::getline(st, line))
      if (line.rfind("TracerPid:", 0) == 0) {
        pid_t t = std::atoi(line.c_str() + 10);
        if (t != 0) out.push_back(t);
      }
  }
  closedir(d);
  return out;
}

bool RunningFixture::running_untraced() const {
  std::ifstream st("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  bool alive = false;
  while (std::getline(st, line)) {
    if (line.rfind("State:", 0) == 0) {
      // R running, S sleeping, D disk sleep are fine; t (traced) / T (stopped) / Z are not.
      auto s = line.find_first_not_of(" \t", 6);
      char c = s == std::string::npos ? '?' : line[s];
      alive = c == 'R' || c == 'S' || c == 'D';
    }
  }
  return alive && tracers().empty();
}

Result<std::string> gcore(pid_t pid, const std::string& out_prefix) {
  auto r = run_env({"gcore", "-o", out_prefix, std::to_string(pid)}, {}, 300);
  std::string path = out_prefix + "." + std::to_string(pid);
  if (r.exit_code != 0 || !fs::exists(path))
    return Error(Errc::kIo, "gcore failed (exit " + std::to_string(r.exit_code) + "): " + r.err);
  return path;
}

std::string scratch_dir(const std::string& name) {
  fs::path p = fs::path(GOREF_FIXTURE_CACHE) / "scratch" / (name + "-" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

CommandResult run_command(const std::vector<std::string>& argv, int timeout_s) {
  return run_env(argv, {}, timeout_s);
}

pid_t spawn_command(const std::vector<std::string>& argv, const std::string& out_path,
                    const std::string& err_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

}  // namespace goref::testing
