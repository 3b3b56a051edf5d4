#include "goref/runtime/process.h"

#include "goref/runtime/support.h"

namespace goref::runtime {

Result<std::unique_ptr<Process>> Process::open(target::Target& t, const Program& prog) {
  std::unique_ptr<Process> p(new Process(t, prog));
  GOREF_TRY(p->bias_, runtime::load_bias(t, prog.elf()));
  GOREF_TRY(p->layout_, resolve_layout(prog));
  return p;
}

Result<Addr> Process::global(std::string_view name) const {
  auto link = prog_.global(name);
  if (!link)
    return Error(Errc::kNotFound,
                 std::string(name) +
                     ": not found: the executable has neither DWARF nor a symbol table (built "
                     "with -ldflags='-s -w'); goroutine dumps need at least the symbol table "
                     "(-ldflags=-w drops only DWARF), the heap profile needs DWARF");
  return runtime_addr(*link);
}

Result<std::string> Process::read_go_string(Addr addr, size_t max_len) const {
  GOREF_TRY(auto ptr, t_.read_word(addr));
  GOREF_TRY(auto len, t_.read_word(addr + 8));
  if (len == 0) return std::string();
  bool cut = len > max_len;
  std::string s(cut ? max_len : len, '\0');
  GOREF_CHECK(t_.read_exact(Addr(ptr), std::as_writable_bytes(std::span(s.data(), s.size())))
                  .context("string at " + addr.hex()));
  if (cut) s += "…";
  return s;
}

}  // namespace goref::runtime
