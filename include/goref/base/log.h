// Logging: one named spdlog logger per layer ("target", "binary", "runtime", ...), all writing to
// stderr. Levels are set with --log=target:debug,binary:info (or GOREF_LOG). Output that is the
// product (dumps, profiles, summaries) never goes through the logger.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string_view>

namespace goref::log {

// Returns the logger for a layer, creating it on first use.
std::shared_ptr<spdlog::logger> get(std::string_view layer);

// Applies a spec like "debug" or "target:debug,binary:trace". Returns false on a bad spec.
[[nodiscard]] bool configure(std::string_view spec);

}  // namespace goref::log
