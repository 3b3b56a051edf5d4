// Adds bound-check and nil-check pseudo-frames to a CPU profile: every leaf location of the
// executable's mapping whose address lies in a check site gets runtime.boundcheck or
// runtime.nilcheck as its innermost inline Line (on the source line of the frame it was inlined
// into), so `go tool pprof` charges the sample to the check. Everything else in the profile is
// kept as it was. A location that is also a caller frame somewhere is cloned first, so only its
// leaf uses change. Idempotent: a profile annotated twice is annotated once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "goref/annotate/check_index.h"
#include "goref/base/result.h"
#include "goref/profile/pprof.h"

namespace goref::binary {
class ElfFile;
class Pclntab;
}  // namespace goref::binary

namespace goref::annotate {

inline constexpr std::string_view kBoundCheckFunction = "runtime.boundcheck";
inline constexpr std::string_view kNilCheckFunction = "runtime.nilcheck";

// Samples charged to one check site's source line.
struct CheckLine {
  CheckKind kind = CheckKind::kBounds;
  std::string function;  // the innermost real frame at the site
  std::string file;
  int64_t line = 0;
  int64_t value = 0;
};

struct AnnotateResult {
  std::string value_type;  // the sample value counted, e.g. "samples/count"
  int64_t total = 0;       // over all samples
  int64_t bounds = 0, nil = 0;
  std::string mapping_file;  // the profile's mapping of the executable
  size_t locations_in_mapping = 0;
  size_t locations_edited = 0, locations_cloned = 0;
  // Locations whose outermost function name differs from the executable's function at that
  // address: a few mean a mismatched profile/binary pair in part; see annotate_profile.
  size_t locations_mismatched = 0;
  std::vector<CheckLine> lines;  // by value, descending
};

// Annotates p in place. Errors: kUsage when the profile has no mapping for the executable, its
// build ID differs from the executable's, or most of its functions are not where the executable
// has them (the profile was taken of another binary).
[[nodiscard]] Result<AnnotateResult> annotate_profile(profile::Profile& p,
                                                      const binary::ElfFile& elf,
                                                      const binary::Pclntab& tab,
                                                      const CheckIndex& checks);

}  // namespace goref::annotate
