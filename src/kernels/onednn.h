// The one oneDNN CPU engine the kernels share, and a stream per thread on it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>

namespace aotgrad::kernels {

dnnl::engine& onednn_engine();

// Streams are not thread-safe: each thread executes primitives on its own.
dnnl::stream& onednn_stream();

// Whether every size of a problem fits a 32-bit int. oneDNN takes 64-bit dims, but its 2.x jit
// kernels copy several of them (channels, spatial sizes, kernel sizes) into int fields, which
// would truncate a larger one silently. Such a problem runs our int64 loop nest instead.
inline bool fits_onednn_int(std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes)
    if (s < 0 || s > std::numeric_limits<int32_t>::max()) return false;
  return true;
}

}  // namespace aotgrad::kernels
