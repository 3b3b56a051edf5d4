// JSON string escaping shared by the commands that print JSON (RFC 8259: quote, backslash and
// control characters escaped; everything else, UTF-8 included, passed through).
#pragma once

#include <string>
#include <string_view>

namespace goref::cli {

[[nodiscard]] std::string json_escape(std::string_view s);
// json_escape(s) between double quotes.
[[nodiscard]] inline std::string json_string(std::string_view s) {
  return "\"" + json_escape(s) + "\"";
}

}  // namespace goref::cli
