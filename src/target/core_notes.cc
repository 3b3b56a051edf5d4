#include "goref/target/core_notes.h"

namespace goref::target::notes {
namespace {

constexpr uint64_t align4(uint64_t n) {
  return (n + 3) & ~uint64_t{3};
}

// Byte offsets in the 64-bit Linux layouts of struct elf_prstatus and struct elf_prpsinfo
// (include/linux/elfcore.h). They are the same on amd64 and arm64: only pr_reg's size differs.
constexpr uint64_t kPrstatusPid = 32;
constexpr uint64_t kPrstatusReg = 112;
constexpr uint64_t kPrpsinfoPid = 24;

}  // namespace

NoteList split_notes(Bytes segment) {
  NoteList out;
  uint64_t off = 0;
  while (off < segment.size()) {
    auto namesz = load<uint32_t>(segment, off);
    auto descsz = load<uint32_t>(segment, off + 4);
    auto type = load<uint32_t>(segment, off + 8);
    if (!namesz || !descsz || !type) {
      out.truncated = true;
      break;
    }
    uint64_t name_off = off + 12;
    uint64_t desc_off = name_off + align4(*namesz);
    uint64_t next = desc_off + align4(*descsz);
    // The last note's descriptor padding may be missing; the descriptor itself may not.
    if (desc_off > segment.size() || *descsz > segment.size() - desc_off) {
      out.truncated = true;
      break;
    }
    std::string_view name(reinterpret_cast<const char*>(segment.data()) + name_off, *namesz);
    if (!name.empty() && name.back() == '\0') name.remove_suffix(1);
    out.notes.push_back(Note{name, *type, segment.subspan(desc_off, *descsz)});
    off = next;
  }
  return out;
}

Result<FileNote> parse_file_note(Bytes desc) {
  ByteCursor c(desc);
  uint64_t count = c.get<uint64_t>();
  uint64_t page_size = c.get<uint64_t>();
  if (!c.ok()) return Error(Errc::kBadFormat, "NT_FILE: header is truncated");
  if (page_size == 0 || (page_size & (page_size - 1)) != 0)
    return Error(Errc::kBadFormat,
                 "NT_FILE: page size " + std::to_string(page_size) + " is not a power of two");
  // Each entry takes 24 bytes of triple plus at least one byte of path: bound the count by that
  // before reserving anything.
  if (count > c.remaining() / 25)
    return Error(Errc::kBadFormat, "NT_FILE: " + std::to_string(count) + " entries do not fit in " +
                                       std::to_string(desc.size()) + " bytes");
  FileNote out;
  out.page_size = page_size;
  out.entries.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t start = c.get<uint64_t>();
    uint64_t end = c.get<uint64_t>();
    uint64_t pgoff = c.get<uint64_t>();
    if (end < start)
      return Error(Errc::kBadFormat, "NT_FILE: entry " + std::to_string(i) + " ends (" +
                                         to_hex(end) + ") before it starts (" + to_hex(start) +
                                         ")");
    if (pgoff > UINT64_MAX / page_size)
      return Error(Errc::kBadFormat,
                   "NT_FILE: entry " + std::to_string(i) + ": file offset overflows");
    out.entries.push_back(FileEntry{{Addr(start), Addr(end)}, pgoff * page_size, {}});
  }
  uint64_t off = c.offset();
  for (uint64_t i = 0; i < count; ++i) {
    auto s = read_cstr(desc, off, desc.size());
    if (!s)
      return Error(Errc::kBadFormat, "NT_FILE: path " + std::to_string(i) + " of " +
                                         std::to_string(count) + " is missing or unterminated");
    out.entries[i].path.assign(*s);
    off += s->size() + 1;
  }
  return out;
}

Result<PrStatus> parse_prstatus(Bytes desc, size_t gregset_size) {
  auto pid = load<int32_t>(desc, kPrstatusPid);
  if (!pid || desc.size() < kPrstatusReg || desc.size() - kPrstatusReg < gregset_size)
    return Error(Errc::kBadFormat, "NT_PRSTATUS: " + std::to_string(desc.size()) +
                                       " bytes is too small for the register set");
  return PrStatus{Tid(*pid), desc.subspan(kPrstatusReg, gregset_size)};
}

std::optional<Pid> parse_prpsinfo_pid(Bytes desc) {
  auto pid = load<int32_t>(desc, kPrpsinfoPid);
  if (!pid) return std::nullopt;
  return Pid(*pid);
}

Auxv parse_auxv(Bytes desc) {
  Auxv out;
  for (uint64_t off = 0; off + 16 <= desc.size(); off += 16) {
    uint64_t key = *load<uint64_t>(desc, off);
    if (key == kAtNull) break;
    out.emplace_back(key, *load<uint64_t>(desc, off + 8));
  }
  return out;
}

std::optional<uint64_t> auxv_lookup(const Auxv& auxv, uint64_t key) {
  for (const auto& [k, v] : auxv)
    if (k == key) return v;
  return std::nullopt;
}

}  // namespace goref::target::notes
