// FakeTarget: a target whose memory is built from byte vectors, for unit tests of code that
// parses target memory. It behaves like the real backends at region edges (short reads,
// unmapped addresses) so parsers can be tested against them.
#pragma once

#include <map>
#include <vector>

#include "goref/target/target.h"

namespace goref::target {

class FakeTarget final : public Target {
 public:
  explicit FakeTarget(Arch arch = Arch::kAmd64, Pid pid = Pid(1)) : arch_(arch), pid_(pid) {}

  // Maps bytes at addr (read-only unless writable is set). Regions must not overlap.
  void map(Addr addr, std::vector<std::byte> bytes, std::string path = {}, bool writable = true);
  void add_thread(Tid tid, Registers regs);
  void set_executable(std::string path) { exe_ = std::move(path); }
  void set_auxv(uint64_t type, uint64_t value) { auxv_[type] = value; }

  Result<size_t> read_some(Addr addr, std::span<std::byte> buf) override;
  Kind kind() const override { return Kind::kFake; }
  Arch arch() const override { return arch_; }
  Pid pid() const override { return pid_; }
  const std::vector<Mapping>& mappings() const override { return mappings_; }
  std::vector<Tid> threads() const override;
  Result<Registers> registers(Tid tid) const override;
  std::string executable_path() const override { return exe_; }
  std::optional<uint64_t> auxv(uint64_t type) const override;

 private:
  Arch arch_;
  Pid pid_;
  std::map<uint64_t, std::vector<std::byte>> regions_;  // by start address
  std::vector<Mapping> mappings_;
  std::vector<std::pair<Tid, Registers>> threads_;
  std::string exe_;
  std::map<uint64_t, uint64_t> auxv_;
};

}  // namespace goref::target
