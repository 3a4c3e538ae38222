// Descriptors (aotgrad/descriptor.h): construction, text form and its parser. The parser reads
// untrusted text (graph files, artifacts): every read is bounds-checked, nesting is bounded, and
// an error is one line naming what was expected, with the offending text escaped and cut.
#include "aotgrad/descriptor.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <stdexcept>

#include "tensor/message_text.h"

namespace aotgrad {
namespace {

using K = DescriptorKind;

// What a kind's parentheses hold.
enum class Args : uint8_t { none, index, name, one_desc, descs };

struct KindRow {
  K kind;
  std::string_view name;
  Args args;
};

constexpr KindRow kKinds[] = {
    {K::param, "param", Args::name},
    {K::buffer, "buffer", Args::name},
    {K::input, "input", Args::index},
    {K::synthetic_base, "synthetic_base", Args::descs},
    {K::view_base, "view_base", Args::descs},
    {K::tangent, "tangent", Args::one_desc},
    {K::fw_rng_seed, "fw_rng_seed", Args::none},
    {K::fw_rng_offset, "fw_rng_offset", Args::index},  // index: blocks the call draws
    {K::bw_rng_seed, "bw_rng_seed", Args::none},
    {K::bw_rng_offset, "bw_rng_offset", Args::none},
    {K::saved, "saved", Args::index},
    {K::fw_token, "fw_token", Args::index},
    {K::bw_token, "bw_token", Args::index},
    {K::output, "output", Args::index},
    {K::mutated_input, "mutated_input", Args::one_desc},
    {K::intermediate_base, "intermediate_base", Args::one_desc},
    {K::grad, "grad", Args::one_desc},
    {K::fw_rng_new_offset, "fw_rng_new_offset", Args::none},
    {K::bw_rng_new_offset, "bw_rng_new_offset", Args::none},
};

const KindRow* row_of(K kind) {
  for (const KindRow& r : kKinds)
    if (r.kind == kind) return &r;
  return nullptr;
}

const KindRow* row_named(std::string_view name) {
  for (const KindRow& r : kKinds)
    if (r.name == name) return &r;
  return nullptr;
}

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

bool is_plain_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_word_char(c)) return false;
  return true;
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// `text` for an error message: quoted, non-printable bytes escaped, at most 60 characters.
std::string shown(std::string_view text) {
  return "'" + escape_for_message(text, 60) + "'";
}

constexpr int kMaxDepth = 64;

class DescParser {
 public:
  explicit DescParser(std::string_view text) : text_(text) {}

  Descriptor parse_all() {
    Descriptor d = descriptor(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the descriptor");
    return d;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("bad descriptor " + shown(text_) + " at column " +
                                std::to_string(pos_ + 1) + ": " + what);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  void expect(char c, const char* where) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "' " + where);
    ++pos_;
  }
  std::string_view word() {
    size_t start = pos_;
    while (pos_ < text_.size() && is_word_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  Descriptor descriptor(int depth) {
    if (depth >= kMaxDepth) fail("nested more than 64 levels");
    skip_space();
    std::string_view kind = word();
    const KindRow* row = row_named(kind);
    if (!row) fail("unknown kind " + shown(kind));
    Descriptor d;
    d.kind = row->kind;
    expect('(', ("after " + std::string(kind)).c_str());
    skip_space();
    switch (row->args) {
      case Args::none:
        break;
      case Args::index:
        d.index = index();
        break;
      case Args::name:
        d.name = name();
        break;
      case Args::one_desc:
        d.of.push_back(descriptor(depth + 1));
        break;
      case Args::descs:
        d.of.push_back(descriptor(depth + 1));
        for (skip_space(); peek() == ','; skip_space()) {
          ++pos_;
          d.of.push_back(descriptor(depth + 1));
        }
        break;
    }
    expect(')', ("to close " + std::string(kind) + "(").c_str());
    return d;
  }

  int64_t index() {
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    int64_t v = 0;
    auto r = std::from_chars(text_.data() + start, text_.data() + pos_, v);
    if (start == pos_ || r.ec != std::errc() || r.ptr != text_.data() + pos_)
      fail("expected a position (a non-negative integer below 2^63)");
    return v;
  }

  std::string name() {
    if (peek() != '"') {
      std::string_view w = word();
      if (w.empty()) fail("expected a name ([A-Za-z0-9_.] or a quoted string)");
      return std::string(w);
    }
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"') break;
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      ++pos_;
      if (e == '"' || e == '\\') {
        out += e;
      } else if (e == 'n') {
        out += '\n';
      } else if (e == 't') {
        out += '\t';
      } else if (e == 'r') {
        out += '\r';
      } else if (e == 'x') {
        unsigned v = 0;
        const char* b = text_.data() + std::min(pos_, text_.size());
        const char* end = text_.data() + std::min(pos_ + 2, text_.size());
        auto r = std::from_chars(b, end, v, 16);
        if (r.ptr != b + 2) fail("bad \\x escape (two hex digits)");
        pos_ += 2;
        out += static_cast<char>(v);
      } else {
        fail("unknown escape in string (use \\\" \\\\ \\n \\t \\r \\xHH)");
      }
    }
    if (out.empty()) fail("empty name");
    return out;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Descriptor Descriptor::param(std::string fqn) {
  Descriptor d;
  d.kind = K::param;
  d.name = std::move(fqn);
  return d;
}

Descriptor Descriptor::buffer(std::string fqn) {
  Descriptor d;
  d.kind = K::buffer;
  d.name = std::move(fqn);
  return d;
}

Descriptor Descriptor::input(int64_t k) {
  Descriptor d;
  d.kind = K::input;
  d.index = k;
  return d;
}

Descriptor Descriptor::output(int64_t k) {
  Descriptor d;
  d.kind = K::output;
  d.index = k;
  return d;
}

Descriptor Descriptor::saved(int64_t k) {
  Descriptor d;
  d.kind = K::saved;
  d.index = k;
  return d;
}

Descriptor Descriptor::wrapping(DescriptorKind kind, Descriptor inner) {
  Descriptor d;
  d.kind = kind;
  d.of.push_back(std::move(inner));
  return d;
}

Descriptor Descriptor::base(bool view_base, std::vector<Descriptor> members) {
  Descriptor d;
  d.kind = view_base ? K::view_base : K::synthetic_base;
  d.of = std::move(members);
  return d;
}

bool Descriptor::operator==(const Descriptor& o) const {
  return kind == o.kind && index == o.index && name == o.name && of == o.of;
}

std::string_view descriptor_kind_name(DescriptorKind kind) {
  const KindRow* row = row_of(kind);
  return row ? row->name : std::string_view("none");
}

std::string Descriptor::to_string() const {
  const KindRow* row = row_of(kind);
  if (!row) return "";
  std::string out = std::string(row->name) + "(";
  switch (row->args) {
    case Args::none:
      break;
    case Args::index:
      out += std::to_string(index);
      break;
    case Args::name:
      out += is_plain_name(name) ? name : quoted(name);
      break;
    case Args::one_desc:
    case Args::descs:
      for (size_t i = 0; i < of.size(); ++i) out += (i ? ", " : "") + of[i].to_string();
      break;
  }
  return out + ")";
}

Descriptor parse_descriptor(std::string_view text) {
  return DescParser(text).parse_all();
}

bool looks_like_descriptor(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && is_word_char(text[n])) ++n;
  size_t p = n;
  while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
  return n > 0 && p < text.size() && text[p] == '(' && row_named(text.substr(0, n)) != nullptr;
}

}  // namespace aotgrad
