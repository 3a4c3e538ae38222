// Python literal reader for .npy headers (py_literal.h). Reading guide: Lexer turns the text into
// CPython's tokens (numbers, strings, names, brackets, operators, logical newlines at bracket depth
// 0), applying the tokenizer's rules on what may follow a number, string escapes and indentation;
// Parser builds the value with ast.literal_eval's rules: one sign on a numeric constant, `a+bj`
// only as real + imaginary, adjacent strings concatenated, no names but True/False/None.
// Recursion is bounded by the bracket depth (kMaxBrackets), which the lexer enforces.
#include "tensor/py_literal.h"

#include <cctype>
#include <stdexcept>

#include "tensor/json.h"
#include "tensor/message_text.h"

namespace aotgrad::npy {
namespace {

constexpr int kMaxBrackets = 200;  // CPython's tokenizer refuses the 201st open bracket

struct Token {
  enum class Kind { number, string, name, op, newline, end };
  enum class Num { integer, real, imaginary };
  Kind kind = Kind::end;
  size_t pos = 0;
  char op = 0;
  std::string text;    // name, or string contents
  bool bytes = false;  // string: b'...'
  Num num = Num::integer;
  int64_t i = 0;
  bool big = false;
};

bool is_ident_char(unsigned char c) {
  return std::isalnum(c) || c == '_' || c >= 0x80;
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

class Lexer {
 public:
  Lexer(std::string_view s, const PyLiteralOptions& o) : s_(s), o_(o) {}

  Token next() {
    if (!skip_blank()) return Token{.kind = Token::Kind::newline, .pos = pos_};
    if (at_end()) return Token{.kind = Token::Kind::end, .pos = pos_};
    line_has_token_ = true;
    char c = s_[pos_];
    if (std::string_view("()[]{},:+-").find(c) != std::string_view::npos) return op(c);
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos_ + 1 < s_.size() &&
         std::isdigit(static_cast<unsigned char>(s_[pos_ + 1]))))
      return number();
    if (c == '\'' || c == '"') return string("");
    if (is_ident_char(static_cast<unsigned char>(c))) {
      size_t start = pos_;
      std::string id = ident();
      if (!at_end() && (s_[pos_] == '\'' || s_[pos_] == '"')) {
        std::string prefix;
        for (char p : id) prefix += static_cast<char>(std::tolower(static_cast<unsigned char>(p)));
        if (prefix == "r" || prefix == "u" || prefix == "b" || prefix == "br" || prefix == "rb")
          return string(prefix);
        if (prefix == "f" || prefix == "fr" || prefix == "rf") fail(start, "an f-string");
      }
      return Token{.kind = Token::Kind::name, .pos = start, .text = id};
    }
    fail(pos_, "unexpected character '" + escape_for_message(s_.substr(pos_, 1)) + "'");
  }

  [[noreturn]] void fail(size_t pos, const std::string& what) const {
    throw std::invalid_argument(what + " at offset " + std::to_string(pos));
  }

 private:
  bool at_end() const { return pos_ >= s_.size(); }

  // Skips spaces, comments, line continuations and newlines inside brackets. Returns false when
  // it passed the end of a logical line (a newline at depth 0 after a token on that line).
  bool skip_blank() {
    while (!at_end()) {
      char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\f') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && s_[pos_] != '\n') ++pos_;
      } else if (c == '\\') {
        if (pos_ + 1 >= s_.size() || s_[pos_ + 1] != '\n')
          fail(pos_, "a backslash outside a string that does not end the line");
        pos_ += 2;
      } else if (c == '\n') {
        ++pos_;
        if (depth_ > 0) continue;
        check_indentation();
        if (line_has_token_) {
          line_has_token_ = false;
          return false;
        }
      } else {
        break;
      }
    }
    return true;
  }

  // At the start of a physical line at depth 0: CPython refuses an indented line that holds a
  // token ("unexpected indent"); blank and comment lines may be indented.
  void check_indentation() const {
    size_t p = pos_, indent = 0;
    for (; p < s_.size(); ++p) {
      if (s_[p] == ' ' || s_[p] == '\t')
        ++indent;
      else if (s_[p] == '\f')
        indent = 0;
      else
        break;
    }
    bool blank = p >= s_.size() || s_[p] == '\n' || s_[p] == '#';
    if (!blank && indent > 0) fail(p, "an indented line");
  }

  Token op(char c) {
    if (c == '(' || c == '[' || c == '{') {
      if (++depth_ > kMaxBrackets)
        fail(pos_, "brackets nested deeper than " + std::to_string(kMaxBrackets));
    } else if ((c == ')' || c == ']' || c == '}') && depth_ > 0) {
      --depth_;
    }
    return Token{.kind = Token::Kind::op, .pos = pos_++, .op = c};
  }

  std::string ident() {
    size_t start = pos_;
    while (!at_end() && is_ident_char(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  // Digits of `radix` with single underscores between them; returns how many digits.
  size_t digits(int radix, Token& t, bool accumulate) {
    size_t n = 0;
    while (!at_end()) {
      char c = s_[pos_];
      if (c == '_') {
        if (n == 0 && radix == 10) break;
        if (pos_ + 1 >= s_.size() || digit_value(s_[pos_ + 1]) >= radix)
          fail(pos_, "an invalid number");
        ++pos_;
        continue;
      }
      int d = digit_value(c);
      if (d >= radix) break;
      ++pos_;
      ++n;
      if (accumulate && !t.big &&
          (__builtin_mul_overflow(t.i, radix, &t.i) || __builtin_add_overflow(t.i, d, &t.i)))
        t.big = true;
    }
    return n;
  }

  Token number() {
    Token t{.kind = Token::Kind::number, .pos = pos_};
    char c = s_[pos_];
    char base = pos_ + 1 < s_.size() ? static_cast<char>(std::tolower(s_[pos_ + 1])) : 0;
    if (c == '0' && (base == 'x' || base == 'o' || base == 'b')) {
      pos_ += 2;
      if (digits(base == 'x' ? 16 : base == 'o' ? 8 : 2, t, true) == 0)
        fail(t.pos, "an invalid number");
    } else {
      size_t int_start = pos_;
      size_t int_digits = c == '.' ? 0 : digits(10, t, true);
      std::string_view int_text = s_.substr(int_start, pos_ - int_start);
      if (!at_end() && s_[pos_] == '.') {
        t.num = Token::Num::real;
        ++pos_;
        if (!at_end() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) digits(10, t, false);
      }
      if (!at_end() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
        t.num = Token::Num::real;
        ++pos_;
        if (!at_end() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
        if (digits(10, t, false) == 0) fail(t.pos, "an invalid number");
      }
      if (!at_end() && (s_[pos_] == 'j' || s_[pos_] == 'J')) {
        t.num = Token::Num::imaginary;
        ++pos_;
      }
      if (t.num == Token::Num::integer && int_digits > 1 && int_text[0] == '0' &&
          int_text.find_first_not_of("0_") != std::string_view::npos)
        fail(t.pos, "leading zeros in a decimal integer");
    }
    bool name_follows = !at_end() && is_ident_char(static_cast<unsigned char>(s_[pos_]));
    bool dropped = false;
    while (skip_long_suffix()) dropped = true;  // _filter_header drops every `L` in a row
    if (name_follows && !dropped) fail(t.pos, "an invalid number");
    return t;
  }

  // numpy.lib.format._filter_header drops a name token `L` that follows a number (in versions
  // 1.0 and 2.0), with only blanks or line continuations between them.
  bool skip_long_suffix() {
    if (!o_.drop_long_suffix) return false;
    size_t p = pos_;
    while (p < s_.size()) {
      if (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\f')
        ++p;
      else if (s_[p] == '\\' && p + 1 < s_.size() && s_[p + 1] == '\n')
        p += 2;
      else
        break;
    }
    if (p < s_.size() && s_[p] == 'L' &&
        (p + 1 == s_.size() || !is_ident_char(static_cast<unsigned char>(s_[p + 1])))) {
      pos_ = p + 1;
      return true;
    }
    return false;
  }

  Token string(const std::string& prefix) {
    Token t{.kind = Token::Kind::string, .pos = pos_ - prefix.size()};
    t.bytes = prefix.find('b') != std::string::npos;
    bool raw = prefix.find('r') != std::string::npos;
    char q = s_[pos_];
    bool triple = s_.substr(pos_, 3) == std::string(3, q);
    pos_ += triple ? 3 : 1;
    while (true) {
      if (at_end()) fail(t.pos, "an unterminated string");
      char c = s_[pos_];
      if (triple ? s_.substr(pos_, 3) == std::string(3, q) : c == q) break;
      if (c == '\n' && !triple) fail(t.pos, "an unterminated string");
      if (t.bytes && static_cast<unsigned char>(c) >= 0x80) fail(pos_, "a non-ASCII byte in bytes");
      if (c != '\\') {
        t.text += c;
        ++pos_;
      } else if (raw) {
        if (pos_ + 1 >= s_.size()) fail(t.pos, "an unterminated string");
        t.text += s_.substr(pos_, 2);
        pos_ += 2;
      } else {
        escape(t);
      }
    }
    pos_ += triple ? 3 : 1;
    return t;
  }

  // One backslash escape of a non-raw string (CPython's rules; unknown escapes stay as written).
  void escape(Token& t) {
    size_t at = pos_++;
    if (at_end()) fail(t.pos, "an unterminated string");
    char e = s_[pos_++];
    switch (e) {
      case '\n':
        return;
      case '\\':
      case '\'':
      case '"':
        t.text += e;
        return;
      case 'a':
        t.text += '\a';
        return;
      case 'b':
        t.text += '\b';
        return;
      case 'f':
        t.text += '\f';
        return;
      case 'n':
        t.text += '\n';
        return;
      case 'r':
        t.text += '\r';
        return;
      case 't':
        t.text += '\t';
        return;
      case 'v':
        t.text += '\v';
        return;
      case 'x':
        return code_point(t, at, 2, 16);
      case 'N':
        if (!t.bytes) fail(at, "a \\N{...} escape (not supported)");
        break;
      case 'u':
        if (!t.bytes) return code_point(t, at, 4, 16);
        break;
      case 'U':
        if (!t.bytes) return code_point(t, at, 8, 16);
        break;
      default:
        if (e >= '0' && e <= '7') {
          --pos_;
          return code_point(t, at, 3, 8);
        }
        break;
    }
    t.text += '\\';
    t.text += e;
  }

  // \xHH, \uHHHH, \UHHHHHHHH (exactly `width` digits) or \ooo (1 to 3 octal digits).
  void code_point(Token& t, size_t at, size_t width, int radix) {
    uint32_t v = 0;
    size_t n = 0;
    while (n < width && !at_end() && digit_value(s_[pos_]) < radix) {
      v = v * radix + digit_value(s_[pos_++]);
      ++n;
    }
    if (n == 0 || (radix == 16 && n < width)) fail(at, "a truncated escape");
    if (v > 0x10ffff || (t.bytes && v > 0xff)) fail(at, "an escape out of range");
    if (t.bytes)
      t.text += static_cast<char>(v);
    else
      json::append_utf8(t.text, v);
  }

  std::string_view s_;
  PyLiteralOptions o_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool line_has_token_ = false;
};

// A parsed node: its value and what ast.literal_eval needs to know about its syntax.
struct Node {
  PyValue value;
  bool constant_number = false;  // a number literal, perhaps in parentheses
  bool signed_number = false;    // `-constant` or `+constant`
  bool imaginary = false;
};

class Parser {
 public:
  Parser(std::string_view s, const PyLiteralOptions& o) : lex_(s, o) { advance(); }

  // An expression list: `x` or, without parentheses, the tuple `x, y` / `x,`.
  PyValue parse() {
    Node n = expr();
    if (is_op(',')) {
      PyValue tuple;
      tuple.kind = PyValue::Kind::tuple;
      tuple.items.push_back(std::move(n.value));
      while (is_op(',')) {
        advance();
        if (tok_.kind == Token::Kind::newline || tok_.kind == Token::Kind::end) break;
        tuple.items.push_back(expr().value);
      }
      n.value = std::move(tuple);
    }
    while (tok_.kind == Token::Kind::newline) advance();
    if (tok_.kind != Token::Kind::end) lex_.fail(tok_.pos, "text after the literal");
    return std::move(n.value);
  }

 private:
  void advance() { tok_ = lex_.next(); }
  bool is_op(char c) const { return tok_.kind == Token::Kind::op && tok_.op == c; }
  void expect(char c) {
    if (!is_op(c)) lex_.fail(tok_.pos, std::string("a missing '") + c + "'");
    advance();
  }

  // `unary` or, as ast.literal_eval allows, `real + imaginary` / `real - imaginary`.
  Node expr() {
    Node left = unary();
    if (!is_op('+') && !is_op('-')) return left;
    size_t at = tok_.pos;
    advance();
    Node right = unary();
    bool real_left = (left.constant_number || left.signed_number) && !left.imaginary;
    if (!real_left || !right.constant_number || !right.imaginary)
      lex_.fail(at, "an operator other than real +/- imaginary");
    if (is_op('+') || is_op('-')) lex_.fail(tok_.pos, "a chain of operators");
    Node n;
    n.value.kind = PyValue::Kind::number;
    return n;
  }

  Node unary() {
    if (!is_op('+') && !is_op('-')) return primary();
    bool negate = is_op('-');
    size_t at = tok_.pos;
    advance();
    Node n = primary();
    if (!n.constant_number) lex_.fail(at, "a sign on something other than a number");
    if (negate && n.value.kind == PyValue::Kind::integer && !n.value.big) n.value.i = -n.value.i;
    n.constant_number = false;
    n.signed_number = true;
    return n;
  }

  Node primary() {
    Node n;
    switch (tok_.kind) {
      case Token::Kind::number:
        n.value.kind =
            tok_.num == Token::Num::integer ? PyValue::Kind::integer : PyValue::Kind::number;
        n.value.i = tok_.i;
        n.value.big = tok_.big;
        n.constant_number = true;
        n.imaginary = tok_.num == Token::Num::imaginary;
        advance();
        return n;
      case Token::Kind::string:
        return strings();
      case Token::Kind::name:
        return name();
      case Token::Kind::op:
        if (is_op('(')) return parenthesized();
        if (is_op('[')) return list();
        if (is_op('{')) return braces();
        break;
      default:
        break;
    }
    lex_.fail(tok_.pos, tok_.kind == Token::Kind::end ? std::string("a missing value")
                                                      : "an unexpected token");
  }

  Node strings() {
    Node n;
    bool bytes = tok_.bytes;
    n.value.kind = bytes ? PyValue::Kind::bytes : PyValue::Kind::str;
    while (tok_.kind == Token::Kind::string) {
      if (tok_.bytes != bytes) lex_.fail(tok_.pos, "bytes and str literals concatenated");
      n.value.s += tok_.text;
      advance();
    }
    return n;
  }

  Node name() {
    Node n;
    if (tok_.text == "True" || tok_.text == "False") {
      n.value.kind = PyValue::Kind::boolean;
      n.value.b = tok_.text == "True";
    } else if (tok_.text != "None") {
      lex_.fail(tok_.pos, "the name '" + escape_for_message(tok_.text, 32) + "'");
    }
    advance();
    return n;
  }

  // `( )`, `(x)` (grouping: x itself) or a tuple `(x, ...)`.
  Node parenthesized() {
    advance();
    Node n;
    n.value.kind = PyValue::Kind::tuple;
    if (is_op(')')) {
      advance();
      return n;
    }
    Node first = expr();
    if (is_op(')')) {
      advance();
      return first;
    }
    n.value.items.push_back(std::move(first.value));
    elements_after_comma(')', n.value.items);
    return n;
  }

  Node list() {
    advance();
    Node n;
    n.value.kind = PyValue::Kind::list;
    if (is_op(']')) {
      advance();
      return n;
    }
    n.value.items.push_back(expr().value);
    if (!is_op(']'))
      elements_after_comma(']', n.value.items);
    else
      advance();
    return n;
  }

  // After the first element: `, x, y, ]` with an optional trailing comma, through `close`.
  void elements_after_comma(char close, std::vector<PyValue>& items) {
    while (true) {
      expect(',');
      if (is_op(close)) break;
      items.push_back(expr().value);
      if (is_op(close)) break;
    }
    advance();
  }

  // A dict `{k: v, ...}` or a set `{x, ...}`.
  Node braces() {
    advance();
    Node n;
    n.value.kind = PyValue::Kind::dict;
    if (is_op('}')) {
      advance();
      return n;
    }
    n.value.items.push_back(expr().value);
    if (!is_op(':')) {
      n.value.kind = PyValue::Kind::set;
      if (!is_op('}'))
        elements_after_comma('}', n.value.items);
      else
        advance();
      return n;
    }
    while (true) {
      expect(':');
      n.value.items.push_back(expr().value);
      if (is_op('}')) break;
      expect(',');
      if (is_op('}')) break;
      n.value.items.push_back(expr().value);
    }
    advance();
    return n;
  }

  Lexer lex_;
  Token tok_;
};

}  // namespace

PyValue eval_py_literal(std::string_view source, const PyLiteralOptions& options) {
  size_t start = source.find_first_not_of(" \t");
  source.remove_prefix(start == std::string_view::npos ? source.size() : start);
  return Parser(source, options).parse();
}

}  // namespace aotgrad::npy
