#include "goref/runtime/layout.h"

#include <array>
#include <string_view>

namespace goref::runtime {
namespace {

// Offsets measured with each toolchain's DWARF (linux/amd64; arm64 is identical for g and
// gobuf; m is OS-dependent but equal on linux/amd64 and linux/arm64 for these fields).
// Columns: Go 1.21 … 1.27. -1: the field does not exist in that version.
struct Row {
  std::string_view type, field;
  std::array<int, 7> off;
};
constexpr Row kRows[] = {
    {"runtime.g", "$size", {408, 424, 432, 440, 440, 456, 456}},
    {"runtime.g", "stack.lo", {0, 0, 0, 0, 0, 0, 0}},
    {"runtime.g", "stack.hi", {8, 8, 8, 8, 8, 8, 8}},
    {"runtime.g", "m", {48, 48, 48, 48, 48, 48, 48}},
    {"runtime.g", "sched.sp", {56, 56, 56, 56, 56, 56, 56}},
    {"runtime.g", "sched.pc", {64, 64, 64, 64, 64, 64, 64}},
    {"runtime.g", "sched.ctxt", {80, 80, 80, 80, 80, 80, 80}},
    // gobuf lost its ret field in Go 1.25, moving lr and bp up by 8.
    {"runtime.g", "sched.lr", {96, 96, 96, 96, 88, 88, 88}},
    {"runtime.g", "sched.bp", {104, 104, 104, 104, 96, 96, 96}},
    {"runtime.g", "syscallsp", {112, 112, 112, 112, 104, 104, 104}},
    {"runtime.g", "syscallpc", {120, 120, 120, 120, 112, 112, 112}},
    {"runtime.g", "syscallbp", {-1, -1, 128, 128, 120, 120, 120}},  // Go 1.23+
    {"runtime.g", "atomicstatus", {144, 144, 152, 152, 144, 144, 144}},
    {"runtime.g", "goid", {152, 152, 160, 160, 152, 152, 152}},
    {"runtime.g", "waitsince", {168, 168, 176, 176, 168, 168, 168}},
    {"runtime.g", "waitreason", {176, 176, 184, 184, 176, 176, 176}},
    {"runtime.g", "lockedm", {208, 208, 216, 216, 208, 208, 208}},
    {"runtime.g", "parentGoid", {272, 272, 280, 280, 272, 280, 280}},
    {"runtime.g", "gopc", {280, 280, 288, 288, 280, 288, 288}},
    {"runtime.g", "startpc", {296, 296, 304, 304, 296, 304, 304}},
    {"runtime.g", "runningCleanups", {-1, -1, -1, -1, 218, 220, 220}},  // Go 1.25+
    {"runtime.m", "g0", {0, 0, 0, 0, 0, 0, 0}},
    {"runtime.m", "procid", {72, 72, 72, 72, 64, 64, 64}},
    {"runtime.m", "gsignal", {80, 80, 80, 80, 72, 72, 72}},
    {"runtime.m", "curg", {192, 192, 192, 192, 184, 184, 184}},
    {"runtime.m", "alllink", {336, 328, 352, 352, 344, 352, 352}},
    {"runtime.m", "vdsoSP", {808, 1120, 880, 904, 896, 896, 896}},
    {"runtime.m", "vdsoPC", {816, 1128, 888, 912, 904, 904, 904}},
};

std::optional<uint64_t> fallback(int minor, std::string_view type, std::string_view field) {
  if (minor < 21 || minor > 27) return std::nullopt;
  for (const auto& r : kRows)
    if (r.type == type && r.field == field) {
      int v = r.off[static_cast<size_t>(minor - 21)];
      if (v < 0) return std::nullopt;
      return static_cast<uint64_t>(v);
    }
  return std::nullopt;
}

// Resolves fields of one type: DWARF first, the table otherwise.
class Resolver {
 public:
  // From p's DWARF where it has the type, else the table.
  Resolver(const Program& p, std::string_view type)
      : dwarf_(p.dwarf()), minor_(p.go_minor()), version_(p.build_info().version), type_(type) {
    if (dwarf_) t_ = dwarf_->type(type);
  }
  // From the table alone.
  Resolver(int minor, std::string_view type)
      : minor_(minor), version_("Go 1." + std::to_string(minor)), type_(type) {}
  bool have_dwarf() const { return t_.has_value(); }

  std::optional<uint64_t> optional(std::string_view field) const {
    if (t_) {
      if (field == "$size") {
        auto ti = dwarf_->info(*t_);
        if (ti.ok() && ti->size > 0) return ti->size;
      } else if (auto m = dwarf_->member(*t_, field); m.ok()) {
        return m->offset;
      } else {
        return std::nullopt;  // DWARF is authoritative when present: the field is gone
      }
    }
    return fallback(minor_, type_, field);
  }
  Result<uint64_t> required(std::string_view field) const {
    if (auto v = optional(field)) return *v;
    return Error(Errc::kUnsupported, std::string(type_) + "." + std::string(field) +
                                         ": not in DWARF and no layout for " + version_);
  }

 private:
  const binary::Dwarf* dwarf_ = nullptr;
  int minor_;
  std::string version_;
  std::string_view type_;
  std::optional<binary::TypeRef> t_;
};

Result<Layout> build_layout(const Resolver& g, const Resolver& m) {
  Layout l;
  l.from_dwarf = g.have_dwarf() && m.have_dwarf();
  auto& G = l.g;
  GOREF_TRY(G.size, g.required("$size"));
  GOREF_TRY(G.stack_lo, g.required("stack.lo"));
  GOREF_TRY(G.stack_hi, g.required("stack.hi"));
  GOREF_TRY(G.m, g.required("m"));
  GOREF_TRY(G.sched_sp, g.required("sched.sp"));
  GOREF_TRY(G.sched_pc, g.required("sched.pc"));
  GOREF_TRY(G.sched_bp, g.required("sched.bp"));
  GOREF_TRY(G.sched_lr, g.required("sched.lr"));
  GOREF_TRY(G.sched_ctxt, g.required("sched.ctxt"));
  GOREF_TRY(G.syscallsp, g.required("syscallsp"));
  GOREF_TRY(G.syscallpc, g.required("syscallpc"));
  G.syscallbp = g.optional("syscallbp");
  GOREF_TRY(G.atomicstatus, g.required("atomicstatus"));
  GOREF_TRY(G.goid, g.required("goid"));
  GOREF_TRY(G.waitsince, g.required("waitsince"));
  GOREF_TRY(G.waitreason, g.required("waitreason"));
  GOREF_TRY(G.lockedm, g.required("lockedm"));
  G.parent_goid = g.optional("parentGoid");
  GOREF_TRY(G.gopc, g.required("gopc"));
  GOREF_TRY(G.startpc, g.required("startpc"));
  G.running_cleanups = g.optional("runningCleanups");
  auto& M = l.m;
  M.size = m.optional("$size").value_or(0);
  GOREF_TRY(M.g0, m.required("g0"));
  GOREF_TRY(M.procid, m.required("procid"));
  GOREF_TRY(M.gsignal, m.required("gsignal"));
  GOREF_TRY(M.curg, m.required("curg"));
  GOREF_TRY(M.alllink, m.required("alllink"));
  GOREF_TRY(M.vdso_sp, m.required("vdsoSP"));
  GOREF_TRY(M.vdso_pc, m.required("vdsoPC"));
  return l;
}

}  // namespace

Result<Layout> resolve_layout(const Program& prog) {
  return build_layout(Resolver(prog, "runtime.g"), Resolver(prog, "runtime.m"));
}

std::optional<Layout> fallback_layout(int minor) {
  auto l = build_layout(Resolver(minor, "runtime.g"), Resolver(minor, "runtime.m"));
  if (!l.ok()) return std::nullopt;
  return *l;
}

}  // namespace goref::runtime
