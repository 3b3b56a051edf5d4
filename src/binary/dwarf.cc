// Opening a Go executable's DWARF and indexing its package-level names. Go puts every type,
// package-level variable and constant at the top level of its package's unit, so the index only
// visits those DIEs (not the functions' bodies), and stores offsets, not decoded DIEs.
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "dwarf_impl.h"
#include "goref/base/log.h"
#include "goref/binary/dwarf.h"

namespace goref::binary {
namespace {

// Upper bound on units: far above any real program (one unit per Go package), it stops a walk
// over corrupt unit headers.
constexpr size_t kMaxUnits = 1 << 20;

std::string hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool is_type_tag(int tag) {
  switch (tag) {
    case DW_TAG_base_type:
    case DW_TAG_pointer_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
    case DW_TAG_class_type:
    case DW_TAG_array_type:
    case DW_TAG_typedef:
    case DW_TAG_subroutine_type:
    case DW_TAG_unspecified_type:
    case DW_TAG_enumeration_type:
    case DW_TAG_const_type:
    case DW_TAG_volatile_type:
    case DW_TAG_reference_type:
      return true;
    default:
      return false;
  }
}

std::string libdw_error() {
  return dwarf_errmsg(-1);
}

// True when the ELF file has a .debug_info section (plain or the old .zdebug_ form).
Result<bool> has_debug_info(Elf* elf, int fd, const std::string& path) {
  // A cut-off file loses its section headers (they sit at the end): that is damage, not a
  // binary built without DWARF, so it is reported as such.
  struct stat st;
  GElf_Ehdr eh;
  size_t shnum = 0;
  if (fstat(fd, &st) != 0 || gelf_getehdr(elf, &eh) == nullptr || elf_getshdrnum(elf, &shnum) != 0)
    return Error(Errc::kBadFormat, path + ": unreadable ELF header: " + elf_errmsg(-1));
  uint64_t fsize = static_cast<uint64_t>(st.st_size);
  if (eh.e_shoff > fsize || shnum > (fsize - eh.e_shoff) / std::max<uint64_t>(eh.e_shentsize, 1))
    return Error(Errc::kBadFormat, path + ": truncated: section headers at " + hex(eh.e_shoff) +
                                       " lie beyond the end of the file (" + hex(fsize) + ")");
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0)
    return Error(Errc::kBadFormat, path + ": no section header string table: " + elf_errmsg(-1));
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (name == nullptr) continue;
    if (strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0) {
      if (shdr.sh_type == SHT_NOBITS) return false;  // a separate-debuginfo stub
      if (shdr.sh_offset > fsize || shdr.sh_size > fsize - shdr.sh_offset)
        return Error(Errc::kBadFormat, path + ": truncated: " + name +
                                           " extends past the end of "
                                           "the file");
      return true;
    }
  }
  return false;
}

// The address of a location that is a single DW_OP_addr (or DW_OP_addrx): how Go describes a
// package-level variable. Anything else (a location list, a computed location) is not a static
// address.
std::optional<uint64_t> static_address(Dwarf_Die* die, Dwarf_Attribute* attr, bool big_endian) {
  Dwarf_Die cu;
  uint8_t asize = 0;
  if (dwarf_diecu(die, &cu, &asize, nullptr) == nullptr || (asize != 4 && asize != 8))
    return std::nullopt;
  int form = dwarf_whatform(attr);
  if (form == DW_FORM_block1 || form == DW_FORM_block2 || form == DW_FORM_block4 ||
      form == DW_FORM_block) {
    // Go writes DW_AT_location as DW_FORM_block1 even in DWARF 4 and 5, where libdw's
    // dwarf_getlocation only takes exprloc, so the expression is decoded here.
    Dwarf_Block b;
    if (dwarf_formblock(attr, &b) != 0 || b.length != 1u + asize || b.data[0] != DW_OP_addr)
      return std::nullopt;
    uint64_t v = 0;
    for (unsigned i = 0; i < asize; ++i) {
      unsigned byte = big_endian ? i : asize - 1 - i;
      v = (v << 8) | b.data[1 + byte];
    }
    return v;
  }
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_getlocation(attr, &ops, &nops) != 0 || nops != 1) return std::nullopt;
  if (ops[0].atom == DW_OP_addr) return ops[0].number;
  if (ops[0].atom == DW_OP_addrx || ops[0].atom == DW_OP_GNU_addr_index) {
    Dwarf_Attribute a;
    Dwarf_Addr v = 0;
    if (dwarf_getlocation_attr(attr, &ops[0], &a) != 0 || dwarf_formaddr(&a, &v) != 0)
      return std::nullopt;
    return v;
  }
  return std::nullopt;
}

}  // namespace

std::string die_name_for_error(uint64_t off) {
  return "DIE " + hex(off);
}

std::optional<uint64_t> attr_ref(Dwarf_Die* die, unsigned at) {
  Dwarf_Attribute attr;
  if (dwarf_attr(die, at, &attr) == nullptr) return std::nullopt;
  Dwarf_Die target;
  if (dwarf_formref_die(&attr, &target) == nullptr) return std::nullopt;
  return dwarf_dieoffset(&target);
}

std::optional<uint64_t> attr_udata(Dwarf_Die* die, unsigned at) {
  Dwarf_Attribute attr;
  if (dwarf_attr(die, at, &attr) == nullptr) return std::nullopt;
  Dwarf_Word v = 0;
  if (dwarf_formudata(&attr, &v) != 0) return std::nullopt;
  return v;
}

std::optional<uint64_t> attr_runtime_type(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  if (dwarf_attr(die, kAtGoRuntimeType, &attr) == nullptr) return std::nullopt;
  // DW_FORM_addr in every Go version so far (dwarf_formudata refuses it); a constant form is
  // accepted too.
  Dwarf_Addr a = 0;
  if (dwarf_formaddr(&attr, &a) == 0) return a;
  Dwarf_Word w = 0;
  if (dwarf_formudata(&attr, &w) == 0) return w;
  return std::nullopt;
}

Dwarf::Impl::~Impl() {
  if (dw != nullptr) dwarf_end(dw);
  if (elf != nullptr) elf_end(elf);
  if (fd >= 0) close(fd);
}

Result<Dwarf_Die> Dwarf::Impl::die(uint64_t off) const {
  Dwarf_Die d;
  if (dwarf_offdie(dw, off, &d) == nullptr)
    return Error(Errc::kBadFormat, die_name_for_error(off) + ": " + libdw_error());
  return d;
}

Result<void> Dwarf::Impl::build_index() {
  Dwarf_CU* cu = nullptr;
  Dwarf_CU* next = nullptr;
  for (;;) {
    Dwarf_Half unit_version = 0;
    uint8_t unit_type = 0;
    Dwarf_Die cudie;
    int rc = dwarf_get_units(dw, cu, &next, &unit_version, &unit_type, &cudie, nullptr);
    if (rc == 1) break;
    if (rc != 0) return Error(Errc::kBadFormat, "unit header: " + libdw_error());
    cu = next;
    if (++units > kMaxUnits) return Error(Errc::kBadFormat, "more than 2^20 units");
    if (version == 0) version = unit_version;
    int cutag = dwarf_tag(&cudie);
    if (cutag != DW_TAG_compile_unit && cutag != DW_TAG_partial_unit) continue;
    if (producer.empty()) {
      Dwarf_Attribute attr;
      const char* p = nullptr;
      if (dwarf_attr(&cudie, DW_AT_producer, &attr) != nullptr) p = dwarf_formstring(&attr);
      auto lang = attr_udata(&cudie, DW_AT_language);
      if (p != nullptr && ((lang && *lang == DW_LANG_Go) || strncmp(p, "Go ", 3) == 0))
        producer = p;
    }

    Dwarf_Die child;
    rc = dwarf_child(&cudie, &child);
    if (rc < 0)
      return Error(Errc::kBadFormat,
                   "unit at " + die_name_for_error(dwarf_dieoffset(&cudie)) + ": " + libdw_error());
    uint64_t prev = dwarf_dieoffset(&cudie);
    while (rc == 0) {
      uint64_t off = dwarf_dieoffset(&child);
      // A sibling link must move forward; a backward one in corrupt data would loop forever.
      if (off <= prev)
        return Error(Errc::kBadFormat,
                     die_name_for_error(prev) + ": sibling link goes backwards to " + hex(off));
      prev = off;
      int tag = dwarf_tag(&child);
      const char* name = dwarf_diename(&child);
      if (name != nullptr && name[0] != '\0') {
        std::string_view key(name);
        if (is_type_tag(tag)) {
          // Go emits a named struct twice: the struct and a typedef of the same name pointing at
          // it. The struct carries size, kind and runtime type, so it wins.
          auto [it, inserted] = types.try_emplace(key, off);
          if (!inserted && tag != DW_TAG_typedef) {
            Dwarf_Die old;
            if (dwarf_offdie(dw, it->second, &old) != nullptr && dwarf_tag(&old) == DW_TAG_typedef)
              it->second = off;
          }
          auto rt = attr_runtime_type(&child);
          if (rt && *rt != 0) {
            auto [rit, rins] = runtime_types.try_emplace(*rt, off);
            if (!rins && tag != DW_TAG_typedef) {
              Dwarf_Die old;
              if (dwarf_offdie(dw, rit->second, &old) != nullptr &&
                  dwarf_tag(&old) == DW_TAG_typedef)
                rit->second = off;
            }
          }
        } else if (tag == DW_TAG_constant) {
          constants.try_emplace(key, off);
        } else if (tag == DW_TAG_variable) {
          // A declaration without a location must not shadow the definition.
          bool has_loc = dwarf_hasattr(&child, DW_AT_location) != 0;
          auto [it, inserted] = variables.try_emplace(key, off);
          if (!inserted && has_loc) {
            Dwarf_Die old;
            if (dwarf_offdie(dw, it->second, &old) != nullptr &&
                dwarf_hasattr(&old, DW_AT_location) == 0)
              it->second = off;
          }
        }
      }
      rc = dwarf_siblingof(&child, &child);
      if (rc < 0)
        return Error(Errc::kBadFormat, die_name_for_error(off) + ": sibling: " + libdw_error());
    }
  }
  if (units == 0) return Error(Errc::kBadFormat, "no units in .debug_info");
  return {};
}

Dwarf::Dwarf(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dwarf::~Dwarf() = default;

Result<std::unique_ptr<Dwarf>> Dwarf::open(const std::string& path) {
  auto start = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl->fd < 0) {
    int e = errno;
    Errc code = e == ENOENT || e == ENOTDIR ? Errc::kNotFound
                : e == EACCES || e == EPERM ? Errc::kPermission
                                            : Errc::kIo;
    return Error(code, path + ": " + strerror(e));
  }
  elf_version(EV_CURRENT);
  impl->elf = elf_begin(impl->fd, ELF_C_READ_MMAP, nullptr);
  if (impl->elf == nullptr || elf_kind(impl->elf) != ELF_K_ELF)
    return Error(Errc::kBadFormat, path + ": not an ELF file");
  const char* ident = elf_getident(impl->elf, nullptr);
  impl->big_endian = ident != nullptr && ident[EI_DATA] == ELFDATA2MSB;
  auto has = has_debug_info(impl->elf, impl->fd, path);
  if (!has) return std::move(has).error();
  if (!*has)
    return Error(Errc::kNoDwarf,
                 path +
                     " has no DWARF debug info (built with -ldflags=-w or stripped); goref needs "
                     "it: rebuild without -w/-s, or keep an unstripped copy and pass it with "
                     "--exe");
  // libdw decompresses SHF_COMPRESSED .debug_* sections (zlib, every Go version) itself.
  impl->dw = dwarf_begin_elf(impl->elf, DWARF_C_READ, nullptr);
  if (impl->dw == nullptr) return Error(Errc::kBadFormat, path + ": DWARF: " + libdw_error());
  auto idx = impl->build_index();
  if (!idx) return std::move(idx).error().context(path + ": DWARF");

  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  log::get("binary")->debug(
      "{}: DWARF v{} indexed in {:.1f} ms: {} units, {} types, {} constants, {} variables, {} "
      "runtime types",
      path, impl->version, ms.count(), impl->units, impl->types.size(), impl->constants.size(),
      impl->variables.size(), impl->runtime_types.size());
  return std::unique_ptr<Dwarf>(new Dwarf(std::move(impl)));
}

std::optional<TypeRef> Dwarf::type(std::string_view name) const {
  auto it = impl_->types.find(name);
  if (it == impl_->types.end()) return std::nullopt;
  return TypeRef{it->second};
}

std::optional<int64_t> Dwarf::constant(std::string_view name) const {
  auto it = impl_->constants.find(name);
  if (it == impl_->constants.end()) return std::nullopt;
  auto d = impl_->die(it->second);
  if (!d) return std::nullopt;
  Dwarf_Attribute attr;
  if (dwarf_attr(&*d, DW_AT_const_value, &attr) == nullptr) return std::nullopt;
  Dwarf_Sword v = 0;
  if (dwarf_formsdata(&attr, &v) == 0) return static_cast<int64_t>(v);
  Dwarf_Word u = 0;
  if (dwarf_formudata(&attr, &u) == 0) return static_cast<int64_t>(u);
  return std::nullopt;
}

std::optional<Variable> Dwarf::variable(std::string_view name) const {
  auto it = impl_->variables.find(name);
  if (it == impl_->variables.end()) return std::nullopt;
  auto d = impl_->die(it->second);
  if (!d) return std::nullopt;
  Dwarf_Attribute attr;
  if (dwarf_attr(&*d, DW_AT_location, &attr) == nullptr) return std::nullopt;
  auto addr = static_address(&*d, &attr, impl_->big_endian);
  if (!addr) return std::nullopt;
  auto type = attr_ref(&*d, DW_AT_type);
  if (!type) return std::nullopt;
  return Variable{std::string(name), *addr, TypeRef{*type}};
}

std::optional<TypeRef> Dwarf::type_for_runtime_type(uint64_t off) const {
  if (off == 0) return std::nullopt;
  auto it = impl_->runtime_types.find(off);
  if (it == impl_->runtime_types.end()) return std::nullopt;
  return TypeRef{it->second};
}

std::string Dwarf::producer() const {
  return impl_->producer;
}
int Dwarf::version() const {
  return impl_->version;
}

std::vector<Variable> Dwarf::variables() const {
  std::vector<Variable> out;
  out.reserve(impl_->variables.size());
  for (const auto& [name, off] : impl_->variables)
    if (auto v = variable(name)) out.push_back(std::move(*v));
  return out;
}

Dwarf::Stats Dwarf::stats() const {
  return Stats{impl_->units, impl_->types.size(), impl_->constants.size(), impl_->variables.size(),
               impl_->runtime_types.size()};
}

}  // namespace goref::binary
