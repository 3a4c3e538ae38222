// A reader of Python literals, as ast.literal_eval (Python 3.11) reads them: what a .npy header
// is (npy_header.h). Internal to the .npy reader.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aotgrad::npy {

// One evaluated literal. Only what a .npy header needs to tell apart is kept: the value of ints
// that fit int64, the text of strings, and the elements of containers; floats and complex
// numbers are `number` with no value.
struct PyValue {
  enum class Kind { none, boolean, integer, number, str, bytes, tuple, list, set, dict };
  Kind kind = Kind::none;
  bool b = false;              // boolean
  int64_t i = 0;               // integer, when !big
  bool big = false;            // integer outside int64
  std::string s;               // str (UTF-8) or bytes
  std::vector<PyValue> items;  // tuple, list, set; dict: key, value, key, value, ...
};

struct PyLiteralOptions {
  // Format versions 1.0 and 2.0 drop a name `L` right after a number (Python 2 longs), as
  // numpy.lib.format._filter_header does.
  bool drop_long_suffix = false;
};

// Evaluates `source` (newlines already "\n"; NumPy's leading " \t" strip included here) as one
// Python expression made of literals: numbers (one sign; `real+imagj`), strings and bytes with
// every prefix, escape, concatenation and triple quotes, True/False/None, tuples, lists, sets and
// dicts, with comments, line continuations and the tokenizer's indentation rule. Throws
// std::invalid_argument with a short reason for anything ast.literal_eval would refuse, and for
// `\N{...}` escapes (Unicode names; never in a header NumPy writes). Brackets may nest 200 deep,
// as in CPython. Pure and thread-safe; linear time.
PyValue eval_py_literal(std::string_view source, const PyLiteralOptions& options = {});

}  // namespace aotgrad::npy
