// TypeMasks: the pointer bitmap of a Go runtime type (internal/abi.Type), as the garbage collector
// uses it to scan an object of that type: bit i set means word i of the value holds a pointer.
// Type descriptors are read from the executable file (they are read-only data, so the target
// need not be stopped), or from the heap snapshot for the few that live in target memory.
//
// Where the type carries no ready bitmap — Go 1.24+ types whose mask the runtime builds on
// demand (TFlagGCMaskOnDemand; from Go 1.27 any type with more than 1 KiB of pointers), or a GC
// program before 1.24 — the mask is built from the type's structure the way the runtime's
// buildGCMask does. Results are cached per type address. Not safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "goref/base/result.h"
#include "goref/runtime/heap_snapshot.h"
#include "goref/runtime/process.h"

namespace goref::runtime {

struct TypeMask {
  uint64_t size = 0;          // Size_
  uint64_t ptrbytes = 0;      // PtrBytes: the prefix that may hold pointers
  std::vector<uint8_t> bits;  // ptrbytes/8 bits
  [[nodiscard]] bool pointer(uint64_t word) const {
    return word / 8 < bits.size() && ((bits[word / 8] >> (word % 8)) & 1);
  }
};

class TypeMasks {
 public:
  // p, L and snap must outlive this.
  TypeMasks(const Process& p, const HeapLayout& L, const HeapSnapshot& snap);

  // The mask of the type at runtime address t; an error if it cannot be read or is implausible.
  [[nodiscard]] Result<const TypeMask*> mask(uint64_t t);

  // Bytes of target memory at a runtime address, from the executable or the snapshot.
  [[nodiscard]] Result<std::vector<std::byte>> read(uint64_t addr, uint64_t n) const;

 private:
  Result<TypeMask> build(uint64_t t, int depth);
  Result<void> build_into(uint64_t t, std::vector<uint8_t>& bits, uint64_t word_off,
                          uint64_t limit_words, int depth);

  const Process& p_;
  const HeapLayout& L_;
  const HeapSnapshot& snap_;
  std::unordered_map<uint64_t, Result<TypeMask>> cache_;
};

}  // namespace goref::runtime
