#include "goref/annotate/check_sites.h"

#include <algorithm>
#include <array>

namespace goref::annotate {

std::string_view check_kind_name(CheckKind k) {
  return k == CheckKind::kNil ? "nil" : "bounds";
}

bool is_bounds_panic_function(std::string_view name) {
  // Up to Go 1.25 one assembly stub per kind (ssagen.BoundsCheckFunc), each tail-calling its
  // goPanic* function; from 1.26 one runtime.panicBounds whose operands are in PCDATA. The
  // panicExtend* stubs are 32-bit only but cost nothing to know. The linker drops stubs nothing
  // calls, so a binary holds only some of these.
  static constexpr std::array<std::string_view, 11> kKinds = {
      "Index",   "SliceAlen", "SliceAcap",    "SliceB", "Slice3Alen", "Slice3Acap",
      "Slice3B", "Slice3C",   "SliceConvert", "Bounds", "Bounds64"};
  constexpr std::string_view kRuntime = "runtime.";
  if (!name.starts_with(kRuntime)) return false;
  name.remove_prefix(kRuntime.size());
  if (name.starts_with("goPanic")) {
    name.remove_prefix(7);
  } else if (name.starts_with("panic")) {
    name.remove_prefix(5);
  } else {
    return false;
  }
  // Unsigned variants (panicIndexU, goPanicSliceAlenU …) and the 32-bit Extend forms.
  if (name.starts_with("Extend")) return true;
  if (name.ends_with("U") && name != "SliceConvertU") name.remove_suffix(1);
  return std::find(kKinds.begin(), kKinds.end(), name) != kKinds.end();
}

Result<FunctionChecks> find_check_sites(target::Arch arch, Bytes code, uint64_t addr,
                                        std::span<const uint64_t> panic_entries) {
  switch (arch) {
    case target::Arch::kAmd64:
      return detail::find_check_sites_amd64(code, addr, panic_entries);
    case target::Arch::kArm64:
      break;
  }
  return Error(Errc::kUnsupported,
               "bound-check and nil-check recognition is implemented for amd64 only, not " +
                   std::string(target::arch_name(arch)));
}

}  // namespace goref::annotate
