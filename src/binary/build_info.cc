#include "goref/binary/build_info.h"

#include <elf.h>

#include <charconv>
#include <cstring>

#include "goref/base/addr.h"
#include "goref/binary/elf_file.h"

namespace goref::binary {
namespace {

constexpr size_t kHeaderSize = 32;
constexpr uint8_t kFlagBigEndian = 1;
constexpr uint8_t kFlagInlineStrings = 2;
// Version and modinfo strings are short (modinfo of large programs is tens of KiB); a longer
// length is corrupt.
constexpr uint64_t kMaxString = 1 << 24;

// A leading integer of s (advancing s past it), or nullopt.
std::optional<int> take_int(std::string_view& s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p == s.data()) return std::nullopt;
  s.remove_prefix(p - s.data());
  return v;
}

// Undoes strconv.Quote for the escapes Go emits in build settings (\" \\ \n \t \xNN); anything
// else is kept as written.
std::string unquote(std::string_view v) {
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') return std::string(v);
  v = v.substr(1, v.size() - 2);
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '\\' || i + 1 == v.size()) {
      out.push_back(v[i]);
      continue;
    }
    char c = v[++i];
    switch (c) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'x':
        if (i + 2 < v.size()) {
          unsigned x = 0;
          auto [p, ec] = std::from_chars(v.data() + i + 1, v.data() + i + 3, x, 16);
          if (ec == std::errc() && p == v.data() + i + 3) {
            out.push_back(static_cast<char>(x));
            i += 2;
            break;
          }
        }
        out += "\\x";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

void parse_modinfo(BuildInfo& bi) {
  std::string_view m = bi.modinfo;
  while (!m.empty()) {
    size_t nl = m.find('\n');
    std::string_view line = m.substr(0, nl);
    m = nl == std::string_view::npos ? std::string_view{} : m.substr(nl + 1);
    size_t tab = line.find('\t');
    if (tab == std::string_view::npos) continue;
    std::string_view kind = line.substr(0, tab), rest = line.substr(tab + 1);
    if (kind == "path") {
      bi.path = std::string(rest);
    } else if (kind == "mod") {
      bi.main_module = std::string(rest.substr(0, rest.find('\t')));
    } else if (kind == "build") {
      size_t eq = rest.find('=');
      if (eq == std::string_view::npos) continue;
      bi.settings[unquote(rest.substr(0, eq))] = unquote(rest.substr(eq + 1));
    }
  }
}

}  // namespace

void parse_go_version(const std::string& raw, BuildInfo& out) {
  out.raw_version = raw;
  out.experiments.clear();
  std::string v = raw;
  // The linker appends non-default experiments: " X:a,b" up to Go 1.25, "-X:a,b" from 1.26 when
  // the version has no '-' of its own (go.dev/issue/75953).
  size_t x = v.find(" X:");
  if (x == std::string::npos) x = v.find("-X:");
  if (x != std::string::npos) {
    std::string_view list = std::string_view(v).substr(x + 3);
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view e = list.substr(0, comma);
      if (!e.empty()) out.experiments.emplace_back(e);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    v.resize(x);
  }
  out.version = v;
  out.major = out.minor = out.patch = 0;
  // "go1.26.8", "go1.21rc2", "devel go1.27-abcdef Tue ...".
  size_t go = v.find("go1.");
  if (go == std::string::npos) return;
  std::string_view s = std::string_view(v).substr(go + 2);
  auto maj = take_int(s);
  if (!maj || s.empty() || s.front() != '.') return;
  s.remove_prefix(1);
  auto min = take_int(s);
  if (!min) return;
  out.major = *maj;
  out.minor = *min;
  if (!s.empty() && s.front() == '.') {
    s.remove_prefix(1);
    if (auto p = take_int(s)) out.patch = *p;
  }
}

Result<BuildInfo> parse_build_info(Bytes b) {
  if (b.size() < kHeaderSize || std::memcmp(b.data(), kBuildInfoMagic.data(), 14) != 0)
    return Error(Errc::kBadFormat, "build info: bad magic");
  auto ptr_size = static_cast<uint8_t>(b[14]);
  auto flags = static_cast<uint8_t>(b[15]);
  if (!(flags & kFlagInlineStrings))
    return Error(Errc::kUnsupported,
                 "build info in the pre-Go 1.18 format (goref supports Go 1.21 and later)");
  if (flags & kFlagBigEndian) return Error(Errc::kUnsupported, "build info: big-endian target");
  if (ptr_size != 8)
    return Error(Errc::kUnsupported, "build info: pointer size " + std::to_string(ptr_size));
  ByteCursor c(b, kHeaderSize);
  uint64_t vlen = c.uvarint();
  if (!c.ok() || vlen > kMaxString)
    return Error(Errc::kBadFormat, "build info: bad version length");
  std::string_view version = c.str(vlen);
  uint64_t mlen = c.uvarint();
  if (!c.ok() || mlen > kMaxString)
    return Error(Errc::kBadFormat, "build info: truncated version or modinfo length");
  std::string_view mod = c.str(mlen);
  if (!c.ok()) return Error(Errc::kBadFormat, "build info: truncated modinfo");
  if (version.empty()) return Error(Errc::kBadFormat, "build info: empty version string");

  BuildInfo bi;
  parse_go_version(std::string(version), bi);
  // The go command frames modinfo with 16-byte sentinels (cmd/go/internal/modload.ModInfoData).
  if (mod.size() >= 33 && mod[mod.size() - 17] == '\n') mod = mod.substr(16, mod.size() - 32);
  bi.modinfo = std::string(mod);
  parse_modinfo(bi);
  return bi;
}

namespace {

// The version of a pre-1.18 binary: header+16 holds a pointer to a Go string header.
std::string old_format_version(const ElfFile& elf, uint64_t header_vaddr) {
  auto sp = elf.read_pointer(header_vaddr + 16);
  if (!sp.ok()) return {};
  auto data = elf.read_pointer(*sp);
  auto len = elf.read_pointer(*sp + 8);
  if (!data.ok() || !len.ok() || *len == 0 || *len > 64) return {};
  std::string s(*len, '\0');
  auto n = elf.read_vaddr(*data, std::as_writable_bytes(std::span(s)));
  if (!n.ok() || *n != s.size()) return {};
  return s;
}

}  // namespace

Result<BuildInfo> read_build_info(const ElfFile& elf) {
  std::string not_go = elf.path() + " is not a Go program (no Go build info)";
  Bytes sec;
  uint64_t sec_vaddr = 0;
  if (const Section* s = elf.section(".go.buildinfo")) {
    GOREF_TRY(sec, elf.section_data(*s));
    sec_vaddr = s->addr;
  } else {
    // No section table (or a renamed section): the magic sits 16-byte aligned at the start of
    // the writable data.
    for (const auto& seg : elf.loads()) {
      if (!seg.write || seg.offset > elf.image().size()) continue;
      Bytes data =
          elf.image().subspan(seg.offset, std::min(seg.filesz, elf.image().size() - seg.offset));
      uint64_t first = (16 - seg.vaddr % 16) % 16;
      for (uint64_t off = first; off + kHeaderSize <= data.size(); off += 16)
        if (std::memcmp(data.data() + off, kBuildInfoMagic.data(), kBuildInfoMagic.size()) == 0) {
          sec = data.subspan(off);
          sec_vaddr = seg.vaddr + off;
          break;
        }
      if (!sec.empty()) break;
    }
    if (sec.empty()) return Error(Errc::kNotGo, not_go);
  }
  if (sec.size() < kBuildInfoMagic.size() ||
      std::memcmp(sec.data(), kBuildInfoMagic.data(), kBuildInfoMagic.size()) != 0)
    return Error(Errc::kNotGo, not_go);
  auto bi = parse_build_info(sec);
  if (!bi.ok() && bi.error().code() == Errc::kUnsupported && sec.size() > 15 &&
      !(static_cast<uint8_t>(sec[15]) & kFlagInlineStrings)) {
    std::string v = old_format_version(elf, sec_vaddr);
    return Error(Errc::kUnsupported, elf.path() + ": " +
                                         (v.empty() ? std::string("a Go version before 1.18") : v) +
                                         " is not supported (goref supports Go 1.21 and later)");
  }
  return std::move(bi).context(elf.path());
}

}  // namespace goref::binary
