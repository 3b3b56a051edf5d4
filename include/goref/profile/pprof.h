// Reading and writing pprof profiles (the protobuf format `go tool pprof` reads), gzip or not.
// Input is untrusted: decompression is bounded, and a malformed profile is an error, never a
// crash. A profile is written to a temporary file beside the target and renamed, so a crash never
// leaves half a profile under the requested name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "goref/base/result.h"
#include "profile.pb.h"

namespace goref::profile {

using perftools::profiles::Profile;

// The largest profile goref inflates (uncompressed): far beyond any real CPU or heap profile.
inline constexpr uint64_t kMaxProfileBytes = uint64_t{1} << 30;

[[nodiscard]] Result<std::vector<std::byte>> gzip(std::span<const std::byte> in);
// Inflates a gzip stream; an error (not an allocation) once the output would pass max_out.
[[nodiscard]] Result<std::vector<std::byte>> gunzip(std::span<const std::byte> in,
                                                    uint64_t max_out);

// Parses a profile, gzip-compressed (magic 1f 8b) or raw.
[[nodiscard]] Result<Profile> parse_profile(std::span<const std::byte> bytes);
[[nodiscard]] Result<Profile> read_profile_file(const std::string& path);
// Writes p gzip-compressed.
[[nodiscard]] Result<void> write_profile_file(const Profile& p, const std::string& path);

}  // namespace goref::profile
