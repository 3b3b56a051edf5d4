// Strong types for process and thread ids, so a tid cannot be passed where a pid is expected.
#pragma once

#include <sys/types.h>

#include <compare>
#include <string>

namespace goref {

class Pid {
 public:
  constexpr explicit Pid(pid_t v) : v_(v) {}
  [[nodiscard]] constexpr pid_t value() const { return v_; }
  constexpr auto operator<=>(const Pid&) const = default;
  [[nodiscard]] std::string str() const { return std::to_string(v_); }

 private:
  pid_t v_;
};

class Tid {
 public:
  constexpr explicit Tid(pid_t v) : v_(v) {}
  [[nodiscard]] constexpr pid_t value() const { return v_; }
  constexpr auto operator<=>(const Tid&) const = default;
  [[nodiscard]] std::string str() const { return std::to_string(v_); }

 private:
  pid_t v_;
};

}  // namespace goref
