// libFuzzer target: any byte string as the contents of a safetensors file. Properties checked,
// besides "no crash, no leak, no UB, no hang, no allocation beyond the data the bytes hold":
//   - every rejection is a std::invalid_argument whose message is one printable line of bounded
//     length naming the source;
//   - an accepted file writes back (write_safetensors_bytes) to bytes that read back to the same
//     names, metadata, dtypes, shapes and element bytes, and writing those again gives the same
//     bytes (the writer's output is canonical).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "aotgrad/safetensors.h"

namespace {

namespace ag = aotgrad;

[[noreturn]] void broken(const char* property, const std::string& detail) {
  std::fprintf(stderr, "safetensors_fuzz: %s\n%s\n", property, detail.c_str());
  std::abort();
}

void check_message(const std::string& m) {
  if (m.rfind("safetensors file 'fuzz.safetensors': ", 0) != 0)
    broken("message does not name the source", m);
  if (m.size() > 400) broken("message too long", m);
  for (char c : m)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      broken("message holds a non-printable byte", m);
}

bool same_tensor(const ag::Tensor& a, const ag::Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  size_t n = static_cast<size_t>(a.numel()) * ag::itemsize(a.dtype());
  return n == 0 || std::memcmp(a.impl()->data_bytes(), b.impl()->data_bytes(), n) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ag::SafetensorsContents c;
  try {
    c = ag::read_safetensors_bytes(bytes, "fuzz.safetensors");
  } catch (const std::invalid_argument& e) {
    check_message(e.what());
    return 0;
  }
  std::string written = ag::write_safetensors_bytes(c.tensors, c.metadata);
  ag::SafetensorsContents back = ag::read_safetensors_bytes(written, "written.safetensors");
  if (back.metadata != c.metadata) broken("write then read changes the metadata", "");
  if (back.tensors.size() != c.tensors.size()) broken("write then read changes the count", "");
  for (const auto& [name, t] : c.tensors) {
    const ag::Tensor* found = nullptr;
    for (const auto& [n, u] : back.tensors)
      if (n == name) found = &u;
    if (!found) broken("write then read loses a tensor", name);
    if (!same_tensor(t, *found)) broken("write then read changes a tensor", name);
  }
  if (ag::write_safetensors_bytes(back.tensors, back.metadata) != written)
    broken("writing what was read back gives other bytes", "");
  return 0;
}
