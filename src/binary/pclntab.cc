#include "goref/binary/pclntab.h"

#include <algorithm>
#include <cstring>

#include "goref/base/addr.h"
#include "goref/binary/build_info.h"
#include "goref/binary/elf_file.h"
#include "goref/binary/pcvalue.h"

namespace goref::binary {

namespace detail {

struct PclntabData {
  std::vector<std::byte> owned;  // from_parts keeps the bytes here; open() refers to the ElfFile
  Bytes data;                    // the whole pclntab, starting at the pcHeader
  uint64_t addr = 0, text = 0, gofunc = 0;
  uint32_t quantum = 1;
  uint64_t nfunc = 0;
  Bytes funcnametab, cutab, filetab, pctab, pclntable;
  AddressReader reader;
  ModuleDataInfo md;

  uint32_t ftab_entryoff(size_t i) const { return load<uint32_t>(pclntable, i * 8).value_or(0); }
  uint32_t ftab_funcoff(size_t i) const { return load<uint32_t>(pclntable, i * 8 + 4).value_or(0); }
};

}  // namespace detail

namespace {

using detail::PclntabData;

constexpr size_t kPcHeaderSize = 72;
constexpr size_t kFuncSize = 44;  // _func, 1.20–1.27
constexpr size_t kInlinedCallSize = 16;
// Inlining depth is bounded by the compiler's budget; a deeper walk is a corrupt tree.
constexpr int kMaxInlineDepth = 256;

std::string hex32(uint32_t v) {
  return to_hex(v);
}

}  // namespace

// ---- Func ----

template <class T>
T Func::field(uint64_t at) const {
  // Pclntab::build checked that every _func with its pcdata/funcdata arrays lies in pclntable.
  return load<T>(t_->pclntable, off_ + at).value_or(T{});
}

uint64_t Func::entry() const {
  return t_->text + t_->ftab_entryoff(index_);
}
uint64_t Func::end() const {
  return t_->text + t_->ftab_entryoff(index_ + 1);
}
std::string_view Func::name() const {
  return read_cstr(t_->funcnametab, field<uint32_t>(4)).value_or(std::string_view{});
}
int32_t Func::args() const {
  return field<int32_t>(8);
}
uint32_t Func::deferreturn() const {
  return field<uint32_t>(12);
}
uint32_t Func::pcsp() const {
  return field<uint32_t>(16);
}
uint32_t Func::pcfile() const {
  return field<uint32_t>(20);
}
uint32_t Func::pcln() const {
  return field<uint32_t>(24);
}
uint32_t Func::npcdata() const {
  return field<uint32_t>(28);
}
uint32_t Func::cu_offset() const {
  return field<uint32_t>(32);
}
int32_t Func::start_line() const {
  return field<int32_t>(36);
}
uint8_t Func::func_id() const {
  return field<uint8_t>(40);
}
uint8_t Func::flag() const {
  return field<uint8_t>(41);
}
uint8_t Func::nfuncdata() const {
  return field<uint8_t>(43);
}

std::optional<int32_t> Func::pcsp_at(uint64_t pc) const {
  if (pcsp() == 0) return std::nullopt;
  return pcvalue(t_->pctab, pcsp(), entry(), pc, t_->quantum, end());
}

std::optional<int32_t> Func::line_at(uint64_t pc) const {
  if (pcln() == 0) return std::nullopt;
  return pcvalue(t_->pctab, pcln(), entry(), pc, t_->quantum, end());
}

std::optional<std::string_view> Func::file_at(uint64_t pc) const {
  if (pcfile() == 0) return std::nullopt;
  auto fileno = pcvalue(t_->pctab, pcfile(), entry(), pc, t_->quantum, end());
  if (!fileno) return std::nullopt;
  if (*fileno < 0) return std::string_view("?");
  auto off = load<uint32_t>(t_->cutab, (uint64_t{cu_offset()} + uint32_t(*fileno)) * 4);
  if (!off) return std::nullopt;
  if (*off == UINT32_MAX) return std::string_view("?");
  auto s = read_cstr(t_->filetab, *off);
  if (!s) return std::nullopt;
  return *s;
}

std::optional<Func::FileLine> Func::file_line_at(uint64_t pc) const {
  auto file = file_at(pc);
  auto line = line_at(pc);
  if (!file || !line) return std::nullopt;
  return FileLine{*file, *line};
}

uint32_t Func::pcdata_offset(uint32_t table) const {
  if (table >= npcdata()) return 0;
  return field<uint32_t>(kFuncSize + uint64_t{table} * 4);
}

std::optional<int32_t> Func::pcdata_at(uint32_t table, uint64_t pc) const {
  if (pc < entry() || pc >= end()) return std::nullopt;
  uint32_t off = pcdata_offset(table);
  if (off == 0) return -1;
  return pcvalue(t_->pctab, off, entry(), pc, t_->quantum, end());
}

std::optional<uint64_t> Func::funcdata(uint32_t index) const {
  if (index >= nfuncdata()) return std::nullopt;
  uint32_t off = field<uint32_t>(kFuncSize + uint64_t{npcdata()} * 4 + uint64_t{index} * 4);
  if (off == UINT32_MAX) return std::nullopt;
  return t_->gofunc + off;
}

// ---- Pclntab ----

Result<Pclntab> Pclntab::build(std::vector<std::byte> owned, Bytes data, uint64_t addr,
                               uint64_t text, uint64_t gofunc, AddressReader reader,
                               ModuleDataInfo md) {
  auto d = std::make_shared<PclntabData>();
  d->owned = std::move(owned);
  d->data = d->owned.empty() ? data : Bytes(d->owned);
  Bytes b = d->data;
  std::string where = "pclntab at " + to_hex(addr);
  if (b.size() < kPcHeaderSize) return Error(Errc::kBadFormat, where + ": truncated header");
  uint32_t magic = *load<uint32_t>(b, 0);
  if (magic != kGo120PclntabMagic) {
    std::string which = magic == 0xfffffff0   ? " (Go 1.18–1.19)"
                        : magic == 0xfffffffa ? " (Go 1.16–1.17)"
                        : magic == 0xfffffffb ? " (Go 1.2–1.15)"
                                              : "";
    if (which.empty()) return Error(Errc::kBadFormat, where + ": bad magic " + hex32(magic));
    return Error(Errc::kUnsupported, where + ": magic " + hex32(magic) + which +
                                         " is not supported (goref supports Go 1.21 and later)");
  }
  auto min_lc = static_cast<uint8_t>(b[6]);
  auto ptr_size = static_cast<uint8_t>(b[7]);
  if (ptr_size != 8)
    return Error(Errc::kUnsupported, where + ": pointer size " + std::to_string(ptr_size));
  if (min_lc != 1 && min_lc != 2 && min_lc != 4)
    return Error(Errc::kBadFormat, where + ": bad pc quantum " + std::to_string(min_lc));
  d->quantum = min_lc;
  uint64_t nfunc = *load<uint64_t>(b, 8);
  uint64_t offs[5];
  for (int i = 0; i < 5; ++i) offs[i] = *load<uint64_t>(b, 32 + i * 8);
  // funcname, cu, filetab, pctab, pcln: laid out in this order, each table running to the next.
  uint64_t prev = kPcHeaderSize;
  for (uint64_t o : offs) {
    if (o < prev || o > b.size())
      return Error(Errc::kBadFormat, where + ": table offsets out of order or out of bounds");
    prev = o;
  }
  d->funcnametab = b.subspan(offs[0], offs[1] - offs[0]);
  d->cutab = b.subspan(offs[1], offs[2] - offs[1]);
  d->filetab = b.subspan(offs[2], offs[3] - offs[2]);
  d->pctab = b.subspan(offs[3], offs[4] - offs[3]);
  d->pclntable = b.subspan(offs[4]);
  // ftab has nfunc+1 functab entries (the last holds the end of the last function).
  if (nfunc == 0 || nfunc >= d->pclntable.size() / 8)
    return Error(Errc::kBadFormat,
                 where + ": nfunc " + std::to_string(nfunc) + " does not fit the function table");
  d->nfunc = nfunc;
  uint32_t last = 0;
  for (uint64_t i = 0; i <= nfunc; ++i) {
    uint32_t e = d->ftab_entryoff(i);
    if (e < last)
      return Error(Errc::kBadFormat, where + ": ftab not sorted at entry " + std::to_string(i));
    last = e;
    if (i == nfunc) break;
    uint64_t fo = d->ftab_funcoff(i);
    auto npcdata = load<uint32_t>(d->pclntable, fo + 28);
    auto nfuncdata = load<uint8_t>(d->pclntable, fo + 43);
    if (!npcdata || !nfuncdata || *npcdata > 64 ||
        fo + kFuncSize + (uint64_t{*npcdata} + *nfuncdata) * 4 > d->pclntable.size())
      return Error(Errc::kBadFormat, where + ": _func " + std::to_string(i) + " out of bounds");
  }
  d->addr = addr;
  d->text = text;
  d->gofunc = gofunc;
  d->reader = std::move(reader);
  d->md = md;
  return Pclntab(std::move(d));
}

Result<Pclntab> Pclntab::from_parts(std::vector<std::byte> pclntab, uint64_t pclntab_addr,
                                    uint64_t text, uint64_t gofunc, AddressReader reader) {
  if (pclntab.empty()) return Error(Errc::kBadFormat, "empty pclntab");
  return build(std::move(pclntab), {}, pclntab_addr, text, gofunc, std::move(reader), {});
}

namespace {

// Without a section table or symbols: pcHeaders (magic, zero pads, a valid pc quantum, pointer
// size 8) at 8-byte aligned addresses of read-only file data. The module data check in open()
// decides which one is real.
std::vector<std::pair<uint64_t, Bytes>> header_candidates(const ElfFile& elf) {
  std::vector<std::pair<uint64_t, Bytes>> out;
  for (const auto& seg : elf.loads()) {
    if (seg.exec || seg.offset > elf.image().size()) continue;
    Bytes data =
        elf.image().subspan(seg.offset, std::min(seg.filesz, elf.image().size() - seg.offset));
    for (uint64_t off = (8 - seg.vaddr % 8) % 8;
         off + kPcHeaderSize <= data.size() && out.size() < 16; off += 8) {
      if (*load<uint32_t>(data, off) != kGo120PclntabMagic) continue;
      auto lc = static_cast<uint8_t>(data[off + 6]);
      if (data[off + 4] != std::byte{0} || data[off + 5] != std::byte{0} ||
          (lc != 1 && lc != 2 && lc != 4) || data[off + 7] != std::byte{8})
        continue;
      out.emplace_back(seg.vaddr + off, data.subspan(off));
    }
  }
  return out;
}

}  // namespace

Result<Pclntab> Pclntab::open(const ElfFile& elf) {
  const Section* s = elf.section(".gopclntab");
  // Go 1.21–1.25 PIEs put it in a relro section.
  if (!s) s = elf.section(".data.rel.ro.gopclntab");
  std::vector<std::pair<uint64_t, Bytes>> cands;
  if (s) {
    GOREF_TRY(Bytes data, elf.section_data(*s).context("pclntab"));
    cands.emplace_back(s->addr, data);
  } else if (auto sym = elf.symbol("runtime.pclntab"); sym && sym->size) {
    // A table without its section header but with symbols: bytes from the segments.
    for (const auto& seg : elf.loads())
      if (sym->value >= seg.vaddr && sym->value - seg.vaddr < seg.filesz &&
          sym->size <= seg.filesz - (sym->value - seg.vaddr))
        cands.emplace_back(sym->value,
                           elf.image().subspan(seg.offset + (sym->value - seg.vaddr), sym->size));
  } else if (elf.sections().empty()) {
    cands = header_candidates(elf);
  }
  if (cands.empty() || cands[0].second.empty())
    return Error(Errc::kNotFound, elf.path() + ": no Go function table (.gopclntab); " +
                                      (elf.is_core() ? "this is a core file, not an executable"
                                                     : "not a Go program?"));
  auto [addr, data] = cands[0];
  if (data.size() >= 4 && *load<uint32_t>(data, 0) != kGo120PclntabMagic)
    return build({}, data, addr, 0, 0, {}, {}).context(elf.path());  // names the version
  auto bi = read_build_info(elf);
  const BuildInfo* bip = bi.ok() ? &bi.value() : nullptr;
  std::optional<Error> first_error;
  for (auto [a, d] : cands) {
    auto md = find_moduledata(elf, a, d, bip);
    if (!md.ok()) {
      if (!first_error) first_error = std::move(md).error();
      continue;
    }
    const ElfFile* e = &elf;
    AddressReader reader = [e](uint64_t at, std::span<std::byte> out) {
      return e->read_vaddr(at, out);
    };
    return build({}, d, a, md->text, md->gofunc, std::move(reader), *md).context(elf.path());
  }
  return std::move(*first_error).context(elf.path());
}

size_t Pclntab::nfunc() const {
  return d_->nfunc;
}

Func Pclntab::func(size_t i) const {
  // Out-of-range indices are a caller bug; clamp so that a Func never reads outside ftab.
  if (i >= d_->nfunc) i = d_->nfunc - 1;
  return Func(d_.get(), i, d_->ftab_funcoff(i));
}

std::optional<Func> Pclntab::find_func(uint64_t pc) const {
  if (pc < d_->text) return std::nullopt;
  uint64_t off64 = pc - d_->text;
  if (off64 > UINT32_MAX) return std::nullopt;
  auto off = static_cast<uint32_t>(off64);
  if (off < d_->ftab_entryoff(0) || off >= d_->ftab_entryoff(d_->nfunc)) return std::nullopt;
  // The last i with entryoff(i) <= off.
  size_t lo = 0, hi = d_->nfunc;  // invariant: entryoff(lo) <= off < entryoff(hi)
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (d_->ftab_entryoff(mid) <= off)
      lo = mid;
    else
      hi = mid;
  }
  return func(lo);
}

std::string_view Pclntab::funcname(uint32_t name_off) const {
  return read_cstr(d_->funcnametab, name_off).value_or(std::string_view{});
}

Result<size_t> Pclntab::read(uint64_t addr, std::span<std::byte> out) const {
  if (addr >= d_->addr && addr - d_->addr < d_->data.size()) {
    size_t n = std::min<uint64_t>(out.size(), d_->data.size() - (addr - d_->addr));
    std::memcpy(out.data(), d_->data.data() + (addr - d_->addr), n);
    return n;
  }
  if (!d_->reader) return Error(Errc::kUnmapped, to_hex(addr) + " is outside the pclntab");
  return d_->reader(addr, out);
}

std::vector<Frame> Pclntab::symbolize(uint64_t pc) const {
  std::vector<Frame> frames;
  auto f = find_func(pc);
  if (!f) return frames;
  auto position = [&](uint64_t at, Frame& fr) {
    fr.file = std::string(f->file_at(at).value_or("?"));
    fr.line = f->line_at(at).value_or(0);
  };
  auto physical = [&](uint64_t at) {
    Frame fr{std::string(f->name()), {}, 0, false, f->entry(), f->func_id()};
    position(at, fr);
    frames.push_back(std::move(fr));
  };
  auto tree = f->funcdata(kFuncdataInlTree);
  uint64_t cur = pc;
  std::vector<int32_t> seen;
  for (int depth = 0; depth < kMaxInlineDepth; ++depth) {
    int32_t ix = tree ? f->pcdata_at(kPcdataInlTreeIndex, cur).value_or(-1) : -1;
    if (ix < 0) {
      physical(cur);
      return frames;
    }
    // A corrupt tree can point back at an entry already walked.
    if (std::find(seen.begin(), seen.end(), ix) != seen.end()) break;
    seen.push_back(ix);
    std::byte call[kInlinedCallSize];
    auto n = read(*tree + uint64_t(ix) * kInlinedCallSize, call);
    if (!n.ok() || *n != sizeof call) break;
    // inlinedCall{funcID u8, _ [3]u8, nameOff i32, parentPc i32, startLine i32}.
    auto func_id = *load<uint8_t>(Bytes(call), 0);
    auto name_off = *load<uint32_t>(Bytes(call), 4);
    auto parent_pc = *load<int32_t>(Bytes(call), 8);
    Frame fr{std::string(funcname(name_off)), {}, 0, true, f->entry(), func_id};
    position(cur, fr);
    frames.push_back(std::move(fr));
    if (parent_pc < 0 || f->entry() + uint64_t(parent_pc) >= f->end()) break;
    cur = f->entry() + uint64_t(parent_pc);
  }
  // Corrupt or too deep: end with the physical function at the last pc reached.
  physical(cur);
  return frames;
}

uint64_t Pclntab::text_start() const {
  return d_->text;
}
uint64_t Pclntab::gofunc() const {
  return d_->gofunc;
}
uint64_t Pclntab::address() const {
  return d_->addr;
}
uint32_t Pclntab::pc_quantum() const {
  return d_->quantum;
}
const ModuleDataInfo& Pclntab::moduledata() const {
  return d_->md;
}

}  // namespace goref::binary
