#include "goref/target/core_target.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "goref/base/log.h"
#include "goref/target/core_regs.h"

namespace goref::target {

// A PT_LOAD of the core. avail is how many of its p_filesz bytes the core file really holds (less
// when the file is truncated).
struct CoreTarget::Segment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t offset = 0;
  uint64_t avail = 0;
  uint32_t flags = 0;
};

// The headers of an ELF file (the core or the executable).
struct CoreTarget::ElfFile {
  std::string path;
  uint64_t size = 0;
  GElf_Ehdr ehdr{};
  std::vector<GElf_Phdr> phdrs;
};

namespace {

// Far more than any real core needs (a few KiB per thread), small enough to allocate.
constexpr uint64_t kMaxNoteBytes = uint64_t{256} << 20;
constexpr size_t kMaxPhdrs = 1 << 20;

using Range = std::pair<uint64_t, uint64_t>;  // [first, second)

Error errno_error(int err, const std::string& what) {
  Errc c = err == ENOENT                   ? Errc::kNotFound
           : err == EACCES || err == EPERM ? Errc::kPermission
                                           : Errc::kIo;
  return Error(c, what + ": " + std::strerror(err));
}

// Opens path read-only and returns its size.
Result<uint64_t> open_file(const std::string& path, const std::string& what, int* fd) {
  int f = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f < 0) return errno_error(errno, what + " " + path);
  *fd = f;
  struct stat st {};
  if (fstat(f, &st) != 0) return errno_error(errno, what + " " + path);
  if (!S_ISREG(st.st_mode)) return Error(Errc::kIo, what + " " + path + " is not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

// Reads up to n bytes at off; fewer only at end of file.
Result<size_t> pread_full(int fd, std::byte* buf, size_t n, uint64_t off) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, buf + done, n - done, static_cast<off_t>(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno_error(errno, "read at file offset " + to_hex(off + done));
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

std::string elf_type_phrase(uint16_t type) {
  switch (type) {
    case ET_EXEC:
      return "an ELF executable";
    case ET_DYN:
      return "an ELF shared object or PIE executable";
    case ET_REL:
      return "an ELF relocatable object";
    case ET_CORE:
      return "an ELF core file";
    default:
      return "an ELF file of type " + std::to_string(type);
  }
}

Result<Arch> arch_of(const std::string& path, uint16_t machine) {
  switch (machine) {
    case EM_X86_64:
      return Arch::kAmd64;
    case EM_AARCH64:
      return Arch::kArm64;
    default:
      return Error(Errc::kUnsupported, path + ": ELF machine " + std::to_string(machine) +
                                           " is not supported (amd64 and arm64 are)");
  }
}

// [s, e) minus the sorted, disjoint ranges in covered.
std::vector<Range> subtract(uint64_t s, uint64_t e, const std::vector<Range>& covered) {
  std::vector<Range> out;
  auto it = std::upper_bound(covered.begin(), covered.end(), Range{s, UINT64_MAX});
  if (it != covered.begin() && std::prev(it)->second > s) --it;
  for (; it != covered.end() && it->first < e && s < e; ++it) {
    if (it->first > s) out.emplace_back(s, it->first);
    s = std::max(s, it->second);
  }
  if (s < e) out.emplace_back(s, e);
  return out;
}

std::string basename_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

CoreTarget::~CoreTarget() {
  if (core_fd_ >= 0) ::close(core_fd_);
  if (exe_fd_ >= 0) ::close(exe_fd_);
}

void CoreTarget::warn(std::string w) {
  log::get("target")->debug("core: {}", w);
  warnings_.push_back(std::move(w));
}

Result<std::unique_ptr<CoreTarget>> CoreTarget::open(const std::string& core_path,
                                                     const std::string& exe_path) {
  std::unique_ptr<CoreTarget> t(new CoreTarget());
  t->core_path_ = core_path;
  t->exe_path_ = exe_path;

  GOREF_TRY(uint64_t core_size, open_file(core_path, "core file", &t->core_fd_));
  GOREF_TRY(ElfFile core, read_elf_headers(t->core_fd_, core_path, core_size));
  if (core.ehdr.e_type != ET_CORE)
    return Error(Errc::kBadFormat,
                 core_path + " is " + elf_type_phrase(core.ehdr.e_type) + ", not a core file");
  GOREF_TRY(t->arch_, arch_of(core_path, core.ehdr.e_machine));

  std::vector<Segment> segments;
  for (const GElf_Phdr& ph : core.phdrs) {
    if (ph.p_type == PT_LOAD) {
      if (ph.p_memsz == 0) continue;
      if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr) {
        t->warn("segment " + to_hex(ph.p_vaddr) + " wraps the address space; ignored");
        continue;
      }
      Segment s{ph.p_vaddr, ph.p_memsz, ph.p_offset, std::min(ph.p_filesz, ph.p_memsz), ph.p_flags};
      uint64_t in_file = ph.p_offset < core_size ? core_size - ph.p_offset : 0;
      if (s.avail > in_file) {
        t->warn("segment " + to_hex(ph.p_vaddr) + " is truncated in the core: " +
                std::to_string(in_file) + " of " + std::to_string(s.avail) + " bytes");
        s.avail = in_file;
      }
      segments.push_back(s);
    }
  }

  // Notes: usually one PT_NOTE segment; each is parsed on its own, in file order, so a thread's
  // extra register notes (NT_ARM_TLS) follow its NT_PRSTATUS.
  bool notes_missing = false;
  for (const GElf_Phdr& ph : core.phdrs) {
    if (ph.p_type != PT_NOTE) continue;
    uint64_t in_file = ph.p_offset < core_size ? core_size - ph.p_offset : 0;
    uint64_t n = std::min({ph.p_filesz, in_file, kMaxNoteBytes});
    bool truncated = n < ph.p_filesz;
    if (truncated) {
      notes_missing = notes_missing || n == 0;
      t->warn("note segment at file offset " + to_hex(ph.p_offset) + " is truncated: " +
              std::to_string(n) + " of " + std::to_string(ph.p_filesz) + " bytes");
    }
    std::vector<std::byte> bytes(n);
    GOREF_TRY(size_t got, pread_full(t->core_fd_, bytes.data(), n, ph.p_offset)
                              .context(core_path + ": note segment"));
    bytes.resize(got);
    GOREF_CHECK(t->load_notes(core, bytes, truncated || got < n));
  }
  if (t->threads_.empty())
    return Error(Errc::kBadFormat,
                 core_path + ": the core has no NT_PRSTATUS note (no threads)" +
                     (notes_missing ? std::string("; its notes lie beyond the end of the file (") +
                                          std::to_string(core_size) + " bytes): it is truncated"
                                    : std::string()));
  t->pid_ = t->psinfo_pid_ ? *t->psinfo_pid_ : Pid(t->threads_.front().tid.value());

  GOREF_TRY(uint64_t exe_size, open_file(exe_path, "executable", &t->exe_fd_));
  GOREF_TRY(ElfFile exe, read_elf_headers(t->exe_fd_, exe_path, exe_size));
  if (exe.ehdr.e_type != ET_EXEC && exe.ehdr.e_type != ET_DYN)
    return Error(Errc::kBadFormat,
                 exe_path + " is " + elf_type_phrase(exe.ehdr.e_type) + ", not an executable");
  GOREF_TRY(Arch exe_arch, arch_of(exe_path, exe.ehdr.e_machine));
  if (exe_arch != t->arch_)
    return Error(Errc::kBadFormat, "executable " + exe_path + " is for " +
                                       std::string(arch_name(exe_arch)) + " but the core is for " +
                                       std::string(arch_name(t->arch_)));

  t->identify_executable_mappings();
  GOREF_CHECK(t->check_executable(exe));
  t->build_view(segments, exe);
  return t;
}

Result<CoreTarget::ElfFile> CoreTarget::read_elf_headers(int fd, const std::string& path,
                                                         uint64_t size) {
  // libelf reads headers on demand with ELF_C_READ (no mapping, no copy of the file), and checks
  // header offsets against the file size, so a truncated file fails cleanly here.
  static const bool elf_ok = elf_version(EV_CURRENT) != EV_NONE;
  if (!elf_ok) return Error(Errc::kInternal, "libelf: version mismatch");
  std::unique_ptr<Elf, decltype(&elf_end)> elf(elf_begin(fd, ELF_C_READ, nullptr), &elf_end);
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF)
    return Error(Errc::kBadFormat, path + " is not an ELF file");
  if (gelf_getclass(elf.get()) != ELFCLASS64)
    return Error(Errc::kUnsupported, path + " is a 32-bit ELF file; goref reads 64-bit ones");
  ElfFile f;
  f.path = path;
  f.size = size;
  if (gelf_getehdr(elf.get(), &f.ehdr) == nullptr)
    return Error(Errc::kBadFormat, path + ": ELF header: " + elf_errmsg(-1));
  if (f.ehdr.e_ident[EI_DATA] != ELFDATA2LSB)
    return Error(Errc::kUnsupported, path + " is a big-endian ELF file");
  size_t n = 0;
  if (elf_getphdrnum(elf.get(), &n) != 0)
    return Error(Errc::kBadFormat, path + ": program headers: " + elf_errmsg(-1));
  if (n > kMaxPhdrs)
    return Error(Errc::kBadFormat, path + ": " + std::to_string(n) + " program headers");
  f.phdrs.resize(n);
  for (size_t i = 0; i < n; ++i)
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &f.phdrs[i]) == nullptr)
      return Error(Errc::kBadFormat, path + ": program header " + std::to_string(i) + ": " +
                                         elf_errmsg(-1) + " (is the file truncated?)");
  return f;
}

Result<void> CoreTarget::load_notes(const ElfFile& core, Bytes bytes, bool truncated) {
  notes::NoteList list = notes::split_notes(bytes);
  if (list.truncated && !truncated)
    warn(core.path + ": the note segment ends inside a note; the rest is ignored");
  const size_t greg = gregset_size(arch_);
  for (const notes::Note& n : list.notes) {
    if (n.name == "CORE" && n.type == notes::kNtPrstatus) {
      auto st = notes::parse_prstatus(n.desc, greg);
      if (!st) {
        warn(core.path + ": " + st.error().message() + "; thread ignored");
        continue;
      }
      GOREF_TRY(Registers regs, registers_from_gregset(arch_, st->reg));
      bool dup = std::any_of(threads_.begin(), threads_.end(),
                             [&](const Thread& th) { return th.tid == st->tid; });
      if (dup) {
        warn(core.path + ": thread " + st->tid.str() + " appears twice; the first one is kept");
        continue;
      }
      threads_.push_back(Thread{st->tid, regs});
    } else if (n.name == "CORE" && n.type == notes::kNtPrpsinfo) {
      if (!psinfo_pid_) psinfo_pid_ = notes::parse_prpsinfo_pid(n.desc);
    } else if (n.name == "CORE" && n.type == notes::kNtAuxv) {
      if (auxv_.empty()) auxv_ = notes::parse_auxv(n.desc);
    } else if (n.name == "CORE" && n.type == notes::kNtFile) {
      auto f = notes::parse_file_note(n.desc);
      if (!f)
        warn(core.path + ": " + f.error().message() + "; file mappings unknown");
      else if (files_.entries.empty())
        files_ = std::move(f).value();
    } else if (n.name == "LINUX" && n.type == notes::kNtArmTls && arch_ == Arch::kArm64) {
      // tpidr_el0, written right after the NT_PRSTATUS of the thread it belongs to.
      auto tpidr = load<uint64_t>(n.desc, 0);
      if (tpidr && !threads_.empty()) threads_.back().regs.tls_base = *tpidr;
    }
  }
  return {};
}

void CoreTarget::identify_executable_mappings() {
  if (files_.entries.empty()) {
    warn("the core has no usable NT_FILE note: file-backed pages it omits are unavailable");
    return;
  }
  // The executable is the file mapping the program's entry point (AT_ENTRY): NT_FILE paths are
  // as the target saw them (its mount namespace), so they are not compared with exe_path.
  if (auto entry = notes::auxv_lookup(auxv_, notes::kAtEntry)) {
    for (const auto& e : files_.entries)
      if (e.range.contains(Addr(*entry))) target_exe_path_ = e.path;
    if (target_exe_path_.empty())
      warn("no NT_FILE mapping contains the entry point " + to_hex(*entry) +
           "; the executable's pages the core omits are unavailable");
    return;
  }
  std::string base = basename_of(exe_path_);
  for (const auto& e : files_.entries)
    if (basename_of(e.path) == base) {
      target_exe_path_ = e.path;
      break;
    }
  warn("the core has no AT_ENTRY; the executable's mappings were matched by file name (" +
       (target_exe_path_.empty() ? std::string("none found") : target_exe_path_) + ")");
}

Result<void> CoreTarget::check_executable(const ElfFile& exe) {
  auto entry = notes::auxv_lookup(auxv_, notes::kAtEntry);
  if (!entry || target_exe_path_.empty()) return {};
  // The file offset of the entry point, by the core (NT_FILE mapping containing AT_ENTRY) and by
  // the executable (the PT_LOAD containing e_entry), must agree, whatever the load bias (PIE).
  uint64_t core_off = 0;
  for (const auto& e : files_.entries)
    if (e.range.contains(Addr(*entry))) core_off = e.offset + (*entry - e.range.start.value());
  std::optional<uint64_t> exe_off;
  for (const GElf_Phdr& ph : exe.phdrs)
    if (ph.p_type == PT_LOAD && exe.ehdr.e_entry >= ph.p_vaddr &&
        exe.ehdr.e_entry - ph.p_vaddr < ph.p_filesz)
      exe_off = exe.ehdr.e_entry - ph.p_vaddr + ph.p_offset;
  // A PIE is loaded at a page-aligned bias; a fixed-address executable exactly where it says.
  uint64_t page = files_.page_size != 0 ? files_.page_size : 4096;
  bool bias_ok = exe.ehdr.e_type == ET_EXEC ? *entry == exe.ehdr.e_entry
                                            : ((*entry - exe.ehdr.e_entry) & (page - 1)) == 0;
  if (!exe_off || *exe_off != core_off || !bias_ok)
    warn("executable " + exe_path_ + " may not be the one the core was produced from: its entry " +
         "point " + to_hex(exe.ehdr.e_entry) + " (file offset " +
         (exe_off ? to_hex(*exe_off) : std::string("unknown")) + ") does not match the core's " +
         to_hex(*entry) + " (file offset " + to_hex(core_off) + " of " + target_exe_path_ + ")");
  return {};
}

void CoreTarget::build_view(const std::vector<Segment>& segments, const ElfFile& exe) {
  // Core bytes, then the executable's bytes where the core has none.
  std::vector<Segment> segs = segments;
  std::sort(segs.begin(), segs.end(),
            [](const Segment& a, const Segment& b) { return a.vaddr < b.vaddr; });
  std::vector<Range> seg_ranges;  // [vaddr, vaddr+memsz) of the segments kept
  std::vector<Range> core_ranges;
  for (const Segment& s : segs) {
    if (!seg_ranges.empty() && s.vaddr < seg_ranges.back().second) {
      warn("segment " + to_hex(s.vaddr) + " overlaps the previous one; ignored");
      continue;
    }
    seg_ranges.emplace_back(s.vaddr, s.vaddr + s.memsz);
    if (s.avail > 0) {
      pieces_.push_back(Piece{s.vaddr, s.vaddr + s.avail, Source::kCore, s.offset});
      core_ranges.emplace_back(s.vaddr, s.vaddr + s.avail);
    }
    Mapping m;
    m.range = {Addr(s.vaddr), Addr(s.vaddr + s.memsz)};
    m.read = (s.flags & PF_R) != 0;
    m.write = (s.flags & PF_W) != 0;
    m.exec = (s.flags & PF_X) != 0;
    for (const auto& e : files_.entries)
      if (e.range.contains(Addr(s.vaddr))) {
        m.path = e.path;
        m.offset = e.offset + (s.vaddr - e.range.start.value());
      }
    mappings_.push_back(std::move(m));
  }

  for (const auto& e : files_.entries) {
    bool is_exe = !target_exe_path_.empty() && e.path == target_exe_path_;
    uint64_t start = e.range.start.value();
    // File mappings the core lacks entirely still exist in the address space.
    for (auto [s, end] : subtract(start, e.range.end.value(), seg_ranges)) {
      Mapping m;
      m.range = {Addr(s), Addr(end)};
      m.offset = e.offset + (s - start);
      m.path = e.path;
      m.read = true;  // NT_FILE has no permissions; the executable's own headers do
      if (is_exe)
        for (const GElf_Phdr& ph : exe.phdrs)
          if (ph.p_type == PT_LOAD && m.offset >= ph.p_offset &&
              m.offset - ph.p_offset < ph.p_filesz) {
            m.read = (ph.p_flags & PF_R) != 0;
            m.write = (ph.p_flags & PF_W) != 0;
            m.exec = (ph.p_flags & PF_X) != 0;
          }
      mappings_.push_back(std::move(m));
    }
    // The executable's bytes stand in for what the core omits. The kernel and gcore leave a private
    // file mapping out (or keep only its first page) when it has no written pages, so the file
    // holds what memory held; the exception is a coredump_filter that drops written private
    // pages too (bit 0 clear), where the file gives the initial values — such a core is short of
    // all anonymous memory anyway and unfit for heap analysis.
    if (!is_exe || e.offset >= exe.size) continue;
    // Only the part of the mapping the file really has (a mapping may run past the file's end).
    uint64_t end = start + std::min(e.range.size(), exe.size - e.offset);
    for (auto [s, gap_end] : subtract(start, end, core_ranges))
      pieces_.push_back(Piece{s, gap_end, Source::kExecutable, e.offset + (s - start)});
  }
  std::sort(pieces_.begin(), pieces_.end(),
            [](const Piece& a, const Piece& b) { return a.start < b.start; });
  std::sort(mappings_.begin(), mappings_.end(),
            [](const Mapping& a, const Mapping& b) { return a.range.start < b.range.start; });
  // NT_FILE entries never overlap each other on a sane core; on a corrupt one, keep the first.
  std::vector<Piece> clean;
  for (const Piece& p : pieces_)
    if (clean.empty() || p.start >= clean.back().end) clean.push_back(p);
  pieces_ = std::move(clean);
  std::vector<Mapping> clean_maps;
  for (Mapping& m : mappings_)
    if (clean_maps.empty() || m.range.start >= clean_maps.back().range.end)
      clean_maps.push_back(std::move(m));
  mappings_ = std::move(clean_maps);
}

const CoreTarget::Piece* CoreTarget::find_piece(uint64_t addr) const {
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), addr,
                             [](uint64_t a, const Piece& p) { return a < p.start; });
  if (it == pieces_.begin()) return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

CoreTarget::Source CoreTarget::source_of(Addr addr) const {
  const Piece* p = find_piece(addr.value());
  return p ? p->source : Source::kAbsent;
}

Result<size_t> CoreTarget::read_some(Addr addr, std::span<std::byte> buf) {
  size_t done = 0;
  uint64_t a = addr.value();
  const Piece* p = find_piece(a);
  while (done < buf.size() && p != nullptr) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size() - done, p->end - a));
    int fd = p->source == Source::kCore ? core_fd_ : exe_fd_;
    auto got = pread_full(fd, buf.data() + done, n, p->file_offset + (a - p->start));
    if (!got) {
      if (done == 0)
        return std::move(got).error().context(
            "address " + addr.hex() +
            (p->source == Source::kCore ? " (core " + core_path_ + ")" : " (" + exe_path_ + ")"));
      break;
    }
    done += *got;
    a += *got;
    if (*got < n) break;  // the file shrank since it was opened
    // Pieces are sorted and disjoint: the read continues only into one that starts right here.
    const Piece* next = p + 1;
    p = (next != pieces_.data() + pieces_.size() && next->start == a) ? next : nullptr;
  }
  if (done == 0 && !buf.empty()) {
    const Mapping* m = find_mapping(addr);
    std::string why;
    if (m != nullptr)
      why = m->path.empty() ? " (its mapping is in the core without data)"
                            : " (it is mapped from " + m->path + ", which the core omits)";
    return Error(Errc::kUnmapped, "address " + addr.hex() + " is not in the core" + why);
  }
  return done;
}

std::vector<Tid> CoreTarget::threads() const {
  std::vector<Tid> out;
  out.reserve(threads_.size());
  for (const Thread& t : threads_) out.push_back(t.tid);
  return out;
}

Result<Registers> CoreTarget::registers(Tid tid) const {
  for (const Thread& t : threads_)
    if (t.tid == tid) return t.regs;
  return Error(Errc::kNotFound, "thread " + tid.str() + " is not in the core");
}

std::optional<uint64_t> CoreTarget::auxv(uint64_t type) const {
  return notes::auxv_lookup(auxv_, type);
}

}  // namespace goref::target
