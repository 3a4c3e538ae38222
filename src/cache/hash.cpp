// hash.h over xxHash's header-only form.
#include "cache/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace aotgrad::cache {

uint64_t hash64(std::string_view bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::string hash128_hex(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = kDigits[(h.high64 >> (4 * i)) & 0xf];
    out[31 - i] = kDigits[(h.low64 >> (4 * i)) & 0xf];
  }
  return out;
}

}  // namespace aotgrad::cache
