#include "goref/runtime/program.h"

#include "goref/runtime/support.h"

namespace goref::runtime {

Result<std::unique_ptr<Program>> Program::open(const std::string& exe_path) {
  std::unique_ptr<Program> p(new Program);
  GOREF_TRY(p->elf_, binary::ElfFile::open(exe_path));
  if (p->elf_->is_core())
    return Error(Errc::kUsage, exe_path + " is a core file, not an executable");
  auto bi = binary::read_build_info(*p->elf_);
  if (!bi.ok()) return std::move(bi).error();
  p->bi_ = std::move(bi).value();
  GOREF_CHECK(check_supported(p->bi_));
  GOREF_TRY(auto pcln, binary::Pclntab::open(*p->elf_));
  p->pcln_.emplace(std::move(pcln));
  auto dwarf = binary::Dwarf::open(exe_path);
  if (dwarf.ok())
    p->dwarf_ = std::move(dwarf).value();
  else
    p->dwarf_error_.emplace(std::move(dwarf).error());
  return p;
}

std::optional<uint64_t> Program::global(std::string_view name) const {
  if (dwarf_)
    if (auto v = dwarf_->variable(name)) return v->address;
  if (auto s = elf_->symbol(name)) return s->value;
  return std::nullopt;
}

std::optional<uint64_t> Program::global_size(std::string_view name) const {
  if (dwarf_)
    if (auto v = dwarf_->variable(name))
      if (auto ti = dwarf_->info(v->type); ti.ok() && ti->size > 0) return ti->size;
  if (auto s = elf_->symbol(name); s && s->size > 0) return s->size;
  return std::nullopt;
}

}  // namespace goref::runtime
