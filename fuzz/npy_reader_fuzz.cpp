// libFuzzer target: any byte string as the contents of a .npy file. Properties checked, besides
// "no crash, no leak, no UB, no hang, no allocation beyond the data the bytes hold":
//   - every rejection is a std::invalid_argument whose message is one printable line of bounded
//     length naming the source;
//   - an accepted file writes back (write_npy) to bytes that read back to the same tensor.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "aotgrad/npy.h"

namespace {

namespace ag = aotgrad;

[[noreturn]] void broken(const char* property, const std::string& detail) {
  std::fprintf(stderr, "npy_reader_fuzz: %s\n%s\n", property, detail.c_str());
  std::abort();
}

void check_message(const std::string& m) {
  if (m.rfind("npy file 'fuzz.npy': ", 0) != 0) broken("message does not name the source", m);
  if (m.size() > 400) broken("message too long", m);
  for (char c : m)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      broken("message holds a non-printable byte", m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ag::Tensor t;
  try {
    t = ag::read_npy_bytes(bytes, "fuzz.npy");
  } catch (const std::invalid_argument& e) {
    check_message(e.what());
    return 0;
  }
  if (t.dtype() == ag::DType::bf16) broken("read a bf16 tensor", "");
  std::string written = ag::write_npy_bytes(t);
  ag::Tensor back = ag::read_npy_bytes(written, "written.npy");
  if (back.dtype() != t.dtype() || back.sizes() != t.sizes())
    broken("write then read changes dtype or shape", "");
  size_t n = static_cast<size_t>(t.numel()) * ag::itemsize(t.dtype());
  if (n && std::memcmp(back.impl()->data_bytes(), t.impl()->data_bytes(), n) != 0)
    broken("write then read changes the values", "");
  return 0;
}
