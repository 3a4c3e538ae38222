// Content hashes for the on-disk caches: xxHash (XXH3), the Debian package libxxhash-dev, used
// header-only (XXH_INLINE_ALL in hash.cpp), so the installed library and its users link nothing
// more. Not cryptographic: entries are named and checked against accidents (a truncated write, a
// flipped bit, a file from another program), not against someone who can write the directory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace aotgrad::cache {

// XXH3 64-bit of `bytes`.
uint64_t hash64(std::string_view bytes);
// XXH3 128-bit of `bytes` as 32 lowercase hex digits (a cache entry's file name).
std::string hash128_hex(std::string_view bytes);

}  // namespace aotgrad::cache
