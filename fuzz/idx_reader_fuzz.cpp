// libFuzzer target: any byte string as an MNIST IDX file, read both as images and as labels.
// Properties checked, besides "no crash, no leak, no UB, no hang, no allocation beyond what the
// bytes hold":
//   - every rejection is a std::invalid_argument whose message is one printable line of bounded
//     length naming the source;
//   - an accepted file's tensor has exactly the header's shape and one element per data byte,
//     images in [0, 1] and labels in [0, 255].
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "aotgrad/data/datasets.h"

namespace {

namespace ag = aotgrad;

[[noreturn]] void broken(const char* property, const std::string& detail) {
  std::fprintf(stderr, "idx_reader_fuzz: %s\n%s\n", property, detail.c_str());
  std::abort();
}

void check_message(const std::string& m) {
  if (m.rfind("MNIST file 'fuzz.idx': ", 0) != 0) broken("message does not name the source", m);
  if (m.size() > 400) broken("message too long", m);
  for (char c : m)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      broken("message holds a non-printable byte", m);
}

template <typename Read>
void check(std::string_view bytes, size_t header, Read read) {
  ag::Tensor t;
  try {
    t = read(bytes, "fuzz.idx");
  } catch (const std::invalid_argument& e) {
    check_message(e.what());
    return;
  }
  if (static_cast<size_t>(t.numel()) != bytes.size() - header)
    broken("element count differs from the data bytes", "");
  for (double v : t.to(ag::DType::f64).to_vector<double>())
    if (!(v >= 0 && v <= (header == 16 ? 1.0 : 255.0))) broken("value out of range", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check(bytes, 16, ag::data::datasets::read_mnist_images);
  check(bytes, 8, ag::data::datasets::read_mnist_targets);
  return 0;
}
