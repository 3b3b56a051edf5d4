// A minimal JSON reader for goref's --format json outputs (objects, arrays, strings, numbers,
// booleans, null); enough to check the documented shapes without a JSON library.
#pragma once

#include <cctype>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace goref::testing {

struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>,
               std::map<std::string, Json>>
      v;
  [[nodiscard]] const Json* get(const std::string& k) const {
    auto* m = std::get_if<std::map<std::string, Json>>(&v);
    if (!m) return nullptr;
    auto it = m->find(k);
    return it == m->end() ? nullptr : &it->second;
  }
  [[nodiscard]] std::string str() const {
    auto* s = std::get_if<std::string>(&v);
    return s ? *s : std::string();
  }
  [[nodiscard]] double num(double dflt) const {
    auto* n = std::get_if<double>(&v);
    return n ? *n : dflt;
  }
  [[nodiscard]] bool boolean() const {
    auto* b = std::get_if<bool>(&v);
    return b && *b;
  }
  [[nodiscard]] const std::vector<Json>* array() const {
    return std::get_if<std::vector<Json>>(&v);
  }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& s) : s_(s) {}
  bool parse(Json& out) {
    if (!value(out, 0)) return false;
    ws();
    return p_ == s_.size();
  }

 private:
  void ws() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  bool lit(const char* w) {
    size_t n = std::char_traits<char>::length(w);
    if (s_.compare(p_, n, w) != 0) return false;
    p_ += n;
    return true;
  }
  bool string(std::string& out) {
    if (p_ >= s_.size() || s_[p_] != '"') return false;
    ++p_;
    while (p_ < s_.size() && s_[p_] != '"') {
      char c = s_[p_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= s_.size()) return false;
      char e = s_[p_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (p_ + 4 > s_.size()) return false;
          unsigned cp = std::stoul(s_.substr(p_, 4), nullptr, 16);
          p_ += 4;
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xc0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3f));
          } else {
            out += static_cast<char>(0xe0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
          }
          break;
        }
        default:
          out += e;
      }
    }
    if (p_ >= s_.size()) return false;
    ++p_;
    return true;
  }
  bool value(Json& out, int depth) {
    if (depth > 64) return false;
    ws();
    if (p_ >= s_.size()) return false;
    char c = s_[p_];
    if (c == '{') {
      ++p_;
      std::map<std::string, Json> m;
      ws();
      if (p_ < s_.size() && s_[p_] == '}') {
        ++p_;
      } else {
        for (;;) {
          ws();
          std::string k;
          if (!string(k)) return false;
          ws();
          if (!lit(":")) return false;
          if (!value(m[k], depth + 1)) return false;
          ws();
          if (lit(",")) continue;
          if (lit("}")) break;
          return false;
        }
      }
      out.v = std::move(m);
      return true;
    }
    if (c == '[') {
      ++p_;
      std::vector<Json> a;
      ws();
      if (p_ < s_.size() && s_[p_] == ']') {
        ++p_;
      } else {
        for (;;) {
          a.emplace_back();
          if (!value(a.back(), depth + 1)) return false;
          ws();
          if (lit(",")) continue;
          if (lit("]")) break;
          return false;
        }
      }
      out.v = std::move(a);
      return true;
    }
    if (c == '"') {
      std::string s;
      if (!string(s)) return false;
      out.v = std::move(s);
      return true;
    }
    if (lit("true")) return out.v = true, true;
    if (lit("false")) return out.v = false, true;
    if (lit("null")) return out.v = nullptr, true;
    size_t end = p_;
    while (end < s_.size() &&
           (std::isdigit(static_cast<unsigned char>(s_[end])) || s_[end] == '-' || s_[end] == '+' ||
            s_[end] == '.' || s_[end] == 'e' || s_[end] == 'E'))
      ++end;
    if (end == p_) return false;
    out.v = std::stod(s_.substr(p_, end - p_));
    p_ = end;
    return true;
  }
  const std::string& s_;
  size_t p_ = 0;
};

}  // namespace goref::testing
