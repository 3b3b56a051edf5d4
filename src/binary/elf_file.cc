#include "goref/binary/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "goref/base/addr.h"

namespace goref::binary {

struct ElfFile::ElfHandle {
  Elf* elf = nullptr;
  ~ElfHandle() {
    if (elf) elf_end(elf);
  }
};

namespace {

// Debug sections of Go binaries inflate by ~3-10x; zlib cannot exceed ~1032x. A declared size
// beyond either bound is corrupt, and never allocated.
constexpr uint64_t kMaxInflated = uint64_t{1} << 31;
constexpr uint64_t kMaxInflateRatio = 1100;

Result<std::vector<std::byte>> inflate_zlib(Bytes in, uint64_t out_size, const std::string& what) {
  if (out_size > kMaxInflated || out_size > (in.size() + 64) * kMaxInflateRatio)
    return Error(Errc::kBadFormat,
                 what + ": implausible uncompressed size " + std::to_string(out_size));
  std::vector<std::byte> out(out_size);
  uLongf dest_len = out_size;
  int rc = uncompress(reinterpret_cast<Bytef*>(out.data()), &dest_len,
                      reinterpret_cast<const Bytef*>(in.data()), in.size());
  if (rc != Z_OK || dest_len != out_size)
    return Error(Errc::kBadFormat, what + ": zlib inflate failed (" + std::to_string(rc) + ")");
  return out;
}

std::string hex_string(Bytes b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (std::byte c : b) {
    s.push_back(digits[static_cast<uint8_t>(c) >> 4]);
    s.push_back(digits[static_cast<uint8_t>(c) & 15]);
  }
  return s;
}

uint32_t relative_reloc_type(target::Arch a) {
  return a == target::Arch::kArm64 ? R_AARCH64_RELATIVE : R_X86_64_RELATIVE;
}

}  // namespace

ElfFile::~ElfFile() {
  elf_.reset();
  if (fd_ >= 0) close(fd_);
}

Result<std::unique_ptr<ElfFile>> ElfFile::open(const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) return Error(Errc::kInternal, "libelf: version mismatch");
  std::unique_ptr<ElfFile> f(new ElfFile);
  f->path_ = path;
  f->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f->fd_ < 0) {
    int e = errno;
    Errc c = e == ENOENT ? Errc::kNotFound : e == EACCES ? Errc::kPermission : Errc::kIo;
    return Error(c, path + ": " + std::strerror(e));
  }
  f->elf_ = std::make_unique<ElfHandle>();
  f->elf_->elf = elf_begin(f->fd_, ELF_C_READ_MMAP, nullptr);
  if (!f->elf_->elf || elf_kind(f->elf_->elf) != ELF_K_ELF)
    return Error(Errc::kBadFormat, path + " is not an ELF file");
  GOREF_CHECK(f->load_headers().context(path));
  return f;
}

Result<void> ElfFile::load_headers() {
  Elf* e = elf_->elf;
  size_t raw_size = 0;
  char* raw = elf_rawfile(e, &raw_size);
  if (!raw) return Error(Errc::kBadFormat, "cannot map the file image");
  image_ = Bytes(reinterpret_cast<const std::byte*>(raw), raw_size);

  const char* ident = elf_getident(e, nullptr);
  if (!ident) return Error(Errc::kBadFormat, "no ELF identification");
  if (ident[EI_CLASS] != ELFCLASS64) return Error(Errc::kUnsupported, "not a 64-bit ELF file");
  if (ident[EI_DATA] != ELFDATA2LSB) return Error(Errc::kUnsupported, "not a little-endian ELF");

  GElf_Ehdr eh;
  if (!gelf_getehdr(e, &eh)) return Error(Errc::kBadFormat, "bad ELF header");
  switch (eh.e_machine) {
    case EM_X86_64:
      arch_ = target::Arch::kAmd64;
      break;
    case EM_AARCH64:
      arch_ = target::Arch::kArm64;
      break;
    default:
      return Error(Errc::kUnsupported,
                   "unsupported machine " + std::to_string(eh.e_machine) + " (amd64, arm64 only)");
  }
  is_pie_ = eh.e_type == ET_DYN;
  is_core_ = eh.e_type == ET_CORE;
  entry_ = eh.e_entry;

  size_t phnum = 0;
  if (elf_getphdrnum(e, &phnum) != 0) phnum = 0;
  std::vector<std::pair<uint64_t, uint64_t>> note_segments;  // (offset, size)
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, static_cast<int>(i), &ph)) continue;
    bool in_file = ph.p_offset <= raw_size && ph.p_filesz <= raw_size - ph.p_offset;
    switch (ph.p_type) {
      case PT_LOAD: {
        Segment s;
        s.vaddr = ph.p_vaddr;
        s.memsz = ph.p_memsz;
        s.offset = ph.p_offset;
        // A header claiming bytes past the end of the file (a truncated file) keeps only what
        // the file has.
        s.filesz =
            ph.p_offset <= raw_size ? std::min<uint64_t>(ph.p_filesz, raw_size - ph.p_offset) : 0;
        s.read = ph.p_flags & PF_R;
        s.write = ph.p_flags & PF_W;
        s.exec = ph.p_flags & PF_X;
        loads_.push_back(s);
        break;
      }
      case PT_INTERP:
        has_interp_ = true;
        break;
      case PT_DYNAMIC:
        dynamic_.emplace_back(ph.p_vaddr, ph.p_filesz);
        break;
      case PT_NOTE:
        if (in_file) note_segments.emplace_back(ph.p_offset, ph.p_filesz);
        break;
      default:
        break;
    }
  }

  size_t shstrndx = 0;
  if (elf_getshdrstrndx(e, &shstrndx) != 0) shstrndx = 0;
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    Section s;
    const char* name = shstrndx ? elf_strptr(e, shstrndx, sh.sh_name) : nullptr;
    s.name = name ? name : "";
    s.addr = sh.sh_addr;
    s.offset = sh.sh_offset;
    s.size = sh.sh_size;
    s.type = sh.sh_type;
    s.flags = sh.sh_flags;
    if (sh.sh_type == SHT_SYMTAB && sh.sh_entsize && sh.sh_size / sh.sh_entsize > 1)
      has_symtab_ = true;
    sections_.push_back(std::move(s));
  }

  // Notes: from SHT_NOTE sections, or PT_NOTE segments when there is no section table.
  std::vector<Bytes> note_blobs;
  bool have_note_sections = false;
  for (const auto& s : sections_) {
    if (s.type != SHT_NOTE) continue;
    have_note_sections = true;
    if (s.offset <= raw_size && s.size <= raw_size - s.offset)
      note_blobs.push_back(image_.subspan(s.offset, s.size));
  }
  if (!have_note_sections)
    for (auto [off, size] : note_segments) note_blobs.push_back(image_.subspan(off, size));
  for (Bytes b : note_blobs) {
    ByteCursor c(b);
    while (c.remaining() >= 12) {
      auto namesz = c.get<uint32_t>();
      auto descsz = c.get<uint32_t>();
      auto type = c.get<uint32_t>();
      std::string_view name = c.str(namesz);
      c.skip(std::min<uint64_t>((4 - namesz % 4) % 4, c.remaining()));
      std::string_view desc = c.str(descsz);
      if (!c.ok()) break;
      c.skip(std::min<uint64_t>((4 - descsz % 4) % 4, c.remaining()));
      if (name == std::string_view("GNU\0", 4) && type == NT_GNU_BUILD_ID && !build_id_)
        build_id_ = hex_string(as_bytes(desc));
      // The Go linker's note: name "Go", type 4 (ELF_NOTE_GOBUILDID_TAG).
      if (name == std::string_view("Go\0\0", 4) && type == 4 && !go_build_id_)
        go_build_id_ = std::string(desc);
    }
  }
  return {};
}

const Section* ElfFile::section(std::string_view name) const {
  for (const auto& s : sections_)
    if (s.name == name) return &s;
  return nullptr;
}

Result<Bytes> ElfFile::section_data(std::string_view name) const {
  const Section* s = section(name);
  if (!s) return Error(Errc::kNotFound, path_ + ": no section " + std::string(name));
  return section_data(*s);
}

Result<Bytes> ElfFile::section_data(const Section& s) const {
  if (s.type == SHT_NOBITS) return Bytes{};
  if (s.offset > image_.size() || s.size > image_.size() - s.offset)
    return Error(Errc::kBadFormat, path_ + ": section " + s.name + " lies outside the file");
  Bytes raw = image_.subspan(s.offset, s.size);
  bool gnu_z = s.name.starts_with(".zdebug");
  if (!(s.flags & SHF_COMPRESSED) && !gnu_z) return raw;

  std::lock_guard lock(mu_);
  if (auto it = inflated_.find(s.name); it != inflated_.end()) return Bytes(it->second);
  std::string what = path_ + ": section " + s.name;
  std::vector<std::byte> out;
  if (s.flags & SHF_COMPRESSED) {
    auto ch = load<Elf64_Chdr>(raw, 0);
    if (!ch) return Error(Errc::kBadFormat, what + ": truncated compression header");
    if (ch->ch_type != ELFCOMPRESS_ZLIB)
      return Error(Errc::kUnsupported,
                   what + ": compression type " + std::to_string(ch->ch_type) + " (zlib only)");
    GOREF_TRY(out, inflate_zlib(raw.subspan(sizeof(Elf64_Chdr)), ch->ch_size, what));
  } else {
    // GNU style: "ZLIB" and a big-endian 64-bit size.
    if (raw.size() < 12 || std::memcmp(raw.data(), "ZLIB", 4) != 0) return raw;
    uint64_t size = 0;
    for (int i = 0; i < 8; ++i) size = (size << 8) | static_cast<uint8_t>(raw[4 + i]);
    GOREF_TRY(out, inflate_zlib(raw.subspan(12), size, what));
  }
  auto [it, _] = inflated_.emplace(s.name, std::move(out));
  return Bytes(it->second);
}

bool ElfFile::has_dwarf() const {
  return section(".debug_info") != nullptr || section(".zdebug_info") != nullptr;
}

std::optional<std::string> ElfFile::build_id() const {
  return build_id_;
}
std::optional<std::string> ElfFile::go_build_id() const {
  return go_build_id_;
}

void ElfFile::index_symbols() const {
  Elf* e = elf_->elf;
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    size_t n = std::min<size_t>(sh.sh_size / sh.sh_entsize, data->d_size / sizeof(Elf64_Sym));
    for (size_t i = 1; i < n; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
      const char* name = elf_strptr(e, sh.sh_link, sym.st_name);
      if (!name || !*name) continue;
      int type = GELF_ST_TYPE(sym.st_info);
      if (type == STT_SECTION || type == STT_FILE) continue;
      bool local = GELF_ST_BIND(sym.st_info) == STB_LOCAL;
      auto [it, inserted] = symbols_.try_emplace(name);
      if (!inserted && (local || !it->second.local)) continue;  // keep a GLOBAL over a LOCAL
      it->second = Symbol{name, sym.st_value, sym.st_size, type, local};
    }
  }
}

std::optional<Symbol> ElfFile::symbol(std::string_view name) const {
  if (!has_symtab_) return std::nullopt;
  std::call_once(symbols_once_, [this] { index_symbols(); });
  auto it = symbols_.find(std::string(name));
  if (it == symbols_.end()) return std::nullopt;
  return it->second;
}

Result<size_t> ElfFile::read_vaddr(uint64_t vaddr, std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size()) {
    uint64_t a = vaddr + done;
    const Segment* seg = nullptr;
    for (const auto& s : loads_)
      if (a >= s.vaddr && a - s.vaddr < s.filesz) {
        seg = &s;
        break;
      }
    if (!seg) break;
    uint64_t off = seg->offset + (a - seg->vaddr);
    uint64_t n = std::min<uint64_t>(out.size() - done, seg->filesz - (a - seg->vaddr));
    if (off > image_.size() || n > image_.size() - off) break;
    std::memcpy(out.data() + done, image_.data() + off, n);
    done += n;
  }
  if (done == 0 && !out.empty())
    return Error(Errc::kUnmapped,
                 path_ + ": " + to_hex(vaddr) + " is not in a file-backed segment");
  return done;
}

void ElfFile::index_relocations() const {
  if (!is_pie_) return;
  // The dynamic relocation table: DT_RELA/DT_RELASZ from PT_DYNAMIC, else allocated SHT_RELA
  // sections (the Go linker names it .rela, GNU ld .rela.dyn).
  std::vector<Bytes> tables;
  std::vector<std::byte> dyn_rela;
  for (auto [dvaddr, dsize] : dynamic_) {
    std::vector<std::byte> dyn(std::min<uint64_t>(dsize, 1 << 20));
    auto n = read_vaddr(dvaddr, dyn);
    if (!n.ok()) continue;
    uint64_t rela = 0, relasz = 0;
    for (size_t off = 0; off + sizeof(Elf64_Dyn) <= *n; off += sizeof(Elf64_Dyn)) {
      auto d = load<Elf64_Dyn>(Bytes(dyn), off);
      if (!d || d->d_tag == DT_NULL) break;
      if (d->d_tag == DT_RELA) rela = d->d_un.d_ptr;
      if (d->d_tag == DT_RELASZ) relasz = d->d_un.d_val;
    }
    if (rela && relasz && relasz <= image_.size()) {
      dyn_rela.resize(relasz);
      auto got = read_vaddr(rela, dyn_rela);
      if (got.ok()) {
        dyn_rela.resize(*got);
        tables.push_back(Bytes(dyn_rela));
      }
    }
    break;  // one dynamic segment per executable
  }
  if (tables.empty())
    for (const auto& s : sections_)
      if (s.type == SHT_RELA && (s.flags & SHF_ALLOC) && s.offset <= image_.size() &&
          s.size <= image_.size() - s.offset)
        tables.push_back(image_.subspan(s.offset, s.size));
  uint32_t want = relative_reloc_type(arch_);
  for (Bytes t : tables)
    for (size_t off = 0; off + sizeof(Elf64_Rela) <= t.size(); off += sizeof(Elf64_Rela)) {
      auto r = load<Elf64_Rela>(t, off);
      if (r && ELF64_R_TYPE(r->r_info) == want)
        relocs_.emplace_back(r->r_offset, static_cast<uint64_t>(r->r_addend));
    }
  std::sort(relocs_.begin(), relocs_.end());
}

Result<uint64_t> ElfFile::read_pointer(uint64_t vaddr) const {
  if (is_pie_) {
    std::call_once(relocs_once_, [this] { index_relocations(); });
    auto it =
        std::lower_bound(relocs_.begin(), relocs_.end(), std::pair<uint64_t, uint64_t>{vaddr, 0});
    if (it != relocs_.end() && it->first == vaddr) return it->second;
  }
  std::byte buf[8];
  GOREF_TRY(size_t n, read_vaddr(vaddr, buf));
  if (n < sizeof buf)
    return Error(Errc::kShortRead, path_ + ": pointer at " + to_hex(vaddr) + ": short read");
  uint64_t v;
  std::memcpy(&v, buf, sizeof v);
  return v;
}

std::vector<uint64_t> ElfFile::relative_relocations_to(uint64_t value) const {
  std::vector<uint64_t> out;
  if (!is_pie_) return out;
  std::call_once(relocs_once_, [this] { index_relocations(); });
  for (auto [where, addend] : relocs_)
    if (addend == value) out.push_back(where);
  return out;
}

std::optional<uint64_t> ElfFile::vaddr_at_offset(uint64_t off) const {
  for (const auto& s : loads_)
    if (off >= s.offset && off - s.offset < s.filesz) return s.vaddr + (off - s.offset);
  return std::nullopt;
}

}  // namespace goref::binary
