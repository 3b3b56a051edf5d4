#include "goref/base/log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <map>
#include <mutex>
#include <string>

namespace goref::log {
namespace {

struct Registry {
  std::mutex mu;
  std::shared_ptr<spdlog::sinks::stderr_sink_mt> sink =
      std::make_shared<spdlog::sinks::stderr_sink_mt>();
  std::map<std::string, std::shared_ptr<spdlog::logger>, std::less<>> loggers;
  std::map<std::string, spdlog::level::level_enum, std::less<>> levels;
  spdlog::level::level_enum default_level = spdlog::level::warn;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::shared_ptr<spdlog::logger> get(std::string_view layer) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  if (auto it = r.loggers.find(layer); it != r.loggers.end()) return it->second;
  auto lg = std::make_shared<spdlog::logger>(std::string(layer), r.sink);
  lg->set_pattern("goref %n %l: %v");
  auto lv = r.levels.find(layer);
  lg->set_level(lv != r.levels.end() ? lv->second : r.default_level);
  r.loggers.emplace(std::string(layer), lg);
  return lg;
}

bool configure(std::string_view spec) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  while (!spec.empty()) {
    auto comma = spec.find(',');
    auto item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty()) continue;
    auto colon = item.find(':');
    std::string_view name = colon == std::string_view::npos ? "" : item.substr(0, colon);
    std::string level(colon == std::string_view::npos ? item : item.substr(colon + 1));
    auto lv = spdlog::level::from_str(level);
    if (lv == spdlog::level::off && level != "off") return false;
    if (name.empty()) {
      r.default_level = lv;
      for (auto& [n, lg] : r.loggers)
        if (!r.levels.count(n)) lg->set_level(lv);
    } else {
      r.levels[std::string(name)] = lv;
      if (auto it = r.loggers.find(name); it != r.loggers.end()) it->second->set_level(lv);
    }
  }
  return true;
}

}  // namespace goref::log
