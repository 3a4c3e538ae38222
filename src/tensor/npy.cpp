// NumPy .npy reader and writer (format spec: numpy/lib/format.py, versions 1.0, 2.0 and 3.0).
//
// Reading guide: a file is magic "\x93NUMPY", two version bytes, a little-endian header length (2
// bytes in 1.0, 4 in 2.0/3.0), a Python dict literal padded with spaces to a 64-byte boundary, then
// the raw elements. parse_header() reads the dict with a tiny recursive-descent parser (it accepts
// exactly the literals NumPy writes: quoted strings, True/False, tuples of ints); the rest is byte
// copies. Elements are copied, never converted, so f16 round-trips bit-exactly.
#include "aotgrad/npy.h"

#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace aotgrad {
namespace {

static_assert(std::endian::native == std::endian::little,
              "npy.cpp copies elements as raw bytes and writes them as little-endian");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw std::invalid_argument("npy file '" + path + "': " + problem);
}

struct Header {
  DType dtype = DType::f32;
  bool fortran_order = false;
  IntList shape;
};

// One dtype per row; `descr` is how NumPy spells it on a little-endian machine.
struct DescrRow {
  const char* descr;
  DType dtype;
};
constexpr DescrRow kDescrs[] = {{"<f4", DType::f32},
                                {"<f8", DType::f64},
                                {"<i8", DType::i64},
                                {"|b1", DType::b8},
                                {"<f2", DType::f16}};

DType dtype_from_descr(const std::string& path, std::string descr) {
  // '=' (native order) equals '<' here; single-byte types may be written with either prefix.
  if (!descr.empty() && descr[0] == '=') descr[0] = '<';
  if (descr == "<b1") descr = "|b1";
  for (const DescrRow& row : kDescrs)
    if (descr == row.descr) return row.dtype;
  if (!descr.empty() && descr[0] == '>')
    fail(path,
         "big-endian dtype '" + descr +
             "' is not supported; convert it in NumPy with a.astype(a.dtype.newbyteorder('<'))");
  fail(path, "unsupported dtype '" + descr +
                 "' (supported: '<f4', '<f8', '<i8', '|b1', '<f2'); convert it in NumPy with "
                 "a.astype(np.float32) or a.astype(np.int64)");
}

const char* descr_of(DType t) {
  for (const DescrRow& row : kDescrs)
    if (row.dtype == t) return row.descr;
  return nullptr;
}

// Recursive-descent reader of the header dict, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), s_(text) {}

  Header parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortran;
    std::optional<IntList> shape;
    expect('{');
    while (!peek_is('}')) {
      std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        descr = string_literal();
      } else if (key == "fortran_order") {
        fortran = bool_literal();
      } else if (key == "shape") {
        shape = int_tuple();
      } else {
        bad("unexpected key '" + key + "'");
      }
      if (!peek_is(',')) break;
      expect(',');
    }
    expect('}');
    if (!descr || !fortran || !shape)
      bad("the header must have 'descr', 'fortran_order' and 'shape'");
    return Header{dtype_from_descr(path_, *descr), *fortran, *shape};
  }

 private:
  [[noreturn]] void bad(const std::string& what) {
    fail(path_,
         "bad header dict (" + what + ") at offset " + std::to_string(pos_) + " of \"" + s_ + "\"");
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek_is(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek_is(c)) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) bad("expected a quoted string");
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) bad("unterminated string");
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  bool bool_literal() {
    skip_space();
    for (bool v : {true, false}) {
      std::string_view word = v ? "True" : "False";
      if (s_.compare(pos_, word.size(), word) == 0) {
        pos_ += word.size();
        return v;
      }
    }
    bad("expected True or False");
  }
  int64_t int_literal() {
    skip_space();
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == start || (pos_ == start + 1 && s_[start] == '-')) bad("expected an integer");
    // NumPy writes Python ints; an 'L' suffix comes from Python 2 era files.
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;
    int64_t v = std::stoll(s_.substr(start, pos_ - start));
    if (v < 0) fail(path_, "shape has a negative dimension " + std::to_string(v));
    return v;
  }
  IntList int_tuple() {
    IntList out;
    expect('(');
    while (!peek_is(')')) {
      out.push_back(int_literal());
      if (!peek_is(',')) break;
      expect(',');
    }
    expect(')');
    return out;
  }

  const std::string& path_;
  const std::string& s_;
  size_t pos_ = 0;
};

// Copies the elements of a strided array (strides in elements) into `dst` in row-major order.
void gather_row_major(const char* src, const IntList& sizes, const IntList& strides, size_t item,
                      char* dst) {
  int64_t n = numel_of(sizes);
  if (n == 0) return;
  IntList index(sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < sizes.size(); ++d) offset += index[d] * strides[d];
    std::memcpy(dst + i * item, src + offset * static_cast<int64_t>(item), item);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open the file (does it exist?)");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint32_t read_le(const std::string& bytes, size_t at, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

std::string shape_literal(const IntList& sizes) {
  std::string out = "(";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(sizes[i]);
  }
  if (sizes.size() == 1) out += ",";
  return out + ")";
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::string bytes = read_whole_file(path);
  if (bytes.size() < kMagicLen + 2 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    fail(path, "not a .npy file (bad magic; expected \\x93NUMPY)");
  int major = static_cast<unsigned char>(bytes[kMagicLen]);
  if (major < 1 || major > 3)
    fail(path,
         "unsupported format version " + std::to_string(major) + " (supported: 1.0, 2.0, 3.0)");
  size_t len_width = major == 1 ? 2 : 4;
  size_t header_start = kMagicLen + 2 + len_width;
  if (bytes.size() < header_start) fail(path, "truncated header");
  size_t header_len = read_le(bytes, kMagicLen + 2, len_width);
  if (bytes.size() < header_start + header_len) fail(path, "truncated header");
  Header h = HeaderParser(path, bytes.substr(header_start, header_len)).parse();

  size_t item = itemsize(h.dtype);
  size_t data_start = header_start + header_len;
  // A corrupt shape must fail here, before numel_of overflows or make_tensor allocates it.
  size_t want = item;
  for (int64_t d : h.shape)
    if (__builtin_mul_overflow(want, static_cast<size_t>(d), &want))
      fail(path, "shape " + shape_to_string(h.shape) + " has too many elements to address");
  if (bytes.size() - data_start < want)
    fail(path, "truncated data: shape " + shape_to_string(h.shape) + " needs " +
                   std::to_string(want) + " bytes, the file has " +
                   std::to_string(bytes.size() - data_start));

  Tensor t = make_tensor(h.shape, h.dtype);
  char* dst = t.impl()->data_bytes();
  const char* src = bytes.data() + data_start;
  if (want == 0) return t;
  if (!h.fortran_order || h.shape.size() < 2) {
    std::memcpy(dst, src, want);
  } else {
    // Fortran order is column-major: the strides of the file's layout are the reversed C strides.
    IntList strides(h.shape.size());
    int64_t s = 1;
    for (size_t d = 0; d < h.shape.size(); ++d) {
      strides[d] = s;
      s *= h.shape[d];
    }
    gather_row_major(src, h.shape, strides, item, dst);
  }
  if (h.dtype == DType::b8)  // any nonzero byte is True in NumPy; our kernels expect 0 or 1
    for (size_t i = 0; i < want; ++i) dst[i] = dst[i] != 0;
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  if (!t.defined()) fail(path, "cannot write an undefined tensor");
  if (t.is_fake()) fail(path, "cannot write a fake (traced) tensor: it has no data");
  const char* descr = descr_of(t.dtype());
  if (!descr)
    fail(path,
         "bf16 has no NumPy dtype; convert first with t.to(DType::f32) (exact) and write that");

  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': " + shape_literal(t.sizes()) + ", }";
  // The header (magic, version, length, dict, '\n') is padded with spaces to a multiple of 64
  // bytes.
  bool v2 = dict.size() + 1 + kMagicLen + 4 > 65535;
  size_t prefix = kMagicLen + 2 + (v2 ? 4 : 2);
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';

  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  uint32_t len = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += dict;

  size_t item = itemsize(t.dtype());
  size_t nbytes = static_cast<size_t>(t.numel()) * item;
  size_t data_at = out.size();
  out.resize(data_at + nbytes);
  if (nbytes > 0) {
    const char* src = t.impl()->data_bytes();
    if (t.is_contiguous())
      std::memcpy(out.data() + data_at, src, nbytes);
    else
      gather_row_major(src, t.sizes(), t.strides(), item, out.data() + data_at);
  }

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("npy file '" + path + "': cannot open it for writing");
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (!f) throw std::runtime_error("npy file '" + path + "': write failed");
}

}  // namespace aotgrad
