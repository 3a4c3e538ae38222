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
    if (peek() == '(') {
      ++pos_;
      while (std::isalpha(static_cast<unsigned char>(peek()))) a.alias_set += text_[pos_++];
      if (peek() == '!') {
        a.is_write = true;
        ++pos_;
      }
      expect(')');
    }
    if (peek() == '[') {
      ++pos_;
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
      expect(']');
      if (a.type == ArgType::tensor) a.type = ArgType::tensor_list;
      else if (a.type == ArgType::int_) a.type = ArgType::int_list;
      else fail("unsupported list type");
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

}  // namespace aotgrad::ops
