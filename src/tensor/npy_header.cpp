// The .npy header dict, checked as numpy.lib.format._read_array_header and numpy.load check it
// (npy_header.h). Reading guide: parse_npy_header decodes and evaluates the text
// (py_literal.h), then checks the dict's keys, shape, fortran_order and descr in NumPy's order.
// dtype_of_descr follows numpy.dtype() for the strings and tuples that name aotgrad's dtypes,
// including NumPy's comma-string forms ('<f4,', '1f4', '(1,)f4').
//
// Deliberate differences from NumPy 1.24, all refusals of files NumPy reads:
//   - a negative dimension: numpy.fromfile reads "the rest of the file" for a count of -1, so
//     NumPy accepts shape (-1,) and infers it from the file size; a corrupt header, refused here;
//   - \N{...} escapes in strings (Unicode character names): no table of names here;
//   - dtypes aotgrad has no type for (i4, u1, c8, structured, ...): refused with the fix.
#include "tensor/npy_header.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>
#include <utility>

#include "tensor/message_text.h"
#include "tensor/py_literal.h"

namespace aotgrad::npy {
namespace {

using Kind = PyValue::Kind;

[[noreturn]] void refuse(const std::string& why) {
  throw std::invalid_argument(why);
}

// A descr's dtype as numpy.dtype() reads it.
struct Descr {
  DType dtype = DType::f32;
  bool big_endian = false;
};

// Typecodes, which take a byte-order prefix ('<d', '|?'); names, which do not ('float32'); and
// kinds, which take a byte-order prefix and a size ('<f4', 'b1').
struct DescrName {
  std::string_view name;
  DType dtype;
};
constexpr DescrName kTypecodes[] = {{"e", DType::f16}, {"f", DType::f32}, {"d", DType::f64},
                                    {"l", DType::i64}, {"q", DType::i64}, {"p", DType::i64},
                                    {"?", DType::b8},  {"B", DType::u8},   {"i", DType::i32}};
struct DescrKind {
  char kind;
  int64_t size;
  DType dtype;
};
constexpr DescrKind kKinds[] = {{'f', 2, DType::f16},
                                {'f', 4, DType::f32},
                                {'f', 8, DType::f64},
                                {'i', 8, DType::i64},
                                {'b', 1, DType::b8},
                                {'u', 1, DType::u8},
                                {'i', 4, DType::i32}};
constexpr DescrName kNames[] = {
    {"float16", DType::f16}, {"half", DType::f16},    {"float32", DType::f32},
    {"single", DType::f32},  {"float64", DType::f64}, {"double", DType::f64},
    {"float", DType::f64},   {"float_", DType::f64},  {"int64", DType::i64},
    {"int", DType::i64},     {"int_", DType::i64},    {"intp", DType::i64},
    {"int0", DType::i64},    {"long", DType::i64},    {"longlong", DType::i64},
    {"bool", DType::b8},     {"bool_", DType::b8},    {"bool8", DType::b8},
    {"uint8", DType::u8},    {"ubyte", DType::u8},    {"int32", DType::i32},
    {"intc", DType::i32}};

[[noreturn]] void unsupported_descr(std::string_view descr) {
  refuse("unsupported dtype '" + escape_for_message(descr, 40) +
         "' (aotgrad reads float16/32/64, int64, int32, uint8 and bool: descr f2, f4, f8, "
         "i8, i4, u1, b1, any byte order); convert in NumPy with a.astype(np.float32) or a.astype(np.int64)");
}

// The size after a kind letter, read as NumPy reads it (C's strtol over the whole rest: leading
// whitespace, a sign, digits): "4", " 4", "+04". -1 when it is not such a number.
int64_t kind_size(std::string_view s) {
  size_t p = s.find_first_not_of(" \t\n\v\f\r");
  if (p == std::string_view::npos) return -1;
  if (s[p] == '+' || s[p] == '-') {
    if (s[p] == '-') return -1;  // a negative size: numpy.dtype refuses it
    ++p;
  }
  if (p == s.size()) return -1;
  int64_t v = 0;
  for (; p < s.size(); ++p) {
    if (s[p] < '0' || s[p] > '9') return -1;
    v = std::min<int64_t>(v * 10 + (s[p] - '0'), 1000);
  }
  return v;
}

std::optional<Descr> plain_descr(std::string_view s) {
  for (const DescrName& n : kNames)
    if (s == n.name) return Descr{n.dtype, false};
  bool big = false;
  if (!s.empty() && std::string_view("<>=|").find(s[0]) != std::string_view::npos) {
    big = s[0] == '>';
    s.remove_prefix(1);
  }
  for (const DescrName& n : kTypecodes)
    if (s == n.name) return Descr{n.dtype, big && n.dtype != DType::b8};
  if (s.size() > 1)
    for (const DescrKind& k : kKinds)
      if (s[0] == k.kind && kind_size(s.substr(1)) == k.size)
        return Descr{k.dtype, big && k.dtype != DType::b8};
  return std::nullopt;
}

// NumPy's _check_for_commastring: a leading digit (after an optional byte-order char), a leading
// "()", or a comma outside square brackets sends the string to numpy.core._internal._commastring.
bool is_commastring(std::string_view s) {
  auto order = [](char c) { return c == '<' || c == '>' || c == '|' || c == '='; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!s.empty() && digit(s[0])) return true;
  if (s.size() > 1 && order(s[0]) && digit(s[1])) return true;
  if (s.substr(0, 2) == "()" || (s.size() > 3 && order(s[0]) && s.substr(1, 2) == "()"))
    return true;
  int brackets = 0;
  for (char c : s) {
    if (c == ',' && brackets == 0) return true;
    brackets += c == '[' ? 1 : c == ']' ? -1 : 0;
  }
  return false;
}

Descr dtype_of_descr_string(std::string_view s, int depth);

// numpy.dtype((base, shape)) is a subarray dtype. numpy.load reads one of a single element (shape
// 1, (), (1,), [1], (1, 1), ...) as the plain dtype; any other never fits the file's shape.
Descr with_subarray(Descr base, const PyValue& shape, std::string_view descr) {
  auto ones = [](const PyValue& v) {
    if (v.kind != Kind::tuple && (v.kind != Kind::list || v.items.empty())) return false;
    for (const PyValue& d : v.items)
      if (d.kind != Kind::integer || d.big || d.i != 1) return false;
    return true;
  };
  if ((shape.kind == Kind::integer && !shape.big && shape.i == 1) || ones(shape)) return base;
  refuse("dtype '" + escape_for_message(descr, 40) +
         "' is a subarray dtype, which does not fit the shape; aotgrad reads plain dtypes");
}

// One field of numpy.core._internal._commastring's format_re: order1, repeats, order2, type.
Descr commastring(std::string_view s, int depth) {
  auto order = [](char c) { return c == '<' || c == '>' || c == '|' || c == '='; };
  size_t p = 0;
  char order1 = p < s.size() && order(s[p]) ? s[p++] : 0;
  size_t rep_start = p;
  while (p < s.size() && s[p] == ' ') ++p;
  if (p < s.size() && s[p] == '(') ++p;
  while (p < s.size() && (s[p] == ' ' || s[p] == ',' || (s[p] >= '0' && s[p] <= '9'))) ++p;
  if (p < s.size() && s[p] == ')') ++p;
  while (p < s.size() && s[p] == ' ') ++p;
  std::string_view repeats = s.substr(rep_start, p - rep_start);
  char order2 = p < s.size() && order(s[p]) ? s[p++] : 0;
  size_t type_start = p;
  while (p < s.size() &&
         (std::isalnum(static_cast<unsigned char>(s[p])) || s[p] == '.' || s[p] == '?'))
    ++p;
  std::string_view type = s.substr(type_start, p - type_start);
  if (p < s.size() && s[p] == '[') unsupported_descr(s);  // datetime units: not ours
  // What may follow a field: whitespace (re's \s), or a comma and whitespace.
  constexpr std::string_view kSpace = " \t\n\r\f\v\x1c\x1d\x1e\x1f";
  std::string_view rest = s.substr(p);
  size_t sep = rest.find_first_not_of(kSpace);
  if (sep != std::string_view::npos) {
    if (rest[sep] != ',') refuse("descr '" + escape_for_message(s, 40) + "' is not a dtype");
    if (rest.find_first_not_of(kSpace, sep + 1) != std::string_view::npos)
      unsupported_descr(s);  // a second field: a structured dtype
  }
  if (order1 && order2) {
    char a = order1 == '=' ? '<' : order1, b = order2 == '=' ? '<' : order2;
    if (a != b) refuse("descr '" + escape_for_message(s, 40) + "' has two byte orders");
  }
  char byte_order = order2 ? order2 : order1;
  std::string item = (byte_order == '>' ? ">" : "") + std::string(type);
  Descr base = dtype_of_descr_string(item, depth + 1);
  if (repeats.empty()) return base;
  PyValue count;
  try {
    count = eval_py_literal(repeats);
  } catch (const std::invalid_argument&) {
    refuse("descr '" + escape_for_message(s, 40) + "' is not a dtype");
  }
  if (count.kind == Kind::tuple && count.items.empty()) return base;
  return with_subarray(base, count, s);
}

Descr dtype_of_descr_string(std::string_view s, int depth) {
  if (depth > 8) unsupported_descr(s);
  if (is_commastring(s)) return commastring(s, depth);
  if (std::optional<Descr> d = plain_descr(s)) return *d;
  unsupported_descr(s);
}

// numpy.lib.format.descr_to_dtype: a string; a tuple (base, shape, ...) whose extra items NumPy
// ignores; a list is a structured dtype.
Descr dtype_of_descr(const PyValue& v, int depth = 0) {
  if (depth > 8) refuse("descr nested too deeply");
  if (v.kind == Kind::str) return dtype_of_descr_string(v.s, 0);
  if (v.kind == Kind::tuple && v.items.size() >= 2) {
    Descr base = dtype_of_descr(v.items[0], depth + 1);
    return with_subarray(base, v.items[1], "a tuple");
  }
  if (v.kind == Kind::list)
    refuse("a structured dtype (descr is a list); aotgrad reads plain dtypes");
  refuse("'descr' is not a valid dtype descriptor");
}

// Python's len() of the decoded header: bytes in versions 1.0/2.0 (latin-1), code points in 3.0
// (UTF-8, which must be valid).
size_t decoded_length(std::string_view text, int major) {
  if (major < 3) return text.size();
  size_t chars = 0;
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > text.size()) refuse("the version 3.0 header is not valid UTF-8");
    uint32_t cp = n == 1 ? c : c & (0x7f >> n);
    for (size_t k = 1; k < n; ++k) {
      auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc >> 6) != 2) refuse("the version 3.0 header is not valid UTF-8");
      cp = cp << 6 | (cc & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      refuse("the version 3.0 header is not valid UTF-8");
    i += n;
    ++chars;
  }
  return chars;
}

IntList shape_of(const PyValue& v) {
  if (v.kind != Kind::tuple) refuse("'shape' is not a tuple of ints");
  if (v.items.size() > kMaxDims)
    refuse("shape has " + std::to_string(v.items.size()) + " dims; NumPy reads at most " +
           std::to_string(kMaxDims));
  IntList shape;
  for (const PyValue& d : v.items) {
    if (d.kind != Kind::integer) refuse("'shape' is not a tuple of ints");
    if (d.big) refuse("shape has a dimension beyond 64 bits");
    if (d.i < 0) refuse("shape has a negative dimension " + std::to_string(d.i));
    shape.push_back(d.i);
  }
  return shape;
}

}  // namespace

NpyHeader parse_npy_header(std::string_view text, int major) {
  size_t length = decoded_length(text, major);
  if (length > kMaxHeaderChars)
    refuse("header of " + std::to_string(length) + " characters; NumPy reads at most " +
           std::to_string(kMaxHeaderChars));
  if (text.find('\0') != std::string_view::npos) refuse("the header holds a NUL byte");
  // Python reads "\r\n" and a lone "\r" as "\n".
  std::string source;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\r') {
      source += text[i];
    } else {
      source += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    }
  }
  PyValue dict;
  try {
    dict = eval_py_literal(source, {.drop_long_suffix = major < 3});
  } catch (const std::invalid_argument& e) {
    refuse(std::string("the header is not a Python literal: ") + e.what());
  }
  if (dict.kind != Kind::dict) refuse("the header is not a dict");
  const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (size_t k = 0; k < dict.items.size(); k += 2) {
    const PyValue& key = dict.items[k];
    const PyValue* value = &dict.items[k + 1];
    if (key.kind == Kind::str && key.s == "descr")
      descr = value;
    else if (key.kind == Kind::str && key.s == "fortran_order")
      fortran = value;
    else if (key.kind == Kind::str && key.s == "shape")
      shape = value;
    else
      refuse("the header has a key other than 'descr', 'fortran_order' and 'shape'");
  }
  if (!descr || !fortran || !shape)
    refuse("the header lacks one of the keys 'descr', 'fortran_order' and 'shape'");

  NpyHeader h;
  h.shape = shape_of(*shape);
  if (fortran->kind != Kind::boolean) refuse("'fortran_order' is not True or False");
  h.fortran_order = fortran->b;
  Descr d = dtype_of_descr(*descr);
  h.dtype = d.dtype;
  h.big_endian = d.big_endian;
  // NumPy's "array is too big": the byte size of the non-zero dims must fit its intp.
  int64_t extent = static_cast<int64_t>(itemsize(h.dtype));
  bool empty = false;
  for (int64_t s : h.shape) {
    empty = empty || s == 0;
    if (__builtin_mul_overflow(extent, std::max<int64_t>(s, 1), &extent))
      refuse("shape " + escape_for_message(shape_to_string(h.shape), 100) +
             " is too large to address");
  }
  h.nbytes = empty ? 0 : extent;
  return h;
}

}  // namespace aotgrad::npy
