// safetensors reader and writer (format: huggingface/safetensors, docs and
// safetensors/src/tensor.rs).
//
// Reading guide: read_from() is the one reader behind read_safetensors (a file) and
// read_safetensors_bytes (memory). It reads the 8-byte length and the header, parses the header
// with the library's JSON reader (tensor/json.h: the whole grammar, depth-limited, UTF-8 checked,
// every number kept as its literal text), turns it into TensorEntry rows, and validates them all
// against the file size (validate_layout) before it allocates a tensor or reads a data byte.
// Everything a malformed file can cause is a std::invalid_argument with one line naming the file
// and the field; no input reaches an unchecked size computation.
#include "aotgrad/safetensors.h"

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "tensor/checked_math.h"
#include "tensor/json.h"
#include "tensor/message_text.h"

namespace aotgrad {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors.cpp copies elements as raw little-endian bytes");

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference reader's limit
constexpr int kMaxJsonDepth = 32;                  // ours: a tensor entry needs 3

[[noreturn]] void fail(const std::string& source, const std::string& problem) {
  throw std::invalid_argument("safetensors file '" + escape_for_message(source, 160) +
                              "': " + problem);
}

std::string quoted(std::string_view name) {
  return "'" + escape_for_message(name, 80) + "'";
}

// The dtypes of the format in the reference's enum order (the writer sorts by it, widest first);
// `ours` is false for those aotgrad has no type for.
struct DtypeRow {
  const char* name;
  bool ours;
  DType dtype;
};
constexpr DtypeRow kDtypes[] = {
    {"BOOL", true, DType::b8},     {"U8", true, DType::u8},       {"I8", false, DType::b8},
    {"F8_E5M2", false, DType::b8}, {"F8_E4M3", false, DType::b8}, {"I16", false, DType::b8},
    {"U16", false, DType::b8},     {"F16", true, DType::f16},     {"BF16", true, DType::bf16},
    {"I32", true, DType::i32},     {"U32", false, DType::b8},     {"F32", true, DType::f32},
    {"F64", true, DType::f64},     {"I64", true, DType::i64},     {"U64", false, DType::b8},
};

size_t dtype_rank(DType t) {
  for (size_t i = 0; i < std::size(kDtypes); ++i)
    if (kDtypes[i].ours && kDtypes[i].dtype == t) return i;
  return 0;
}

// ---- the header ----

struct TensorEntry {
  std::string name;
  size_t dtype_row = 0;
  IntList shape;
  uint64_t begin = 0, end = 0;
};

struct Header {
  std::vector<TensorEntry> tensors;
  StringPairs metadata;
};

// A JSON number that must be a non-negative integer (shape entries, offsets), as the reference
// reader's usize fields require.
uint64_t unsigned_integer(const json::Value& v, const std::string& source,
                          const std::string& where) {
  if (v.kind != json::Value::Kind::number)
    fail(source, where + " must be a non-negative integer, found " + json::kind_name(v.kind));
  if (v.text.find_first_not_of("0123456789") != std::string::npos)
    fail(source,
         where + " must be a non-negative integer, found " + escape_for_message(v.text, 40));
  uint64_t n = 0;
  for (char c : v.text)
    if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, c - '0', &n))
      fail(source, where + " " + escape_for_message(v.text, 40) + " does not fit 64 bits");
  return n;
}

const json::Value& field(const json::Value& entry, const char* key, json::Value::Kind kind,
                         const std::string& source, const std::string& tensor) {
  const json::Value* found = nullptr;
  for (size_t i = 0; i < entry.keys.size(); ++i)
    if (entry.keys[i] == key) {
      if (found) fail(source, "tensor " + tensor + " lists \"" + key + "\" twice");
      found = &entry.values[i];
    }
  if (!found) fail(source, "tensor " + tensor + " has no \"" + key + "\"");
  if (found->kind != kind)
    fail(source, "tensor " + tensor + ": \"" + key + "\" must be " + json::kind_name(kind) +
                     ", found " + json::kind_name(found->kind));
  return *found;
}

TensorEntry tensor_entry(const std::string& name, const json::Value& v, const std::string& source) {
  const std::string t = quoted(name);
  if (v.kind != json::Value::Kind::object)
    fail(source, "tensor " + t + " must be an object, found " + json::kind_name(v.kind));
  TensorEntry e{name, 0, {}, 0, 0};
  const std::string& dtype = field(v, "dtype", json::Value::Kind::string, source, t).text;
  auto row = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                          [&](const DtypeRow& r) { return dtype == r.name; });
  if (row == std::end(kDtypes))
    fail(source, "tensor " + t + " has unknown dtype \"" + escape_for_message(dtype, 40) + "\"");
  if (!row->ours)
    fail(source, "tensor " + t + " has dtype " + row->name +
                     ", which aotgrad has no type for (it reads F32, F64, I64, BOOL, F16, BF16)");
  e.dtype_row = static_cast<size_t>(row - std::begin(kDtypes));
  const json::Value& shape = field(v, "shape", json::Value::Kind::array, source, t);
  for (size_t d = 0; d < shape.items.size(); ++d) {
    uint64_t s = unsigned_integer(shape.items[d], source,
                                  "tensor " + t + ": shape[" + std::to_string(d) + "]");
    if (s > static_cast<uint64_t>(INT64_MAX))
      fail(source, "tensor " + t + ": shape[" + std::to_string(d) + "] does not fit int64");
    e.shape.push_back(static_cast<int64_t>(s));
  }
  const json::Value& offsets = field(v, "data_offsets", json::Value::Kind::array, source, t);
  if (offsets.items.size() != 2)
    fail(source, "tensor " + t + ": \"data_offsets\" must be [begin, end], found " +
                     std::to_string(offsets.items.size()) + " numbers");
  e.begin = unsigned_integer(offsets.items[0], source, "tensor " + t + ": data_offsets[0]");
  e.end = unsigned_integer(offsets.items[1], source, "tensor " + t + ": data_offsets[1]");
  return e;
}

Header parse_header(std::string_view text, const std::string& source) {
  json::Value doc;
  try {
    doc = json::parse(text, kMaxJsonDepth);
  } catch (const json::ParseError& e) {
    fail(source, std::string("header: ") + e.what() + " at byte " + std::to_string(e.offset()) +
                     " of the header");
  }
  if (doc.kind != json::Value::Kind::object)
    fail(source, std::string("header must be a JSON object, found ") + json::kind_name(doc.kind));
  Header h;
  bool seen_metadata = false;
  std::vector<std::string> names;
  for (size_t i = 0; i < doc.keys.size(); ++i) {
    const std::string& key = doc.keys[i];
    const json::Value& v = doc.values[i];
    if (key == "__metadata__") {
      if (seen_metadata) fail(source, "header lists \"__metadata__\" twice");
      seen_metadata = true;
      if (v.kind != json::Value::Kind::object)
        fail(source, std::string("\"__metadata__\" must be an object of strings, found ") +
                         json::kind_name(v.kind));
      for (size_t m = 0; m < v.keys.size(); ++m) {
        const std::string& mk = v.keys[m];
        const json::Value& mv = v.values[m];
        if (mv.kind != json::Value::Kind::string)
          fail(source, "\"__metadata__\" entry " + quoted(mk) + " must be a string, found " +
                           json::kind_name(mv.kind));
        h.metadata.emplace_back(mk, mv.text);
      }
      continue;
    }
    h.tensors.push_back(tensor_entry(key, v, source));
    names.push_back(key);
  }
  std::sort(names.begin(), names.end());
  auto dup = std::adjacent_find(names.begin(), names.end());
  if (dup != names.end()) fail(source, "tensor " + quoted(*dup) + " is listed twice");
  return h;
}

// Sorts the entries by offset and checks that they tile [0, data_bytes) exactly, each as long as
// its shape and dtype say. After this every tensor's bytes lie inside the file.
void validate_layout(Header& h, uint64_t data_bytes, const std::string& source) {
  std::stable_sort(h.tensors.begin(), h.tensors.end(), [](const auto& a, const auto& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  uint64_t at = 0;
  for (const TensorEntry& e : h.tensors) {
    const std::string t = quoted(e.name);
    const DType dtype = kDtypes[e.dtype_row].dtype;
    if (e.end < e.begin)
      fail(source, "tensor " + t + ": data_offsets [" + std::to_string(e.begin) + ", " +
                       std::to_string(e.end) + "] end before they begin");
    if (e.begin != at)
      fail(source, "tensor " + t + ": data begins at byte " + std::to_string(e.begin) +
                       " of the data, expected " + std::to_string(at) +
                       " (tensors must follow each other without gaps or overlaps)");
    auto numel = checked_numel(e.shape);
    std::optional<int64_t> nbytes;
    if (numel) nbytes = checked_mul(*numel, static_cast<int64_t>(itemsize(dtype)));
    if (!nbytes)
      fail(source, "tensor " + t + ": shape " + escape_for_message(shape_to_string(e.shape), 80) +
                       " has a byte size beyond 64 bits");
    if (e.end - e.begin != static_cast<uint64_t>(*nbytes))
      fail(source, "tensor " + t + ": shape " + escape_for_message(shape_to_string(e.shape), 80) +
                       " of " + kDtypes[e.dtype_row].name + " needs " + std::to_string(*nbytes) +
                       " bytes, data_offsets give " + std::to_string(e.end - e.begin));
    at = e.end;
  }
  if (at != data_bytes)
    fail(source, "the tensors cover " + std::to_string(at) + " bytes of data, the file has " +
                     std::to_string(data_bytes) + " after the header");
}

// The reader behind read_safetensors and read_safetensors_bytes. `total` is the size of the
// source; `read(offset, n, dst)` copies its bytes [offset, offset + n), which exist, to dst.
template <class Read>
SafetensorsContents read_from(const std::string& source, uint64_t total, Read read) {
  if (total < 8)
    fail(source, "too short for a safetensors file (" + std::to_string(total) +
                     " bytes; the header length alone takes 8)");
  unsigned char len_bytes[8];
  read(0, 8, reinterpret_cast<char*>(len_bytes));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | len_bytes[i];
  if (n > kMaxHeaderBytes)
    fail(source, "header length " + std::to_string(n) + " exceeds the format's limit of " +
                     std::to_string(kMaxHeaderBytes) + " bytes (is this a safetensors file?)");
  if (n > total - 8)
    fail(source, "truncated header: it says " + std::to_string(n) + " bytes, the file has " +
                     std::to_string(total - 8) + " after the length");
  std::string text(n, '\0');
  read(8, n, text.data());
  Header h = parse_header(text, source);
  validate_layout(h, total - 8 - n, source);

  SafetensorsContents out;
  out.metadata = std::move(h.metadata);
  for (const TensorEntry& e : h.tensors) {
    const DType dtype = kDtypes[e.dtype_row].dtype;
    Tensor t = make_tensor(e.shape, dtype);
    const size_t nbytes = e.end - e.begin;
    if (nbytes > 0) {
      char* dst = t.impl()->data_bytes();
      read(8 + n + e.begin, nbytes, dst);
      if (dtype == DType::b8)  // any nonzero byte is true; our kernels expect 0 or 1
        for (size_t i = 0; i < nbytes; ++i) dst[i] = dst[i] != 0;
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

// ---- writing ----

void check_utf8_name(std::string_view s, const std::string& what, const std::string& dest) {
  if (json::invalid_utf8_at(s))
    fail(dest, what + " " + quoted(s) + " is not valid UTF-8; safetensors headers are JSON");
}

// Copies the elements of `t` in row-major order to `dst`.
void copy_row_major(const Tensor& t, char* dst) {
  if (t.is_contiguous()) {
    std::memcpy(dst, t.impl()->data_bytes(), static_cast<size_t>(t.numel()) * itemsize(t.dtype()));
    return;
  }
  Tensor c = t.contiguous();
  std::memcpy(dst, c.impl()->data_bytes(), static_cast<size_t>(c.numel()) * itemsize(c.dtype()));
}

}  // namespace

SafetensorsContents read_safetensors(const std::string& path) {
  // stat first: a directory, FIFO or device (/dev/zero) is refused before it is opened or read.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail(path, std::string("cannot open the file: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail(path, "not a regular file (a directory, device or pipe); expected a safetensors file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open the file: ") + std::strerror(errno));
  auto total = static_cast<uint64_t>(st.st_size);
  return read_from(path, total, [&](uint64_t offset, uint64_t n, char* dst) {
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(dst, static_cast<std::streamsize>(n));
    if (static_cast<uint64_t>(in.gcount()) != n)
      fail(path, "the file shrank while it was read (" + std::to_string(total) + " bytes before)");
  });
}

SafetensorsContents read_safetensors_bytes(std::string_view bytes, const std::string& source) {
  return read_from(source, bytes.size(), [&](uint64_t offset, uint64_t n, char* dst) {
    std::memcpy(dst, bytes.data() + offset, n);
  });
}

std::string write_safetensors_bytes(const NamedTensorList& tensors, const StringPairs& metadata,
                                    const std::string& destination) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    const auto& [name, t] = tensors[i];
    check_utf8_name(name, "tensor name", destination);
    if (name == "__metadata__")
      fail(destination, "a tensor may not be named \"__metadata__\" (the format reserves it)");
    if (!t.defined()) fail(destination, "tensor " + quoted(name) + " is undefined");
    if (t.is_fake())
      fail(destination, "tensor " + quoted(name) + " is a fake (traced) tensor: it has no data");
  }
  // The reference writer's order: widest dtype first (keeps every tensor aligned to its element
  // size when the header length is a multiple of 8), then by name, bytewise.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    size_t ra = dtype_rank(tensors[a].second.dtype()), rb = dtype_rank(tensors[b].second.dtype());
    if (ra != rb) return ra > rb;
    return tensors[a].first < tensors[b].first;
  });
  for (size_t i = 1; i < order.size(); ++i)
    if (tensors[order[i]].first == tensors[order[i - 1]].first)
      fail(destination, "tensor " + quoted(tensors[order[i]].first) + " is given twice");

  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      check_utf8_name(metadata[i].first, "metadata key", destination);
      check_utf8_name(metadata[i].second, "metadata value", destination);
      if (i) header += ',';
      json::append_string(header, metadata[i].first);
      header += ':';
      json::append_string(header, metadata[i].second);
    }
    header += '}';
  }
  uint64_t offset = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const auto& [name, t] = tensors[order[k]];
    uint64_t nbytes = static_cast<uint64_t>(t.numel()) * itemsize(t.dtype());
    if (k || !metadata.empty()) header += ',';
    json::append_string(header, name);
    header += ":{\"dtype\":\"";
    header += kDtypes[dtype_rank(t.dtype())].name;
    header += "\",\"shape\":[";
    for (size_t d = 0; d < t.sizes().size(); ++d) {
      if (d) header += ',';
      header += std::to_string(t.sizes()[d]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  size_t at = out.size();
  out.resize(at + offset);
  for (size_t k : order) {
    const Tensor& t = tensors[k].second;
    size_t nbytes = static_cast<size_t>(t.numel()) * itemsize(t.dtype());
    if (nbytes) copy_row_major(t, out.data() + at);
    at += nbytes;
  }
  return out;
}

void write_safetensors(const std::string& path, const NamedTensorList& tensors,
                       const StringPairs& metadata) {
  std::string out = write_safetensors_bytes(tensors, metadata, path);
  const std::string tmp = path + ".tmp";
  const std::string name = escape_for_message(path, 160);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      throw std::runtime_error("safetensors file '" + name + "': cannot open '" +
                               escape_for_message(tmp, 160) +
                               "' for writing: " + std::strerror(errno));
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw std::runtime_error("safetensors file '" + name + "': write failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error("safetensors file '" + name + "': cannot rename the written file " +
                             "onto it: " + std::strerror(err));
  }
}

}  // namespace aotgrad
