// libFuzzer target: any byte string through deserialize_artifact (aot/artifact.h). The header's
// checksum would turn nearly every mutation into one early rejection, so an input that does not
// start with 'A' (as every artifact does) is taken, after its first byte, as a body and given a
// correct header (magic, version, length, checksum): the fuzzer then explores the field readers
// and validate_artifact. The seeds (fuzz/corpus/artifact_fuzz/) come in both forms. Properties
// checked, besides "no crash, no leak, no UB, no hang":
//   - every rejection is an ArtifactError whose message is one printable line of at most ~300
//     characters;
//   - an accepted artifact serializes back to exactly the bytes read, and instantiates; when its
//     inputs are small, plain and unaliased, the runtime runs on zero inputs that meet its guards
//     (a kernel may refuse the values with an exception, never crash).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aot/artifact.h"
#include "aot/runtime.h"
#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"

namespace {

namespace ag = aotgrad;

[[noreturn]] void broken(const char* property, const std::string& detail) {
  std::fprintf(stderr, "artifact_fuzz: %s\n%s\n", property, detail.c_str());
  std::abort();
}

void check_message(const std::string& m) {
  if (m.empty() || m.size() > 320) broken("message length out of bounds", m);
  for (char c : m)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      broken("message holds a non-printable byte", m);
}

void put_le(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>(v >> (8 * i));
}

// `body` behind the header serialize_artifact writes.
std::string with_header(std::string_view body) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64, as artifact_io.cpp
  for (char c : body) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  std::string out = "AOTGRADA";
  put_le(out, ag::aot::kArtifactFormatVersion, 4);
  put_le(out, body.size(), 8);
  put_le(out, h, 8);
  return out.append(body);
}

// Runs the runtime on zeros that meet the guards, when that is cheap and needs no aliasing.
void run_small(const ag::aot::Artifact& a, const ag::aot::Runtime& rt) {
  if (!a.guards.plan.trivial() || !a.guards.plan.unmergeable.empty()) return;
  std::vector<ag::Tensor> inputs;
  for (const ag::aot::InputGuard& g : a.guards.inputs) {
    int64_t numel = 1;
    for (int64_t s : g.sizes) {
      if (s < 0 || s > 64) return;
      numel *= s;
    }
    if (numel > 4096 || g.storage_offset != 0 || g.strides != ag::contiguous_strides(g.sizes))
      return;
    ag::Tensor t = ag::zeros(g.sizes, g.dtype);
    if (g.requires_grad) {
      if (!ag::is_floating(g.dtype)) return;
      t.requires_grad_();
    }
    inputs.push_back(t);
  }
  std::optional<ag::NoGradGuard> no_grad;
  if (!a.guards.grad_mode) no_grad.emplace();
  try {
    rt.run(inputs);
  } catch (const std::exception&) {
    // A kernel may refuse values it was never traced with (an index out of range): fine.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  std::string bytes = !raw.empty() && raw[0] != 'A' ? with_header(raw.substr(1)) : std::string(raw);
  ag::aot::Artifact a;
  try {
    a = ag::aot::deserialize_artifact(bytes);
  } catch (const ag::ArtifactError& e) {
    check_message(e.what());
    return 0;
  }
  if (ag::aot::serialize_artifact(a) != bytes)
    broken("serialize(deserialize(bytes)) != bytes", std::to_string(bytes.size()) + " bytes");
  std::shared_ptr<const ag::aot::Runtime> rt;
  try {
    rt = ag::aot::instantiate(a, ag::aot::named_compilers(a.config));
  } catch (const std::invalid_argument& e) {
    check_message(e.what());  // a compiler or view op this build does not have
    return 0;
  }
  run_small(a, *rt);
  return 0;
}
