// MNIST's IDX files and the TensorDataset. IDX: a big-endian u32 magic (0x803 for u8 images of
// rank 3, 0x801 for u8 labels of rank 1), one big-endian u32 per dimension, then the bytes. The
// header says how many images there are; the file must hold exactly that many bytes after it.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "aotgrad/data/datasets.h"
#include "tensor/message_text.h"

namespace aotgrad::data::datasets {

namespace {

constexpr uint32_t kImagesMagic = 0x803, kLabelsMagic = 0x801;

[[noreturn]] void fail(std::string_view source, const std::string& what) {
  throw std::invalid_argument("MNIST file '" + escape_for_message(source, 160) + "': " + what);
}

uint32_t read_u32(std::string_view bytes, size_t at) {
  auto b = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + i]));
  };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

std::string hex(uint32_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += kHex[(v >> shift) & 0xf];
  return s;
}

// The dimensions after the magic, checked: the header is complete, the magic is `magic`, and the
// payload is exactly the product of the dimensions (which cannot overflow: each is below 2^32 and
// their product is compared against the file size step by step).
std::vector<int64_t> header(std::string_view bytes, std::string_view source, uint32_t magic,
                            size_t rank, const char* what) {
  size_t header_bytes = 4 * (rank + 1);
  if (bytes.size() < header_bytes)
    fail(source, "truncated header: " + std::to_string(bytes.size()) + " bytes, an IDX " + what +
                     " file starts with " + std::to_string(header_bytes));
  uint32_t got = read_u32(bytes, 0);
  if (got != magic)
    fail(source, "magic number " + hex(got) + ", expected " + hex(magic) + " (IDX " + what +
                     "); is this the right file?");
  std::vector<int64_t> dims;
  size_t payload = bytes.size() - header_bytes, expected = 1;
  bool too_big = false;
  for (size_t i = 0; i < rank; ++i) {
    uint32_t d = read_u32(bytes, 4 * (i + 1));
    dims.push_back(d);
    if (d != 0 && expected > payload / d) too_big = true;
    if (!too_big) expected *= d;
  }
  std::string shape;
  for (int64_t d : dims) shape += (shape.empty() ? "" : "x") + std::to_string(d);
  // Strides are products of sizes with 0 counted as 1 (an empty file of 0 images may still
  // state its image size): they must fit in int64 too.
  unsigned __int128 strides = 1;
  for (int64_t d : dims) strides *= static_cast<uint64_t>(std::max<int64_t>(d, 1));
  if (strides > (unsigned __int128){1} << 62)
    fail(source, "the header's sizes " + shape + " are too large for a tensor");
  if (too_big || expected != payload)
    fail(source, "the header says " + shape + " but " + std::to_string(payload) +
                     " data bytes follow it" +
                     (too_big || expected > payload ? " (truncated?)" : ""));
  return dims;
}

std::string read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail(path, "cannot open the file (does it exist? MNIST needs the four IDX files in root)");
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open the file (is it readable?)");
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<size_t>(in.gcount()) != bytes.size())
    fail(path, "the file shrank while it was read");
  return bytes;
}

std::string join(const std::string& root, const char* name) {
  if (root.empty()) return name;
  return root.back() == '/' ? root + name : root + "/" + name;
}

}  // namespace

Tensor read_mnist_images(std::string_view bytes, std::string_view source) {
  std::vector<int64_t> d = header(bytes, source, kImagesMagic, 3, "images");
  Tensor images = make_tensor({d[0], 1, d[1], d[2]}, DType::f32);
  float* out = images.data_ptr<float>();
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data() + 16);
  for (size_t i = 0, n = bytes.size() - 16; i < n; ++i) out[i] = static_cast<float>(in[i]) / 255.0f;
  return images;
}

Tensor read_mnist_targets(std::string_view bytes, std::string_view source) {
  std::vector<int64_t> d = header(bytes, source, kLabelsMagic, 1, "labels");
  Tensor targets = make_tensor({d[0]}, DType::i64);
  int64_t* out = targets.data_ptr<int64_t>();
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data() + 8);
  for (int64_t i = 0; i < d[0]; ++i) out[i] = in[i];
  return targets;
}

MNIST::MNIST(const std::string& root, Mode mode) : is_train_(mode == Mode::kTrain) {
  std::string images_path =
      join(root, is_train_ ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte");
  std::string targets_path =
      join(root, is_train_ ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte");
  images_ = read_mnist_images(read_file(images_path), images_path);
  targets_ = read_mnist_targets(read_file(targets_path), targets_path);
  if (images_.sizes()[0] != targets_.sizes()[0])
    fail(targets_path, std::to_string(targets_.sizes()[0]) + " labels for " +
                           std::to_string(images_.sizes()[0]) + " images in '" +
                           escape_for_message(images_path, 160) + "'");
}

Example<> MNIST::get(size_t index) {
  if (index >= static_cast<size_t>(images_.sizes()[0]))
    throw std::out_of_range("MNIST::get: index " + std::to_string(index) + " of " +
                            std::to_string(images_.sizes()[0]) + " examples");
  auto i = static_cast<int64_t>(index);
  return {images_.select(0, i), targets_.select(0, i)};
}

std::optional<size_t> MNIST::size() const {
  return static_cast<size_t>(images_.sizes()[0]);
}

TensorDataset::TensorDataset(Tensor tensor) : tensor_(std::move(tensor)) {
  if (!tensor_.defined() || tensor_.dim() == 0)
    throw std::invalid_argument("TensorDataset: needs a tensor with at least one dimension");
}

TensorExample TensorDataset::get(size_t index) {
  if (index >= static_cast<size_t>(tensor_.sizes()[0]))
    throw std::out_of_range("TensorDataset::get: index " + std::to_string(index) + " of " +
                            std::to_string(tensor_.sizes()[0]) + " rows");
  return TensorExample(tensor_.select(0, static_cast<int64_t>(index)));
}

std::optional<size_t> TensorDataset::size() const {
  return static_cast<size_t>(tensor_.sizes()[0]);
}

}  // namespace aotgrad::data::datasets
