#include "goref/annotate/check_index.h"

#include <algorithm>

#include "goref/binary/elf_file.h"
#include "goref/binary/pclntab.h"

namespace goref::annotate {
namespace {

// A function's bytes straight from the file image, or an empty span when [lo, hi) is not wholly
// file-backed by one executable segment (a corrupt table; such a function is skipped).
Bytes code_of(const binary::ElfFile& elf, uint64_t lo, uint64_t hi) {
  for (const auto& s : elf.loads()) {
    if (!s.exec || lo < s.vaddr || hi > s.vaddr + s.filesz || hi < lo) continue;
    uint64_t off = s.offset + (lo - s.vaddr);
    Bytes image = elf.image();
    if (off > image.size() || hi - lo > image.size() - off) return {};
    return image.subspan(off, hi - lo);
  }
  return {};
}

}  // namespace

Result<CheckIndex> CheckIndex::build(const binary::ElfFile& elf, const binary::Pclntab& tab) {
  // No Go function is anywhere near this large; a bigger span means a corrupt table.
  constexpr uint64_t kMaxFunctionBytes = uint64_t{64} << 20;
  CheckIndex idx;
  std::vector<uint64_t> panics;
  for (size_t i = 0; i < tab.nfunc(); ++i) {
    binary::Func f = tab.func(i);
    if (is_bounds_panic_function(f.name())) panics.push_back(f.entry());
  }
  std::sort(panics.begin(), panics.end());
  idx.npanic_ = panics.size();
  for (size_t i = 0; i < tab.nfunc(); ++i) {
    binary::Func f = tab.func(i);
    // The panic functions call one another (panicBounds → panicBounds64); those calls are not
    // checks.
    if (is_bounds_panic_function(f.name())) continue;
    uint64_t lo = f.entry(), hi = f.end();
    if (hi <= lo || hi - lo > kMaxFunctionBytes) continue;
    Bytes code = code_of(elf, lo, hi);
    if (code.empty()) continue;
    GOREF_TRY(auto fc, find_check_sites(elf.arch(), code, lo, panics));
    idx.sites_.insert(idx.sites_.end(), fc.sites.begin(), fc.sites.end());
    idx.panic_calls_ += fc.panic_calls;
    idx.panic_calls_reached_ += fc.panic_calls_reached;
    ++idx.nfuncs_;
    idx.nbytes_ += code.size();
  }
  // Functions come in address order from ftab, but a corrupt table must not break find().
  std::sort(idx.sites_.begin(), idx.sites_.end(),
            [](const CheckSite& a, const CheckSite& b) { return a.begin < b.begin; });
  return idx;
}

const CheckSite* CheckIndex::find(uint64_t pc) const {
  auto it = std::upper_bound(sites_.begin(), sites_.end(), pc,
                             [](uint64_t p, const CheckSite& s) { return p < s.begin; });
  if (it == sites_.begin()) return nullptr;
  --it;
  return pc < it->end ? &*it : nullptr;
}

}  // namespace goref::annotate
