// Locating runtime.firstmoduledata in an executable. The pclntab header does not give the text
// base from Go 1.26 on (textStart is written as 0), and FUNCDATA offsets are relative to
// moduledata.gofunc, so the module data is the authority for both. It is an initialised global
// (.noptrdata; .go.module from Go 1.26) whose first word is the pclntab address; in a PIE that
// word, like every pointer in it, is also the addend of a RELATIVE dynamic relocation.
#include <cstring>

#include "goref/base/addr.h"
#include "goref/base/log.h"
#include "goref/binary/build_info.h"
#include "goref/binary/elf_file.h"
#include "goref/binary/pclntab.h"

namespace goref::binary {
namespace {

// runtime.moduledata field offsets (go-runtime.md §3.2, go-1.27.md §4): the same from pcHeader
// through text/etext in every supported version; gofunc moved in 1.27 when typelinks went away.
constexpr uint64_t kMdPcHeader = 0;
constexpr uint64_t kMdFuncnametab = 8;
constexpr uint64_t kMdMinpc = 160;
constexpr uint64_t kMdMaxpc = 168;
constexpr uint64_t kMdText = 176;
constexpr uint64_t kMdEtext = 184;
constexpr uint64_t kMdGofuncTo126 = 320;
constexpr uint64_t kMdGofunc127 = 344;
// A cap on candidates checked; real binaries have one or two.
constexpr size_t kMaxCandidates = 64;

bool in_file_backed_nonexec(const ElfFile& elf, uint64_t a) {
  for (const auto& s : elf.loads())
    if (a >= s.vaddr && a - s.vaddr < s.filesz && !s.exec) return true;
  return false;
}

// Checks the candidate and reads its fields; an error says which check failed.
Result<ModuleDataInfo> check(const ElfFile& elf, uint64_t md, uint64_t pclntab_addr, Bytes pclntab,
                             const std::vector<uint64_t>& gofunc_offsets) {
  auto word = [&](uint64_t off, const char* field) -> Result<uint64_t> {
    return elf.read_pointer(md + off).context(std::string("field ") + field);
  };
  GOREF_TRY(uint64_t pch, word(kMdPcHeader, "pcHeader"));
  if (pch != pclntab_addr) return Error(Errc::kBadFormat, "pcHeader is not the pclntab");
  GOREF_TRY(uint64_t fnt, word(kMdFuncnametab, "funcnametab"));
  auto funcname_off = load<uint64_t>(pclntab, 32);
  if (!funcname_off || fnt != pclntab_addr + *funcname_off)
    return Error(Errc::kBadFormat, "funcnametab does not point into the pclntab");
  ModuleDataInfo info;
  info.addr = md;
  GOREF_TRY(info.minpc, word(kMdMinpc, "minpc"));
  GOREF_TRY(info.maxpc, word(kMdMaxpc, "maxpc"));
  GOREF_TRY(info.text, word(kMdText, "text"));
  GOREF_TRY(info.etext, word(kMdEtext, "etext"));
  // ftab is at the start of pclntable; minpc is the first function's entry.
  auto pcln_off = load<uint64_t>(pclntab, 64);
  auto entry0 = pcln_off ? load<uint32_t>(pclntab, *pcln_off) : std::nullopt;
  if (!entry0 || info.minpc != info.text + *entry0)
    return Error(Errc::kBadFormat, "minpc " + to_hex(info.minpc) + " != text " + to_hex(info.text) +
                                       " + ftab[0].entryoff");
  if (info.etext < info.text) return Error(Errc::kBadFormat, "etext before text");
  for (uint64_t off : gofunc_offsets) {
    auto g = elf.read_pointer(md + off);
    // go:func.* lies in .rodata (up to 1.25) or inside .gopclntab (1.26+): read-only file data.
    if (g.ok() && *g != 0 && in_file_backed_nonexec(elf, *g)) {
      info.gofunc = *g;
      return info;
    }
  }
  return Error(Errc::kBadFormat, "no plausible gofunc field");
}

void scan_words(Bytes data, uint64_t vaddr, uint64_t value, std::vector<uint64_t>& out) {
  uint64_t first = (8 - vaddr % 8) % 8;
  for (uint64_t off = first; off + 8 <= data.size() && out.size() < kMaxCandidates; off += 8) {
    uint64_t w;
    std::memcpy(&w, data.data() + off, 8);
    if (w == value) out.push_back(vaddr + off);
  }
}

}  // namespace

Result<ModuleDataInfo> find_moduledata(const ElfFile& elf, uint64_t pclntab_addr, Bytes pclntab,
                                       const BuildInfo* bi) {
  std::vector<uint64_t> gofunc_offsets;
  if (!bi || bi->major == 0)
    gofunc_offsets = {kMdGofuncTo126, kMdGofunc127};
  else if (bi->at_least(1, 27))
    gofunc_offsets = {kMdGofunc127};
  else
    gofunc_offsets = {kMdGofuncTo126};

  std::string last_error;
  if (auto sym = elf.symbol("runtime.firstmoduledata")) {
    auto r = check(elf, sym->value, pclntab_addr, pclntab, gofunc_offsets);
    if (r.ok()) {
      r->from_symbol = true;
      log::get("binary")->debug("moduledata at {:#x} (symbol): text {:#x} gofunc {:#x}", r->addr,
                                r->text, r->gofunc);
      return r;
    }
    last_error = "runtime.firstmoduledata " + to_hex(sym->value) + ": " + r.error().message();
  }

  // Without symbols: words equal to the pclntab address, preferring the sections the linker
  // puts the module data in, then any writable file data; plus, for a PIE, the targets of
  // RELATIVE relocations with that addend (their file bytes may be zero).
  std::vector<uint64_t> cands;
  for (const char* name : {".go.module", ".noptrdata"})
    if (const Section* s = elf.section(name))
      if (auto d = elf.section_data(*s); d.ok()) scan_words(*d, s->addr, pclntab_addr, cands);
  for (uint64_t where : elf.relative_relocations_to(pclntab_addr))
    if (cands.size() < kMaxCandidates) cands.push_back(where);
  for (const auto& seg : elf.loads())
    if (seg.write && seg.offset <= elf.image().size())
      scan_words(
          elf.image().subspan(seg.offset, std::min(seg.filesz, elf.image().size() - seg.offset)),
          seg.vaddr, pclntab_addr, cands);
  for (uint64_t c : cands) {
    auto r = check(elf, c, pclntab_addr, pclntab, gofunc_offsets);
    if (r.ok()) {
      log::get("binary")->debug(
          "moduledata at {:#x} (scan of {} candidates): text {:#x} gofunc {:#x}", r->addr,
          cands.size(), r->text, r->gofunc);
      return r;
    }
    if (last_error.empty()) last_error = "candidate " + to_hex(c) + ": " + r.error().message();
  }
  return Error(Errc::kBadFormat,
               "cannot find runtime.firstmoduledata (a word equal to the pclntab address " +
                   to_hex(pclntab_addr) + " in the data)" +
                   (last_error.empty() ? std::string() : "; " + last_error));
}

}  // namespace goref::binary
