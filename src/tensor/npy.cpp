// NumPy .npy reader and writer (format spec: numpy/lib/format.py, versions 1.0, 2.0 and 3.0).
//
// Reading guide: a file is magic "\x93NUMPY", two version bytes, a little-endian header length (2
// bytes in 1.0, 4 in 2.0/3.0), a Python dict literal (npy_header.h reads it as NumPy does), then
// the raw elements. read_from() is the one reader behind read_npy (a file) and read_npy_bytes
// (memory): it asks its source for the prefix, then the header, checks that the source holds all
// the data the header promises, and only then allocates and asks for the data, so a lying header
// costs nothing. Elements are copied bit for bit (byte-swapped when big-endian), so f16 and NaN
// payloads round-trip.
#include "aotgrad/npy.h"

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "tensor/message_text.h"
#include "tensor/npy_header.h"

namespace aotgrad {
namespace {

static_assert(std::endian::native == std::endian::little,
              "npy.cpp copies elements as raw bytes and writes them as little-endian");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& source, const std::string& problem) {
  throw std::invalid_argument("npy file '" + escape_for_message(source, 160) + "': " + problem);
}

// One dtype per row; `descr` is how NumPy's np.save spells it on a little-endian machine.
struct DescrRow {
  const char* descr;
  DType dtype;
};
constexpr DescrRow kDescrs[] = {{"<f4", DType::f32},
                                {"<f8", DType::f64},
                                {"<i8", DType::i64},
                                {"|b1", DType::b8},
                                {"<f2", DType::f16},
                                {"|u1", DType::u8},
                                {"<i4", DType::i32}};

const char* descr_of(DType t) {
  for (const DescrRow& row : kDescrs)
    if (row.dtype == t) return row.descr;
  return nullptr;
}

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

uint32_t read_le(std::string_view bytes, size_t at, size_t width) {
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

// The tensor of header `h`; `fill(dst)` writes its h.nbytes raw bytes to dst. In C order they
// go straight into the tensor's storage (no staging copy: reading a model's parameters is one
// pass over their bytes).
template <class Fill>
Tensor decode(const npy::NpyHeader& h, Fill fill) {
  Tensor t = make_tensor(h.shape, h.dtype);
  if (h.nbytes == 0) return t;
  char* dst = t.impl()->data_bytes();
  size_t item = itemsize(h.dtype), n = static_cast<size_t>(h.nbytes);
  if (!h.fortran_order || h.shape.size() < 2) {
    fill(dst);
  } else {
    std::string data(n, '\0');
    fill(data.data());
    // Fortran order is column-major: the strides of the file's layout are the reversed C strides
    // (products of sizes: no overflow, parse_npy_header bounded their byte size).
    IntList strides(h.shape.size());
    int64_t s = 1;
    for (size_t d = 0; d < h.shape.size(); ++d) {
      strides[d] = s;
      s *= h.shape[d];
    }
    gather_row_major(data.data(), h.shape, strides, item, dst);
  }
  if (h.big_endian)
    for (size_t i = 0; i < n; i += item) std::reverse(dst + i, dst + i + item);
  if (h.dtype == DType::b8)  // any nonzero byte is True in NumPy; our kernels expect 0 or 1
    for (size_t i = 0; i < n; ++i) dst[i] = dst[i] != 0;
  return t;
}

// The reader behind read_npy and read_npy_bytes. `total` is the size of the source;
// `read(offset, n)` returns its bytes [offset, offset + n), which the caller has checked exist;
// `read_into(offset, n, dst)` writes them to dst.
template <class Read, class ReadInto>
Tensor read_from(const std::string& source, size_t total, Read read, ReadInto read_into) {
  constexpr size_t kPrefix = kMagicLen + 2;
  std::string prefix = read(0, std::min(total, kPrefix + 4));
  if (prefix.size() < kMagicLen || prefix.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    fail(source, "not a .npy file (bad magic; expected \\x93NUMPY)");
  if (prefix.size() < kPrefix) fail(source, "truncated header (the file ends in the magic)");
  int major = static_cast<unsigned char>(prefix[kMagicLen]);
  int minor = static_cast<unsigned char>(prefix[kMagicLen + 1]);
  if (major < 1 || major > 3 || minor != 0)
    fail(source, "unsupported format version " + std::to_string(major) + "." +
                     std::to_string(minor) + " (NumPy reads 1.0, 2.0 and 3.0)");
  size_t len_width = major == 1 ? 2 : 4;
  size_t header_start = kPrefix + len_width;
  if (total < header_start) fail(source, "truncated header (no header length)");
  size_t header_len = read_le(prefix, kPrefix, len_width);
  if (header_len > total - header_start)
    fail(source, "truncated header: it says " + std::to_string(header_len) +
                     " bytes, the file has " + std::to_string(total - header_start) + " after it");
  // A header past NumPy's limit is refused before it is read (kMaxHeaderChars counts characters;
  // UTF-8 takes at most 4 bytes for one).
  if (header_len > 4 * npy::kMaxHeaderChars)
    fail(source, "header of " + std::to_string(header_len) + " bytes; NumPy reads at most " +
                     std::to_string(npy::kMaxHeaderChars) + " characters");
  npy::NpyHeader h;
  try {
    h = npy::parse_npy_header(read(header_start, header_len), major);
  } catch (const std::invalid_argument& e) {
    fail(source, e.what());
  }
  size_t data_start = header_start + header_len;
  auto nbytes = static_cast<size_t>(h.nbytes);
  if (total - data_start < nbytes)
    fail(source, "truncated data: shape " + escape_for_message(shape_to_string(h.shape), 80) +
                     " of " + std::string(dtype_name(h.dtype)) + " needs " +
                     std::to_string(nbytes) + " bytes, the file has " +
                     std::to_string(total - data_start));
  return decode(h, [&](char* dst) { read_into(data_start, nbytes, dst); });
}

}  // namespace

Tensor read_npy(const std::string& path) {
  // stat first: a directory, FIFO or device (/dev/zero) is refused before it is opened or read.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, "cannot open the file (does it exist?)");
  if (!S_ISREG(st.st_mode))
    fail(path, "not a regular file (a directory, device or pipe); expected a .npy file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open the file (is it readable?)");
  auto total = static_cast<size_t>(st.st_size);
  auto read_into = [&](size_t offset, size_t n, char* dst) {
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(dst, static_cast<std::streamsize>(n));
    if (static_cast<size_t>(in.gcount()) != n)
      fail(path, "the file shrank while it was read (" + std::to_string(total) + " bytes before)");
  };
  return read_from(
      path, total,
      [&](size_t offset, size_t n) {
        std::string out(n, '\0');
        read_into(offset, n, out.data());
        return out;
      },
      read_into);
}

Tensor read_npy_bytes(std::string_view bytes, const std::string& source) {
  return read_from(
      source, bytes.size(),
      [&](size_t offset, size_t n) { return std::string(bytes.substr(offset, n)); },
      [&](size_t offset, size_t n, char* dst) { std::memcpy(dst, bytes.data() + offset, n); });
}

namespace {

// The .npy header (magic, version, length, dict) for `t`, after every check write_npy makes;
// `nbytes` receives the size of the data that follows it.
std::string npy_header(const Tensor& t, const std::string& destination, size_t& nbytes) {
  if (!t.defined()) fail(destination, "cannot write an undefined tensor");
  if (t.is_fake()) fail(destination, "cannot write a fake (traced) tensor: it has no data");
  const char* descr = descr_of(t.dtype());
  if (!descr)
    fail(destination,
         "bf16 has no NumPy dtype; convert first with t.to(DType::f32) (exact) and write that");
  if (t.sizes().size() > npy::kMaxDims)
    fail(destination, "a tensor of " + std::to_string(t.sizes().size()) +
                          " dims; NumPy reads at most " + std::to_string(npy::kMaxDims));
  // NumPy refuses a shape whose non-zero dims span more bytes than an int64 holds, even when
  // another dim is 0; so does the writer, rather than write what NumPy cannot read.
  size_t item = itemsize(t.dtype());
  int64_t extent = static_cast<int64_t>(item);
  bool empty = false;
  for (int64_t s : t.sizes()) {
    empty = empty || s == 0;
    if (s < 0 || __builtin_mul_overflow(extent, std::max<int64_t>(s, 1), &extent))
      fail(destination, "shape " + escape_for_message(shape_to_string(t.sizes()), 100) + " of " +
                            std::string(dtype_name(t.dtype())) +
                            " has a byte size beyond 64 bits; nothing was written");
  }
  nbytes = empty ? 0 : static_cast<size_t>(extent);

  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': " + shape_literal(t.sizes()) + ", }";
  // Version 1.0: the header (magic, version, 2-byte length, dict, '\n') is padded with spaces to
  // a multiple of 64 bytes. With at most 32 dims it stays far below the 64 KiB a 1.0 length holds.
  size_t prefix = kMagicLen + 4;
  size_t total = prefix + dict.size() + 1;
  dict.append((total + 63) / 64 * 64 - total, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\0';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  return out;
}

}  // namespace

std::string write_npy_bytes(const Tensor& t, const std::string& destination) {
  size_t nbytes = 0;
  std::string out = npy_header(t, destination, nbytes);
  const size_t item = itemsize(t.dtype());

  size_t data_at = out.size();
  out.resize(data_at + nbytes);
  if (nbytes > 0) {
    const char* src = t.impl()->data_bytes();
    if (t.is_contiguous())
      std::memcpy(out.data() + data_at, src, nbytes);
    else
      gather_row_major(src, t.sizes(), t.strides(), item, out.data() + data_at);
  }
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  // A contiguous tensor's bytes are written from its storage, after the header: no staging copy
  // of the data (write_npy_bytes makes one for the others).
  size_t nbytes = 0;
  const bool direct = t.defined() && !t.is_fake() && t.is_contiguous();
  std::string out = direct ? npy_header(t, path, nbytes) : write_npy_bytes(t, path);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  std::string name = escape_for_message(path, 160);
  if (!f) throw std::runtime_error("npy file '" + name + "': cannot open it for writing");
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (direct && nbytes > 0) f.write(t.impl()->data_bytes(), static_cast<std::streamsize>(nbytes));
  if (!f) throw std::runtime_error("npy file '" + name + "': write failed");
}

}  // namespace aotgrad
