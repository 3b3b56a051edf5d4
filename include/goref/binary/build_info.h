// BuildInfo: what the Go linker records about how a program was built (.go.buildinfo): the
// toolchain version with its non-default GOEXPERIMENTs, and the module info the go command
// embeds (main module, build settings such as -buildmode, CGO_ENABLED, GOARCH). Only the Go 1.18+
// "inline strings" format is decoded; goref supports Go 1.21 and later.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "goref/base/bytes.h"
#include "goref/base/result.h"

namespace goref::binary {

class ElfFile;

struct BuildInfo {
  std::string version;                   // "go1.26.8" (without the experiment suffix)
  int major = 0, minor = 0, patch = 0;   // 1, 26, 8 (0 when not numeric, e.g. devel builds)
  std::vector<std::string> experiments;  // from the " X:" / "-X:" suffix, e.g. {"nogreenteagc"}
  std::string raw_version;               // the full string as in the binary
  std::string path, main_module;         // modinfo "path" and "mod" lines
  // modinfo "build" lines: -buildmode, -compiler, CGO_ENABLED, GOARCH, GOEXPERIMENT, -ldflags, ...
  std::map<std::string, std::string> settings;
  std::string modinfo;  // without the 16-byte sentinels

  // True if the toolchain is at least go<major>.<minor>.
  [[nodiscard]] bool at_least(int maj, int min) const {
    return major > maj || (major == maj && minor >= min);
  }
};

// The 32-byte header starts with this magic, at a 16-byte aligned address.
inline constexpr std::string_view kBuildInfoMagic{"\xff Go buildinf:", 14};

// Parses the bytes of a .go.buildinfo section (starting at the magic). kBadFormat for a wrong
// magic or truncated strings, kUnsupported for the pre-1.18 pointer format.
[[nodiscard]] Result<BuildInfo> parse_build_info(Bytes section);

// Splits a Go version string into version, major/minor/patch and experiments:
// "go1.26.10-X:nogreenteagc,mapsplitgroup", "go1.25.12 X:greenteagc", "devel go1.27-abc ...".
void parse_go_version(const std::string& raw, BuildInfo& out);

// Finds and parses the build info of an executable: the .go.buildinfo section, or, when the
// section table is missing, a 16-byte aligned magic in a writable PT_LOAD segment.
// Errc::kNotGo "x is not a Go program (no Go build info)"; kUnsupported for pre-1.18 binaries
// (naming the version when it can be read).
[[nodiscard]] Result<BuildInfo> read_build_info(const ElfFile& elf);

}  // namespace goref::binary
