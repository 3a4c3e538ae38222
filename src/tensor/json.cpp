// The JSON reader (json::parse) and string writer (json::append_string); see json.h.
//
// Reading guide: parse() checks the whole text is UTF-8 first, so the grammar below only meets
// valid code points; Parser is a recursive descent over RFC 8259 whose depth is bounded, so no
// input can exhaust the stack.
#include "tensor/json.h"

#include <cstdint>
#include <cstring>

#include "tensor/message_text.h"

namespace aotgrad::json {
namespace {

// Length of the UTF-8 sequence starting at s[i] (checked: shortest form, no surrogates, at most
// U+10FFFF), or 0 when it is not one.
size_t utf8_length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xc0) == 0x80; };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;  // overlong
    if (c == 0xed && b(1) > 0x9f) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xf4 && b(1) > 0x8f) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

// RFC 8259 over text already known to be valid UTF-8.
class Parser {
 public:
  Parser(std::string_view text, int max_depth) : s_(text), max_depth_(max_depth) {}

  Value document() {
    Value v = value(0);
    skip_space();
    if (pos_ != s_.size())
      error("unexpected " + what_is_here() + " after the JSON " +
            (v.kind == Value::Kind::object ? "object" : "value"));
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& problem) const { throw ParseError(problem, pos_); }
  std::string what_is_here() const {
    if (pos_ >= s_.size()) return "the end";
    return "'" + escape_for_message(s_.substr(pos_, 1), 8) + "'";
  }
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (pos_ >= s_.size() || s_[pos_] != c)
      error(std::string("expected '") + c + "', found " + what_is_here());
    ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Value value(int depth) {
    if (depth > max_depth_) error("nesting deeper than " + std::to_string(max_depth_) + " levels");
    skip_space();
    if (pos_ >= s_.size()) error("expected a value, found the end");
    Value v;
    char c = s_[pos_];
    if (c == '{') {
      v.kind = Value::Kind::object;
      ++pos_;
      if (take('}')) return v;
      do {
        skip_space();
        std::string key = string_literal();
        expect(':');
        v.keys.push_back(std::move(key));
        v.values.push_back(value(depth + 1));
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      v.kind = Value::Kind::array;
      ++pos_;
      if (take(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (take(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Value::Kind::string;
      v.text = string_literal();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Value::Kind::number;
      v.text = number_literal();
    } else {
      for (const char* word : {"true", "false", "null"})
        if (s_.substr(pos_, std::strlen(word)) == word) {
          pos_ += std::strlen(word);
          v.kind = word[0] == 'n' ? Value::Kind::null : Value::Kind::boolean;
          v.text = word;
          return v;
        }
      error("expected a value, found " + what_is_here());
    }
    return v;
  }

  std::string number_literal() {
    size_t start = pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      if (pos_ == from) error("malformed number");
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0')
      ++pos_;  // JSON allows no leading zeros
    else
      digits();
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits();
    }
    return std::string(s_.substr(start, pos_ - start));
  }

  uint32_t hex4() {
    if (s_.size() - pos_ < 4) error("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      char c = s_[pos_];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) error("malformed \\u escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  // The escape after a backslash, appended to `out`.
  void escape(std::string& out) {
    if (pos_ >= s_.size()) error("unterminated string");
    char e = s_[pos_++];
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        return;
      case 'b':
        out += '\b';
        return;
      case 'f':
        out += '\f';
        return;
      case 'n':
        out += '\n';
        return;
      case 'r':
        out += '\r';
        return;
      case 't':
        out += '\t';
        return;
      case 'u':
        append_utf8(out, unicode_escape());
        return;
      default:
        --pos_;
        error("unknown escape '\\" + escape_for_message(s_.substr(pos_, 1), 8) + "'");
    }
  }

  std::string string_literal() {
    if (pos_ >= s_.size() || s_[pos_] != '"') error("expected a string, found " + what_is_here());
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) error("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        error("unescaped control character in a string");
      }
      if (c == '\\')
        escape(out);
      else
        out += c;
    }
  }

  // After "\u": one code point, or a surrogate pair written as two escapes.
  uint32_t unicode_escape() {
    uint32_t cp = hex4();
    if (cp >= 0xdc00 && cp <= 0xdfff) error("lone low surrogate in a \\u escape");
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (s_.substr(pos_, 2) != "\\u") error("high surrogate without its low half");
      pos_ += 2;
      uint32_t low = hex4();
      if (low < 0xdc00 || low > 0xdfff) error("high surrogate without its low half");
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    return cp;
  }

  std::string_view s_;
  int max_depth_;
  size_t pos_ = 0;
};

}  // namespace

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::null:
      return "null";
    case Value::Kind::boolean:
      return "a boolean";
    case Value::Kind::number:
      return "a number";
    case Value::Kind::string:
      return "a string";
    case Value::Kind::array:
      return "an array";
    case Value::Kind::object:
      return "an object";
  }
  return "?";
}

std::optional<size_t> invalid_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

Value parse(std::string_view text, int max_depth) {
  if (auto at = invalid_utf8_at(text)) throw ParseError("not valid UTF-8", *at);
  return Parser(text, max_depth).document();
}

void append_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (b < 0x20) {
          out += "\\u00";
          out += kHex[b >> 4];
          out += kHex[b & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace aotgrad::json
