#include "goref/runtime/type_masks.h"

#include "goref/base/bytes.h"

namespace goref::runtime {
namespace {

// Bounds on what a (possibly corrupt) type descriptor may claim.
constexpr uint64_t kMaxMaskBytes = uint64_t{64} << 20;  // 4 GiB of pointer-bearing data
constexpr uint64_t kMaxFields = 1 << 16;
constexpr int kMaxDepth = 64;
// internal/abi.Kind values (the same in every supported version).
constexpr uint8_t kKindMask = 0x1f, kKindArray = 17, kKindStruct = 25;
constexpr uint8_t kKindGCProg = 0x40;  // in Kind_ up to Go 1.23
constexpr uint8_t kTFlag0x10 = 0x10;   // UnrolledBitmap (1.22–1.23), GCMaskOnDemand (1.24+)

struct Header {
  uint64_t size, ptrbytes, gcdata;
  uint8_t kind;
  bool needs_build;  // no ready bitmap: build it from the structure
};

}  // namespace

TypeMasks::TypeMasks(const Process& p, const HeapLayout& L, const HeapSnapshot& snap)
    : p_(p), L_(L), snap_(snap) {}

Result<std::vector<std::byte>> TypeMasks::read(uint64_t addr, uint64_t n) const {
  if (auto it = snap_.side.find(addr); it != snap_.side.end() && it->second.size() >= n)
    return std::vector<std::byte>(it->second.begin(), it->second.begin() + n);
  std::vector<std::byte> out(n);
  auto got = p_.program().elf().read_vaddr(p_.link_addr(addr), out);
  if (!got.ok() || *got != n)
    return Error(Errc::kUnmapped, "type data at " + to_hex(addr) + " (" + std::to_string(n) +
                                      " bytes) is not in the executable");
  return out;
}

namespace {
Result<Header> header(const TypeMasks& tm, const HeapLayout& L, int minor, uint64_t t) {
  GOREF_TRY(auto b, tm.read(t, L.type_struct_size).context("abi.Type " + to_hex(t)));
  Header h;
  h.size = L.type_size.get(b);
  h.ptrbytes = L.type_ptrbytes.get(b);
  h.gcdata = L.type_gcdata.get(b);
  uint8_t kind_ = static_cast<uint8_t>(L.type_kind.get(b));
  uint8_t tflag = static_cast<uint8_t>(L.type_tflag.get(b));
  h.kind = kind_ & kKindMask;
  if (h.ptrbytes > h.size || h.ptrbytes % 8 != 0 || h.ptrbytes / 64 > kMaxMaskBytes)
    return Error(Errc::kBadFormat, "abi.Type " + to_hex(t) + ": implausible size " +
                                       std::to_string(h.size) + " / ptrbytes " +
                                       std::to_string(h.ptrbytes));
  if (minor >= 24)
    h.needs_build = tflag & kTFlag0x10;  // GCMaskOnDemand: GCData is a **byte, maybe unset
  else
    h.needs_build = (kind_ & kKindGCProg) && !(tflag & kTFlag0x10);  // a GC program
  return h;
}
}  // namespace

Result<const TypeMask*> TypeMasks::mask(uint64_t t) {
  auto it = cache_.find(t);
  if (it == cache_.end()) it = cache_.emplace(t, build(t, 0)).first;
  if (!it->second.ok()) return it->second.error();
  return &*it->second;
}

Result<TypeMask> TypeMasks::build(uint64_t t, int depth) {
  GOREF_TRY(Header h, header(*this, L_, p_.program().go_minor(), t));
  TypeMask m;
  m.size = h.size;
  m.ptrbytes = h.ptrbytes;
  uint64_t words = h.ptrbytes / 8;
  if (words == 0) return m;
  if (!h.needs_build) {
    GOREF_TRY(auto bits, read(h.gcdata, (words + 7) / 8).context("GC mask of type " + to_hex(t)));
    m.bits.assign(reinterpret_cast<const uint8_t*>(bits.data()),
                  reinterpret_cast<const uint8_t*>(bits.data()) + bits.size());
    return m;
  }
  m.bits.assign((words + 7) / 8, 0);
  GOREF_CHECK(build_into(t, m.bits, 0, words, depth));
  return m;
}

Result<void> TypeMasks::build_into(uint64_t t, std::vector<uint8_t>& bits, uint64_t word_off,
                                   uint64_t limit, int depth) {
  if (depth > kMaxDepth) return Error(Errc::kBadFormat, "type " + to_hex(t) + " nests too deep");
  GOREF_TRY(Header h, header(*this, L_, p_.program().go_minor(), t));
  if (h.ptrbytes == 0) return {};
  if (!h.needs_build) {
    GOREF_TRY(const TypeMask* m, mask(t));
    for (uint64_t w = 0; w < m->ptrbytes / 8 && word_off + w < limit; ++w)
      if (m->pointer(w)) bits[(word_off + w) / 8] |= uint8_t(1u << ((word_off + w) % 8));
    return {};
  }
  GOREF_TRY(auto b, read(t, std::max(L_.arraytype_len, L_.structtype_fields + 8) + 8));
  if (h.kind == kKindArray) {
    uint64_t elem = load<uint64_t>(b, L_.arraytype_elem).value_or(0);
    uint64_t len = load<uint64_t>(b, L_.arraytype_len).value_or(0);
    GOREF_TRY(const TypeMask* em, mask(elem));
    if (em->size == 0 || em->size % 8 != 0 || len > h.size / em->size)
      return Error(Errc::kBadFormat, "array type " + to_hex(t) + ": bad element size");
    for (uint64_t i = 0; i < len; ++i) {
      uint64_t base = word_off + i * (em->size / 8);
      if (base >= limit) break;
      for (uint64_t w = 0; w < em->ptrbytes / 8 && base + w < limit; ++w)
        if (em->pointer(w)) bits[(base + w) / 8] |= uint8_t(1u << ((base + w) % 8));
    }
    return {};
  }
  if (h.kind == kKindStruct) {
    uint64_t fp = load<uint64_t>(b, L_.structtype_fields).value_or(0);
    uint64_t n = load<uint64_t>(b, L_.structtype_fields + 8).value_or(0);
    if (n > kMaxFields)
      return Error(Errc::kBadFormat, "struct type " + to_hex(t) + ": too many fields");
    GOREF_TRY(auto fb, read(fp, n * L_.structfield_size));
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t ft = load<uint64_t>(fb, i * L_.structfield_size + L_.structfield_typ).value_or(0);
      uint64_t off =
          load<uint64_t>(fb, i * L_.structfield_size + L_.structfield_offset).value_or(0);
      if (off >= h.size) continue;  // a pointer field is word-aligned in any valid type
      GOREF_CHECK(build_into(ft, bits, word_off + off / 8, limit, depth + 1));
    }
    return {};
  }
  return Error(Errc::kBadFormat, "type " + to_hex(t) + " (kind " + std::to_string(h.kind) +
                                     ") has no GC mask and is neither an array nor a struct");
}

}  // namespace goref::runtime
