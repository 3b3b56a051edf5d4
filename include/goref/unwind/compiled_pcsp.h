// CompiledPcsp: every function's pcsp table (the SP delta at each pc, see binary/pcvalue.h)
// decoded once into flat sorted arrays, so the SP delta at a pc is a binary search over a few
// run ends instead of a varint decode from the function's entry. Built for all functions at once
// (build(kEager)) or per function on first use (kLazy).
//
// A function whose table is missing or malformed is recorded as such and answers nullopt, as
// Func::pcsp_at does. Lookups on an eager table are const and thread-safe; a lazy table builds
// on lookup and must not be shared between threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "goref/base/bytes.h"
#include "goref/base/result.h"
#include "goref/binary/pclntab.h"

namespace goref::unwind {

class CompiledPcsp {
 public:
  enum class Mode { kEager, kLazy };

  // Copies the pctab out of tab (found through the pcHeader) and, for kEager, decodes every
  // function's pcsp. tab must outlive the CompiledPcsp.
  [[nodiscard]] static Result<CompiledPcsp> build(const binary::Pclntab& tab, Mode mode);

  // The SP delta at link_pc in f (f from the same Pclntab); builds f's runs if needed.
  [[nodiscard]] std::optional<int32_t> sp_delta(const binary::Func& f, uint64_t link_pc);
  // Same, for an already built function; nullopt when f has not been built (lazy mode).
  [[nodiscard]] std::optional<int32_t> lookup(const binary::Func& f, uint64_t link_pc) const;

  [[nodiscard]] size_t built_functions() const { return built_; }
  [[nodiscard]] size_t runs() const { return ends_.size(); }
  [[nodiscard]] std::chrono::nanoseconds build_time() const { return build_time_; }
  // Host memory held by the decoded runs and the per-function index.
  [[nodiscard]] size_t memory_bytes() const;

 private:
  // Per function: its runs are ends_/deltas_[begin, begin + count). count kNotBuilt: not
  // decoded yet; kNoTable: no pcsp table or a malformed one.
  struct Span {
    uint32_t begin = 0;
    uint32_t count = kNotBuilt;
  };
  static constexpr uint32_t kNotBuilt = UINT32_MAX;
  static constexpr uint32_t kNoTable = UINT32_MAX - 1;

  void build_one(const binary::Func& f);

  std::vector<std::byte> pctab_;
  uint32_t quantum_ = 1;
  std::vector<Span> spans_;
  std::vector<uint32_t> ends_;   // run end, as an offset from the function's entry
  std::vector<int32_t> deltas_;  // SP delta over the run
  size_t built_ = 0;
  std::chrono::nanoseconds build_time_{0};
};

}  // namespace goref::unwind
