// Error and Result<T>: every operation on target data or input files reports failure as a value
// with a category (which the CLI maps to an exit code) and a message that gathers context as it
// travels up ("mspan 0x…: field nelems: short read"). Nothing in goref throws on bad input.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace goref {

enum class Errc {
  kNoSuchProcess,  // pid does not exist or exited while being read
  kPermission,     // ptrace / /proc access refused
  kNotFound,       // file, symbol, type, field or variable not present
  kNotGo,          // the program is not a Go program
  kNoDwarf,        // DWARF needed but stripped
  kUnsupported,    // a Go version, architecture or format goref does not handle
  kBadFormat,      // malformed ELF, core, pclntab, DWARF or profile
  kUnmapped,       // target address not mapped / not in the core
  kShortRead,      // a read returned fewer bytes than needed
  kIo,             // a host I/O error
  kUsage,          // the command line is wrong
  kInterrupted,    // stopped by a signal
  kInternal,       // a goref bug
};

std::string_view errc_name(Errc c);

class [[nodiscard]] Error {
 public:
  Error(Errc code, std::string message) : code_(code), message_(std::move(message)) {}

  [[nodiscard]] Errc code() const { return code_; }
  [[nodiscard]] const std::string& message() const { return message_; }

  // Prefixes the message with "ctx: ". Use at each layer boundary.
  [[nodiscard]] Error context(std::string_view ctx) && {
    message_.insert(0, std::string(ctx) + ": ");
    return std::move(*this);
  }

 private:
  Errc code_;
  std::string message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error err) : v_(std::in_place_index<1>, std::move(err)) {}  // NOLINT

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  [[nodiscard]] T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  [[nodiscard]] const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  [[nodiscard]] T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  [[nodiscard]] const Error& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  [[nodiscard]] Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }
  [[nodiscard]] T value_or(T dflt) const& { return ok() ? std::get<0>(v_) : std::move(dflt); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // Adds context to the error, if any.
  [[nodiscard]] Result context(std::string_view ctx) && {
    if (ok()) return std::move(*this);
    return std::move(*this).error().context(ctx);
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error err) : err_(std::move(err)), has_err_(true) {}  // NOLINT

  [[nodiscard]] bool ok() const { return !has_err_; }
  explicit operator bool() const { return ok(); }
  [[nodiscard]] const Error& error() const& {
    assert(has_err_);
    return err_;
  }
  [[nodiscard]] Error&& error() && {
    assert(has_err_);
    return std::move(err_);
  }
  [[nodiscard]] Result context(std::string_view ctx) && {
    if (ok()) return std::move(*this);
    return std::move(*this).error().context(ctx);
  }

 private:
  Error err_{Errc::kInternal, ""};
  bool has_err_ = false;
};

}  // namespace goref

#define GOREF_CONCAT_INNER(a, b) a##b
#define GOREF_CONCAT(a, b) GOREF_CONCAT_INNER(a, b)

// GOREF_TRY(auto x, expr): evaluates expr (a Result); on error returns the error from the
// enclosing function, otherwise moves the value into the declaration.
#define GOREF_TRY(decl, expr)                                   \
  auto GOREF_CONCAT(goref_r_, __LINE__) = (expr);               \
  if (!GOREF_CONCAT(goref_r_, __LINE__).ok())                   \
    return std::move(GOREF_CONCAT(goref_r_, __LINE__)).error(); \
  decl = std::move(GOREF_CONCAT(goref_r_, __LINE__)).value()

// GOREF_CHECK(expr): for Result<void>; returns the error, if any.
#define GOREF_CHECK(expr)                                   \
  do {                                                      \
    auto goref_r_ = (expr);                                 \
    if (!goref_r_.ok()) return std::move(goref_r_).error(); \
  } while (0)
