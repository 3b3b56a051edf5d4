#include "goref/target/procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace goref::target {
namespace {

constexpr size_t kMaxProcFile = size_t{256} << 20;

Error errno_error(int err, const std::string& what) {
  Errc c = err == ENOENT || err == ESRCH   ? Errc::kNoSuchProcess
           : err == EACCES || err == EPERM ? Errc::kPermission
                                           : Errc::kIo;
  return Error(c, what + ": " + std::strerror(err));
}

}  // namespace

Result<std::string> read_proc_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(errno, "open " + path);
  std::string out;
  size_t used = 0;
  out.resize(64 << 10);
  for (;;) {
    if (used == out.size()) {
      if (out.size() >= kMaxProcFile) {
        ::close(fd);
        return Error(Errc::kIo, path + ": larger than " + std::to_string(kMaxProcFile) + " bytes");
      }
      out.resize(out.size() * 2);
    }
    ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return errno_error(err, "read " + path);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(used);
  return out;
}

Result<std::vector<Tid>> list_threads(Pid pid) {
  std::string path = "/proc/" + pid.str() + "/task";
  DIR* d = ::opendir(path.c_str());
  if (!d) return errno_error(errno, "open " + path);
  std::vector<Tid> out;
  bool leader = false;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long v = std::strtol(e->d_name, &end, 10);
    if (e->d_name[0] == '.' || *end != '\0' || v <= 0) continue;
    if (static_cast<pid_t>(v) == pid.value())
      leader = true;
    else
      out.emplace_back(static_cast<pid_t>(v));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  if (leader) out.insert(out.begin(), Tid(pid.value()));
  return out;
}

std::optional<char> thread_state(Pid pid, Tid tid) {
  auto text = read_proc_file("/proc/" + pid.str() + "/task/" + tid.str() + "/stat");
  if (!text) return std::nullopt;
  // "tid (comm) S ...": comm may contain spaces and parentheses, so look after the last ')'.
  size_t close = text->rfind(')');
  if (close == std::string::npos || close + 2 >= text->size()) return std::nullopt;
  return (*text)[close + 2];
}

std::optional<std::string> status_field(std::string_view status_text, std::string_view key) {
  while (!status_text.empty()) {
    size_t nl = status_text.find('\n');
    std::string_view line = status_text.substr(0, nl);
    status_text = nl == std::string_view::npos ? std::string_view() : status_text.substr(nl + 1);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') {
      line.remove_prefix(key.size() + 1);
      size_t first = line.find_first_not_of(" \t");
      return std::string(first == std::string_view::npos ? std::string_view() : line.substr(first));
    }
  }
  return std::nullopt;
}

Error ptrace_permission_error(Pid pid, std::string_view what, int err) {
  std::string msg =
      "cannot " + std::string(what) + " process " + pid.str() + ": " + std::strerror(err) + ".";
  if (auto status = read_proc_file("/proc/" + pid.str() + "/status")) {
    auto tracer = status_field(*status, "TracerPid");
    if (tracer && *tracer != "0") {
      msg += " The process is already traced by process " + *tracer;
      if (auto comm = read_proc_file("/proc/" + *tracer + "/comm")) {
        std::string name = *comm;
        while (!name.empty() && name.back() == '\n') name.pop_back();
        msg += " (" + name + ")";
      }
      msg += ", e.g. a debugger; only one tracer is allowed, so detach it first.";
      return Error(Errc::kPermission, std::move(msg));
    }
  }
  msg +=
      " Run goref as root, or as the target's user with CAP_SYS_PTRACE (in Kubernetes: `kubectl "
      "debug --profile=sysadmin`, or add SYS_PTRACE to the debug container's capabilities).";
  if (auto scope = read_proc_file("/proc/sys/kernel/yama/ptrace_scope")) {
    std::string v = *scope;
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    msg += " kernel.yama.ptrace_scope is " + v;
    if (v == "1")
      msg += " (only a parent may trace its descendants without CAP_SYS_PTRACE).";
    else if (v == "2")
      msg += " (only processes with CAP_SYS_PTRACE may trace).";
    else if (v == "3")
      msg += " (ptrace is disabled until reboot; nothing can attach).";
    else
      msg += ".";
  }
  return Error(Errc::kPermission, std::move(msg));
}

}  // namespace goref::target
