#include "ops/schema.h"

#include <cctype>
#include <stdexcept>

namespace aotgrad::ops {

std::string_view arg_type_name(ArgType t) {
  switch (t) {
    case ArgType::tensor: return "Tensor";
    case ArgType::tensor_list: return "Tensor[]";
    case ArgType::scalar: return "Scalar";
    case ArgType::int_: return "int";
    case ArgType::int_list: return "int[]";
    case ArgType::float_: return "float";
    case ArgType::bool_: return "bool";
    case ArgType::dtype: return "ScalarType";
    case ArgType::string: return "str";
    case ArgType::generator: return "Generator";
  }
  return "?";
}

int Schema::find_arg(std::string_view arg_name) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == arg_name) return static_cast<int>(i);
  return -1;
}

namespace {

class SchemaParser {
 public:
  explicit SchemaParser(std::string_view text) : text_(text) {}

  Schema parse() {
    Schema s;
    std::string full = ident();
    auto dot = full.find('.');
    s.name = full.substr(0, dot);
    s.overload = dot == std::string::npos ? "default" : full.substr(dot + 1);
    expect('(');
    bool kwarg_only = false;
    skip_ws();
    while (peek() != ')') {
      skip_ws();
      if (peek() == '*') {
        ++pos_;
        kwarg_only = true;
      } else {
        ArgSchema a = arg(/*named=*/true);
        a.kwarg_only = kwarg_only;
        s.args.push_back(std::move(a));
      }
      skip_ws();
      if (peek() == ',') ++pos_;
      skip_ws();
    }
    expect(')');
    skip_ws();
    expect('-');
    expect('>');
    skip_ws();
    if (peek() == '(') {
      ++pos_;
      skip_ws();
      while (peek() != ')') {
        s.returns.push_back(arg(/*named=*/false));
        skip_ws();
        if (peek() == ',') ++pos_;
        skip_ws();
      }
      expect(')');
    } else {
      s.returns.push_back(arg(/*named=*/false));
    }
    skip_ws();
    if (pos_ != text_.size()) fail("trailing text");
    return s;
  }

 private:
  ArgSchema arg(bool named) {
    ArgSchema a;
    std::string type = ident();
    if (type == "Tensor") a.type = ArgType::tensor;
    else if (type == "Scalar") a.type = ArgType::scalar;
    else if (type == "int" || type == "SymInt") a.type = ArgType::int_;
    else if (type == "float") a.type = ArgType::float_;
    else if (type == "bool") a.type = ArgType::bool_;
    else if (type == "ScalarType") a.type = ArgType::dtype;
    else if (type == "str") a.type = ArgType::string;
    else if (type == "Generator") a.type = ArgType::generator;
    else if (type == "Layout" || type == "Device" || type == "MemoryFormat") a.type = ArgType::string;
    else fail("unknown type '" + type + "'");
    if (peek() == '(') alias_annotation(a);
    if (type == "Tensor" && text_.substr(pos_, 3) == "?[]") {
      ++pos_;
      a.optional_elements = true;
    }
    if (peek() == '[') {
      ++pos_;
      while (std::isdigit(static_cast<unsigned char>(peek())))
        a.list_size = a.list_size * 10 + (text_[pos_++] - '0');
      expect(']');
      if (a.type == ArgType::tensor) {
        a.type = ArgType::tensor_list;
      } else if (a.type == ArgType::int_) {
        a.type = ArgType::int_list;
      } else if (a.type == ArgType::bool_) {
        a.type = ArgType::int_list;
        a.bool_elements = true;
      } else {
        fail("unsupported list type '" + type + "[]' (lists of Tensor, int, SymInt and bool)");
      }
    }
    if (peek() == '?') {
      a.optional = true;
      ++pos_;
    }
    skip_ws();
    if (named) {
      a.name = ident();
      skip_ws();
      if (peek() == '=') {
        ++pos_;
        size_t start = pos_;
        int depth = 0;
        while (pos_ < text_.size()) {
          char c = text_[pos_];
          if (c == '[') ++depth;
          if (c == ']') --depth;
          if (depth == 0 && (c == ',' || c == ')')) break;
          ++pos_;
        }
        a.default_text = std::string(text_.substr(start, pos_ - start));
      }
    } else if (std::isalpha(static_cast<unsigned char>(peek()))) {
      a.name = ident();
    }
    return a;
  }

  // `(a)`, `(a!)`, `(a -> *)` after a type: the alias set, whether it is written, and for
  // `-> *` (the results of split / unbind alias it, each a view) nothing more to record.
  void alias_annotation(ArgSchema& a) {
    ++pos_;
    while (std::isalpha(static_cast<unsigned char>(peek()))) a.alias_set += text_[pos_++];
    if (a.alias_set.empty()) fail("expected an alias set name such as 'a' after '('");
    if (peek() == '!') {
      a.is_write = true;
      ++pos_;
    }
    skip_ws();
    if (peek() == '-') {
      ++pos_;
      expect('>');
      skip_ws();
      expect('*');
      skip_ws();
    }
    expect(')');
  }

  std::string ident() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
            text_[pos_] == '.'))
      ++pos_;
    if (start == pos_) fail("expected a name");
    return std::string(text_.substr(start, pos_ - start));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("schema '" + std::string(text_) + "', column " +
                                std::to_string(pos_ + 1) + ": " + what);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Schema parse_schema(std::string_view text) { return SchemaParser(text).parse(); }

namespace {

[[noreturn]] void bad_default(const ArgSchema& s, const std::string& why) {
  throw std::invalid_argument("default '" + s.default_text.value_or("") + "' of argument '" +
                              s.name + "' (" + std::string(arg_type_name(s.type)) + "): " + why);
}

int64_t read_int(const ArgSchema& s, std::string_view t) {
  size_t b = t.find_first_not_of(' '), e = t.find_last_not_of(' ');
  if (b == std::string_view::npos) bad_default(s, "empty list entry");
  std::string body(t.substr(b, e - b + 1));
  if (s.bool_elements && (body == "True" || body == "False")) return body == "True" ? 1 : 0;
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(body, &used);
  } catch (const std::logic_error&) {
    bad_default(s, "'" + body + "' is not an integer");
  }
  if (used != body.size()) bad_default(s, "'" + body + "' is not an integer");
  return v;
}

std::vector<int64_t> read_list(const ArgSchema& s, const std::string& t) {
  std::vector<int64_t> v;
  if (t.empty() || t.front() != '[') {
    // ATen writes `int[2] padding=0` for [0, 0]: one value, repeated to the list's size.
    v.assign(s.list_size > 0 ? s.list_size : 1, read_int(s, t));
    return v;
  }
  if (t.back() != ']') bad_default(s, "a list must end with ']'");
  std::string_view body = std::string_view(t).substr(1, t.size() - 2);
  if (body.find_first_not_of(' ') == std::string_view::npos) return v;
  size_t pos = 0;
  while (true) {
    size_t next = body.find(',', pos);
    v.push_back(read_int(s, body.substr(pos, next == std::string_view::npos ? next : next - pos)));
    if (next == std::string_view::npos) return v;
    pos = next + 1;
  }
}

double read_float(const ArgSchema& s, const std::string& t) {
  try {
    size_t used = 0;
    double d = std::stod(t, &used);
    if (used == t.size()) return d;
  } catch (const std::logic_error&) {
  }
  bad_default(s, "not a number");
}

}  // namespace

DefaultValue parse_default_value(const ArgSchema& s) {
  if (!s.default_text) bad_default(s, "the argument has no default");
  const std::string& t = *s.default_text;
  if (t == "None") return std::monostate{};
  switch (s.type) {
    case ArgType::bool_:
      if (t != "True" && t != "False") bad_default(s, "expected True or False");
      return t == "True";
    case ArgType::int_:
      return read_int(s, t);
    case ArgType::float_:
      return read_float(s, t);
    case ArgType::scalar:
      if (t == "True" || t == "False") return Scalar(t == "True");
      if (t.find_first_of(".eE") != std::string::npos || t == "inf" || t == "-inf" || t == "nan")
        return Scalar(read_float(s, t));
      return Scalar(read_int(s, t));
    case ArgType::int_list:
      return read_list(s, t);
    case ArgType::tensor_list:
      if (t != "[]") bad_default(s, "a Tensor[] default can only be []");
      return std::vector<int64_t>{};
    case ArgType::string:
      return t.size() >= 2 && (t[0] == '"' || t[0] == '\'') ? t.substr(1, t.size() - 2) : t;
    case ArgType::tensor:
    case ArgType::dtype:
    case ArgType::generator:
      break;
  }
  bad_default(s, "this type takes no default other than None");
}

}  // namespace aotgrad::ops
