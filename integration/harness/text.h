// Pulling numbers out of command output next to a fixed marker ("123 samples in", "in bound
// checks   45"). Plain string search: std::regex trips GCC 12's -Wmaybe-uninitialized under
// AddressSanitizer, and these formats need no more.
#pragma once

#include <cctype>
#include <string>

namespace goref::testing {

// The decimal number that ends right before the first `marker` in text (spaces between are
// skipped), or -1.
inline long number_before(const std::string& text, const std::string& marker, size_t from = 0) {
  size_t at = text.find(marker, from);
  if (at == std::string::npos) return -1;
  size_t end = at;
  while (end > 0 && text[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
  return begin == end ? -1 : std::stol(text.substr(begin, end - begin));
}

// The decimal number that follows the first `marker` in text (whitespace skipped), or -1.
inline long number_after(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  if (at == std::string::npos) return -1;
  size_t p = at + marker.size();
  while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
  size_t q = p;
  while (q < text.size() && std::isdigit(static_cast<unsigned char>(text[q]))) ++q;
  return q == p ? -1 : std::stol(text.substr(p, q - p));
}

}  // namespace goref::testing
