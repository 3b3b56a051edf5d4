#include "goref/profile/pprof.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

namespace goref::profile {

Result<std::vector<std::byte>> gzip(std::span<const std::byte> in) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer, which pprof expects.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return Error(Errc::kInternal, "gzip: deflateInit2 failed");
  std::vector<std::byte> out(deflateBound(&z, in.size()) + 64);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return Error(Errc::kInternal, "gzip: deflate did not finish");
  return out;
}

Result<std::vector<std::byte>> gunzip(std::span<const std::byte> in, uint64_t max_out) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK)  // + 32: gzip or zlib header, detected
    return Error(Errc::kInternal, "gunzip: inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::vector<std::byte> out;
  std::byte chunk[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      std::string msg = z.msg ? z.msg : "corrupt or truncated data";
      inflateEnd(&z);
      return Error(Errc::kBadFormat, "gunzip: " + msg);
    }
    size_t n = sizeof chunk - z.avail_out;
    if (out.size() + n > max_out) {
      inflateEnd(&z);
      return Error(Errc::kBadFormat, "gunzip: more than " + std::to_string(max_out) +
                                         " bytes uncompressed; not a profile goref reads");
    }
    out.insert(out.end(), chunk, chunk + n);
    if (rc == Z_OK && n == 0 && z.avail_in == 0) {
      inflateEnd(&z);
      return Error(Errc::kBadFormat, "gunzip: truncated stream");
    }
  }
  inflateEnd(&z);
  return out;
}

Result<Profile> parse_profile(std::span<const std::byte> bytes) {
  std::vector<std::byte> inflated;
  if (bytes.size() >= 2 && bytes[0] == std::byte{0x1f} && bytes[1] == std::byte{0x8b}) {
    GOREF_TRY(inflated, gunzip(bytes, kMaxProfileBytes));
    bytes = inflated;
  }
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return Error(Errc::kBadFormat, "profile larger than 2 GiB");
  Profile p;
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Error(Errc::kBadFormat, "not a pprof profile (protobuf does not parse)");
  if (p.string_table_size() == 0 || !p.string_table(0).empty())
    return Error(Errc::kBadFormat, "not a pprof profile (string table must start with \"\")");
  return p;
}

Result<Profile> read_profile_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error(errno == ENOENT ? Errc::kNotFound : Errc::kIo, path + ": cannot open");
  std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto p = parse_profile(std::as_bytes(std::span<const char>(raw)));
  if (!p.ok()) return std::move(p).error().context(path);
  return p;
}

Result<void> write_profile_file(const Profile& p, const std::string& path) {
  std::string raw;
  if (!p.SerializeToString(&raw)) return Error(Errc::kInternal, "profile does not serialize");
  GOREF_TRY(auto gz, gzip(std::as_bytes(std::span<const char>(raw))));
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Error(Errc::kIo, tmp + ": " + std::strerror(errno));
    f.write(reinterpret_cast<const char*>(gz.data()), static_cast<std::streamsize>(gz.size()));
    if (!f.flush()) {
      std::remove(tmp.c_str());
      return Error(Errc::kIo, tmp + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    std::remove(tmp.c_str());
    return Error(Errc::kIo, path + ": " + std::strerror(e));
  }
  return {};
}

}  // namespace goref::profile
