#include "goref/target/fake_target.h"

#include <algorithm>
#include <cstring>

namespace goref::target {

void FakeTarget::map(Addr addr, std::vector<std::byte> bytes, std::string path, bool writable) {
  Mapping m;
  m.range = {addr, addr + bytes.size()};
  m.read = true;
  m.write = writable;
  m.path = std::move(path);
  mappings_.push_back(m);
  std::sort(mappings_.begin(), mappings_.end(),
            [](const Mapping& a, const Mapping& b) { return a.range.start < b.range.start; });
  regions_[addr.value()] = std::move(bytes);
}

void FakeTarget::add_thread(Tid tid, Registers regs) {
  threads_.emplace_back(tid, regs);
}

Result<size_t> FakeTarget::read_some(Addr addr, std::span<std::byte> buf) {
  size_t done = 0;
  while (done < buf.size()) {
    uint64_t a = addr.value() + done;
    auto it = regions_.upper_bound(a);
    if (it == regions_.begin()) break;
    --it;
    uint64_t off = a - it->first;
    if (off >= it->second.size()) break;
    size_t n = std::min<size_t>(buf.size() - done, it->second.size() - off);
    std::memcpy(buf.data() + done, it->second.data() + off, n);
    done += n;
  }
  if (done == 0 && !buf.empty())
    return Error(Errc::kUnmapped, "address " + addr.hex() + " is not mapped");
  return done;
}

std::vector<Tid> FakeTarget::threads() const {
  std::vector<Tid> out;
  for (const auto& [tid, regs] : threads_) out.push_back(tid);
  return out;
}

std::optional<uint64_t> FakeTarget::auxv(uint64_t type) const {
  auto it = auxv_.find(type);
  if (it == auxv_.end()) return std::nullopt;
  return it->second;
}

Result<Registers> FakeTarget::registers(Tid tid) const {
  for (const auto& [t, regs] : threads_)
    if (t == tid) return regs;
  return Error(Errc::kNotFound, "thread " + tid.str() + " not in fake target");
}

}  // namespace goref::target
