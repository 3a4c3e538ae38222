// make-mnist-idx: writes a synthetic, learnable MNIST look-alike in the IDX format that
// torch::data::datasets::MNIST reads (no data set can be downloaded here):
//
//   make-mnist-idx [--out DIR] [--train N] [--test N] [--seed S] [--pgm DIR] [--pgm-count N]
//
// DIR (default ./data) receives train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte: 28x28 u8 images, labels 0-9. Each digit is
// drawn as the segments of a seven-segment display (so classes differ in shape, as handwriting
// does), with a random shift, stroke width and brightness, plus pixel noise: a small convnet
// learns it to well above chance within a few hundred steps. --pgm DIR also writes images as
// binary PGM files DIR/<label>/<index>.pgm, for examples/libtorch/custom_dataset.cpp.
// The same seed writes the same bytes.
#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int kSide = 28;
using Image = std::array<uint8_t, kSide * kSide>;

// Segments a..g of a seven-segment display (a top, b top right, c bottom right, d bottom,
// e bottom left, f top left, g middle), as bit masks per digit.
constexpr std::array<uint8_t, 10> kSegments = {0x3F, 0x06, 0x5B, 0x4F, 0x66,
                                               0x6D, 0x7D, 0x07, 0x7F, 0x6F};

struct Box {
  int x0, y0, x1, y1;  // inclusive
};

void fill(Image& img, Box b, int value) {
  for (int y = std::max(0, b.y0); y <= std::min(kSide - 1, b.y1); ++y)
    for (int x = std::max(0, b.x0); x <= std::min(kSide - 1, b.x1); ++x)
      img[y * kSide + x] = static_cast<uint8_t>(std::max<int>(img[y * kSide + x], value));
}

Image draw_digit(int label, std::mt19937& rng) {
  std::uniform_int_distribution<int> shift(-2, 2), width(1, 2), bright(170, 255), noise(0, 40);
  Image img{};
  int dx = shift(rng), dy = shift(rng), w = width(rng), v = bright(rng);
  int left = 8 + dx, right = 19 + dx, top = 5 + dy, mid = 13 + dy, bottom = 22 + dy;
  const std::array<Box, 7> boxes = {{
      {left, top, right, top + w},             // a
      {right - w, top, right, mid},            // b
      {right - w, mid, right, bottom},         // c
      {left, bottom - w, right, bottom},       // d
      {left, mid, left + w, bottom},           // e
      {left, top, left + w, mid},              // f
      {left, mid - w / 2, right, mid + w / 2}  // g
  }};
  for (int s = 0; s < 7; ++s)
    if (kSegments[label] >> s & 1) fill(img, boxes[s], v);
  for (uint8_t& p : img) p = static_cast<uint8_t>(std::min(255, p + noise(rng)));
  return img;
}

void put_u32(std::ofstream& out, uint32_t v) {
  const char bytes[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                         static_cast<char>(v >> 8), static_cast<char>(v)};
  out.write(bytes, 4);
}

std::ofstream open_out(const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  return out;
}

// Writes `count` images and labels as <prefix>-images-idx3-ubyte / <prefix>-labels-idx1-ubyte.
void write_split(const std::filesystem::path& dir, const std::string& prefix, uint32_t count,
                 std::mt19937& rng) {
  std::ofstream images = open_out(dir / (prefix + "-images-idx3-ubyte"));
  std::ofstream labels = open_out(dir / (prefix + "-labels-idx1-ubyte"));
  put_u32(images, 2051);
  put_u32(images, count);
  put_u32(images, kSide);
  put_u32(images, kSide);
  put_u32(labels, 2049);
  put_u32(labels, count);
  for (uint32_t i = 0; i < count; ++i) {
    int label = static_cast<int>(i % 10);
    Image img = draw_digit(label, rng);
    images.write(reinterpret_cast<const char*>(img.data()), img.size());
    labels.put(static_cast<char>(label));
  }
  if (!images || !labels)
    throw std::runtime_error("writing " + prefix + " files in " + dir.string() + " failed");
}

void write_pgm(const std::filesystem::path& dir, uint32_t count, std::mt19937& rng) {
  for (uint32_t i = 0; i < count; ++i) {
    int label = static_cast<int>(i % 10);
    std::filesystem::path sub = dir / std::to_string(label);
    std::filesystem::create_directories(sub);
    std::ofstream out = open_out(sub / (std::to_string(i) + ".pgm"));
    Image img = draw_digit(label, rng);
    out << "P5\n" << kSide << " " << kSide << "\n255\n";
    out.write(reinterpret_cast<const char*>(img.data()), img.size());
  }
}

uint32_t parse_count(const std::string& flag, const std::string& text) {
  size_t used = 0;
  unsigned long v = 0;
  try {
    v = std::stoul(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v > 10'000'000)
    throw std::invalid_argument(flag + " expects a count from 0 to 10000000, got '" + text + "'");
  return static_cast<uint32_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::filesystem::path out = "data", pgm;
    uint32_t train = 6000, test = 1000, seed = 1, pgm_count = 500;
    for (int i = 1; i < argc; ++i) {
      std::string flag = argv[i];
      if (flag == "--help" || flag == "-h") {
        std::cout << "usage: make-mnist-idx [--out DIR] [--train N] [--test N] [--seed S] "
                     "[--pgm DIR] [--pgm-count N]\n";
        return 0;
      }
      if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value (see --help)");
      std::string value = argv[++i];
      if (flag == "--out")
        out = value;
      else if (flag == "--pgm")
        pgm = value;
      else if (flag == "--train")
        train = parse_count(flag, value);
      else if (flag == "--test")
        test = parse_count(flag, value);
      else if (flag == "--seed")
        seed = parse_count(flag, value);
      else if (flag == "--pgm-count")
        pgm_count = parse_count(flag, value);
      else
        throw std::invalid_argument("unknown flag '" + flag + "' (see --help)");
    }
    std::mt19937 rng(seed);
    std::filesystem::create_directories(out);
    write_split(out, "train", train, rng);
    write_split(out, "t10k", test, rng);
    std::cout << "wrote " << train << " training and " << test << " test digits to " << out.string()
              << "\n";
    if (!pgm.empty()) {
      write_pgm(pgm, pgm_count, rng);
      std::cout << "wrote " << pgm_count << " PGM images to " << pgm.string() << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "make-mnist-idx: " << e.what() << "\n";
    return 2;
  }
}
