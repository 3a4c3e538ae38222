// The one JSON reader and string writer of the library (RFC 8259), shared by the safetensors
// header (tensor/safetensors.cpp) and export's signatures (aot/export_signature.cpp).
//
// Needs: text from anywhere, hostile included. Guarantees: parse() accepts exactly RFC 8259 JSON
// in valid UTF-8 (shortest forms, no surrogates), nested at most `max_depth` levels, and keeps
// every number as its literal text (callers decide what a number may be); anything else is a
// json::ParseError holding one line of the problem and the byte offset where it was found, which
// the caller prefixes with the name of its file or field. Every byte of input echoed in a problem
// is escaped (tensor/message_text.h). Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace aotgrad::json {

struct Value {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  std::string text;          // a string's value, a number's literal, "true" / "false"
  std::vector<Value> items;  // an array's elements
  // An object's members, in document order, repeated keys kept: keys[i] names values[i]. (Two
  // vectors, not pairs: a std::pair cannot hold the still incomplete Value.)
  std::vector<std::string> keys;
  std::vector<Value> values;
};

// "null", "a boolean", "a number", "a string", "an array", "an object": for "must be X, found Y".
const char* kind_name(Value::Kind k);

class ParseError : public std::invalid_argument {
 public:
  ParseError(const std::string& problem, size_t offset)
      : std::invalid_argument(problem), offset_(offset) {}
  // The byte of the input where the problem was found.
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

// One JSON document (one value, whitespace around it). The depth of the top-level value is 0.
Value parse(std::string_view text, int max_depth);

// The byte offset of the first byte of `s` that is not valid UTF-8 (shortest form, no
// surrogates, at most U+10FFFF), or nullopt.
std::optional<size_t> invalid_utf8_at(std::string_view s);

// Appends code point `cp` (at most U+10FFFF) to `out` as UTF-8.
void append_utf8(std::string& out, uint32_t cp);

// `s` as a JSON string literal, escaped as Python's json.dumps does (\" \\ \b \f \n \r \t,
// other control bytes as \u00XX); everything else, UTF-8 included, kept as it is.
void append_string(std::string& out, std::string_view s);

}  // namespace aotgrad::json
