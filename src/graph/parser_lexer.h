// The token level of the graph text format (docs/ir.md), for parser.cpp: whitespace and '#'
// comments, names, quoted strings, numbers and the other constants, byte offsets as "line L,
// column C", and the conversion of a constant to the NodeArg its schema slot holds. Parser
// (parser.cpp) reads the grammar on top of it.
//
// Needs: text of any bytes. Guarantees: every read either advances past a well-formed token or
// throws std::invalid_argument("line L, column C: <what>") through fail(), one printable line of
// at most kMaxMessage characters; numbers are read with std::from_chars (out of range is an error,
// never UB). Not thread-safe (one lexer per parse).
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/node_args.h"
#include "tensor/message_text.h"

namespace aotgrad::graph::parser_detail {

inline constexpr int kMaxNesting = 64;
inline constexpr size_t kMaxDims = 64;
inline constexpr size_t kMaxMessage = 300;

// A piece of the user's text as a message quotes it: escaped and at most 48 characters.
inline std::string token(std::string_view text) {
  return escape_for_message(text, 48);
}

struct Literal {
  enum class Kind { none, value, integer, floating, boolean, dtype, string, list };
  Kind kind = Kind::none;
  size_t pos = 0;
  ValueId value;
  int64_t i = 0;
  double d = 0.0;
  bool b = false;
  DType dtype = DType::f32;
  std::string s;  // string contents, or the value's name
  std::vector<Literal> items;
};

inline std::string literal_desc(const Literal& l) {
  switch (l.kind) {
    case Literal::Kind::none:
      return "none";
    case Literal::Kind::value:
      return "a tensor value (%" + token(l.s) + ")";
    case Literal::Kind::integer:
      return "an integer";
    case Literal::Kind::floating:
      return "a float";
    case Literal::Kind::boolean:
      return "a bool";
    case Literal::Kind::dtype:
      return "a dtype";
    case Literal::Kind::string:
      return "a string";
    case Literal::Kind::list:
      return "a list";
  }
  return "?";
}

inline bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

class GraphLexer {
 protected:
  explicit GraphLexer(std::string_view text) : text_(text) {}

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  void skip_inline_space() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  void expect(char c, std::string_view where) {
    if (peek() != c)
      fail(pos_,
           std::string("expected '") + c + "' " + std::string(where) + ", found " + found_text());
    ++pos_;
  }

  std::string found_text() const {
    if (at_end()) return "the end of the text";
    auto c = static_cast<unsigned char>(text_[pos_]);
    if (c == '\n') return "the end of the line";
    if (c < 0x20 || c >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      return std::string("the byte 0x") + kHex[c >> 4] + kHex[c & 0xf];
    }
    return std::string("'") + static_cast<char>(c) + "'";
  }

  std::string word() {
    size_t start = pos_;
    while (!at_end() && is_word_char(text_[pos_])) ++pos_;
    if (start == pos_) fail(pos_, "expected a name, found " + found_text());
    return std::string(text_.substr(start, pos_ - start));
  }

  std::string quoted_string() {
    size_t start = pos_;
    expect('"', "to open a string");
    std::string out;
    while (true) {
      if (at_end() || text_[pos_] == '\n') fail(start, "unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      ++pos_;
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'x': {
          unsigned v = 0;
          auto r = std::from_chars(text_.data() + pos_,
                                   text_.data() + std::min(pos_ + 2, text_.size()), v, 16);
          if (r.ptr != text_.data() + pos_ + 2) fail(pos_ - 2, "bad \\x escape (two hex digits)");
          pos_ += 2;
          out += static_cast<char>(v);
          break;
        }
        default:
          fail(pos_ - 2, "unknown escape in string (use \\\" \\\\ \\n \\t \\r \\xHH)");
      }
    }
  }

  // A graph or value name: [A-Za-z0-9_.]+ or a quoted string.
  std::string name() { return peek() == '"' ? quoted_string() : word(); }

  // A '#' comment on the rest of the current line, trimmed; nullopt when there is none.
  std::optional<std::string> trailing_comment() {
    skip_inline_space();
    if (peek() != '#') return std::nullopt;
    size_t start = ++pos_;
    while (!at_end() && text_[pos_] != '\n') ++pos_;
    std::string_view d = text_.substr(start, pos_ - start);
    size_t b = d.find_first_not_of(" \t\r"), e = d.find_last_not_of(" \t\r");
    return b == std::string_view::npos ? std::string() : std::string(d.substr(b, e - b + 1));
  }

  // After a signature or return entry: consumes the separating comma, if any, and the entry's
  // descriptor (a '#' comment on the same line that starts like one; other comments are just
  // comments). Returns whether a comma followed.
  bool entry_end(Descriptor& desc) {
    skip_inline_space();
    bool comma = peek() == ',';
    if (comma) ++pos_;
    skip_inline_space();
    size_t comment_pos = pos_;
    if (auto d = trailing_comment(); d && looks_like_descriptor(*d)) {
      try {
        desc = parse_descriptor(*d);
      } catch (const std::invalid_argument& e) {
        fail(comment_pos, e.what());
      }
    }
    if (!comma) {
      skip_space();
      comma = peek() == ',';
      if (comma) ++pos_;
    }
    return comma;
  }

  // After a node statement: "# from %name" records the forward value the node came from (a
  // backward node's origin); any other comment is just a comment.
  void node_origin(Node& node) {
    skip_inline_space();
    if (peek() != '#') return;
    size_t save = pos_++;
    skip_inline_space();
    if (text_.substr(pos_, 6) != "from %") {
      pos_ = save;
      return;
    }
    pos_ += 6;
    node.origin = name();
    while (!at_end() && text_[pos_] != '\n') ++pos_;  // the rest of the comment
  }

  int64_t integer() {
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    int64_t v = 0;
    auto r = std::from_chars(text_.data() + start, text_.data() + pos_, v);
    if (r.ec == std::errc::result_out_of_range)
      fail(start, "integer " + token(text_.substr(start, pos_ - start)) +
                      " out of range (integers are 64-bit signed)");
    if (r.ec != std::errc() || r.ptr != text_.data() + pos_) {
      pos_ = start;
      fail(start, "expected an integer, found " + found_text());
    }
    return v;
  }

  // "line L, column C" of byte offset `pos` (1-based; columns count bytes).
  std::string location(size_t pos) const {
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < pos && i < text_.size(); ++i)
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    return "line " + std::to_string(line) + ", column " + std::to_string(pos - line_start + 1);
  }

  [[noreturn]] void fail(size_t pos, std::string what) const {
    if (what.size() > kMaxMessage) what = what.substr(0, kMaxMessage - 3) + "...";
    throw std::invalid_argument(location(pos) + ": " + what);
  }

  // ---- constants ----
  void number(Literal& l) {
    size_t start = pos_;
    if (text_.substr(pos_, 4) == "-inf" &&
        !is_word_char(text_.size() > pos_ + 4 ? text_[pos_ + 4] : ' ')) {
      pos_ += 4;
      l.kind = Literal::Kind::floating;
      l.d = -std::numeric_limits<double>::infinity();
      return;
    }
    if (peek() == '-') ++pos_;
    bool is_float = false;
    auto digits = [&] {
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    };
    digits();
    if (peek() == '.') {
      is_float = true;
      ++pos_;
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      is_float = true;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      digits();
    }
    if (is_word_char(peek())) {
      while (is_word_char(peek())) ++pos_;
      fail(start, "malformed number " + token(text_.substr(start, pos_ - start)));
    }
    const char* b = text_.data() + start;
    const char* e = text_.data() + pos_;
    if (is_float) {
      l.kind = Literal::Kind::floating;
      auto r = std::from_chars(b, e, l.d);
      if (r.ec == std::errc::result_out_of_range)
        fail(start, "float " + token(text_.substr(start, pos_ - start)) +
                        " out of range (floats are 64-bit doubles)");
      if (r.ec != std::errc() || r.ptr != e)
        fail(start, "malformed number " + token(text_.substr(start, pos_ - start)));
    } else {
      pos_ = start;
      l.kind = Literal::Kind::integer;
      l.i = integer();
    }
  }

  void word_literal(Literal& l) {
    std::string w = word();
    if (w == "none") {
      l.kind = Literal::Kind::none;
    } else if (w == "true" || w == "false") {
      l.kind = Literal::Kind::boolean;
      l.b = w == "true";
    } else if (w == "inf" || w == "nan") {
      l.kind = Literal::Kind::floating;
      l.d = w == "inf" ? std::numeric_limits<double>::infinity()
                       : std::numeric_limits<double>::quiet_NaN();
    } else {
      try {
        l.dtype = parse_dtype(w);
        l.kind = Literal::Kind::dtype;
      } catch (const std::invalid_argument&) {
        fail(l.pos, "unknown constant '" + token(w) +
                        "' (constants are numbers, true, false, none, inf, nan, dtypes, strings "
                        "and lists; values start with %)");
      }
    }
  }

  // A list literal for an int[] or bool[] argument. A bool[] (output_mask) is stored as 0 / 1
  // (ops::ArgSchema::bool_elements) and reads `[true, false]`; 0 / 1 are accepted too, which is
  // how an IntList prints.
  IntList int_list(const Literal& l, const ops::ArgSchema& s, const ops::OpDef& op) const {
    IntList v;
    for (const Literal& item : l.items) {
      if (item.kind == Literal::Kind::integer && (!s.bool_elements || item.i == 0 || item.i == 1))
        v.push_back(item.i);
      else if (item.kind == Literal::Kind::boolean && s.bool_elements)
        v.push_back(item.b ? 1 : 0);
      else
        fail(item.pos,
             "argument '" + s.name + "' of " + std::string(op.name) + " expects a list of " +
                 (s.bool_elements ? "bools (true / false)" : "integers") + ", got " +
                 (item.kind == Literal::Kind::integer ? "the integer " + std::to_string(item.i)
                                                      : literal_desc(item)));
    }
    return v;
  }

  // The literal as the alternative the schema type is stored as.
  NodeArg convert(const Literal& l, const ops::ArgSchema& s, const ops::OpDef& op) const {
    using K = Literal::Kind;
    using ops::ArgType;
    auto mismatch = [&]() {
      fail(l.pos, "argument '" + s.name + "' of " + std::string(op.name) + " expects " +
                      schema_type_text(s) + ", got " + literal_desc(l));
    };
    if (l.kind == K::none) {
      if (!(s.optional || s.type == ArgType::generator)) mismatch();
      return std::monostate{};
    }
    switch (s.type) {
      case ArgType::tensor:
        if (l.kind == K::value) return l.value;
        break;
      case ArgType::tensor_list:
        if (l.kind == K::list) {
          ValueList v;
          for (const Literal& item : l.items) {
            if (item.kind == K::none && s.optional_elements) {
              v.push_back(kNoValue);
              continue;
            }
            if (item.kind != K::value)
              fail(item.pos, "argument '" + s.name + "' of " + std::string(op.name) +
                                 " expects a list of tensor values" +
                                 (s.optional_elements ? " or none" : "") + ", got " +
                                 literal_desc(item));
            v.push_back(item.value);
          }
          return v;
        }
        break;
      case ArgType::scalar:
        if (l.kind == K::integer) return Scalar(l.i);
        if (l.kind == K::floating) return Scalar(l.d);
        if (l.kind == K::boolean) return Scalar(l.b);
        break;
      case ArgType::int_:
        if (l.kind == K::integer) return l.i;
        break;
      case ArgType::int_list:
        if (l.kind == K::list) return int_list(l, s, op);
        // ATen lets int[N] take one int, repeated N times (int[1]: a one-element list).
        if (l.kind == K::integer && !s.bool_elements)
          return IntList(s.list_size > 1 ? s.list_size : 1, l.i);
        break;
      case ArgType::float_:
        if (l.kind == K::floating) return l.d;
        if (l.kind == K::integer) return static_cast<double>(l.i);
        break;
      case ArgType::bool_:
        if (l.kind == K::boolean) return l.b;
        break;
      case ArgType::dtype:
        if (l.kind == K::dtype) return l.dtype;
        break;
      case ArgType::string:
        if (l.kind == K::string) return l.s;
        break;
      case ArgType::generator:
        break;
    }
    mismatch();
    return {};
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace aotgrad::graph::parser_detail
