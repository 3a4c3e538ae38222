// The one oneDNN CPU engine the kernels share, and a stream per thread on it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/gemm.h"

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

// A product's epilogue (GemmEpilogue) as oneDNN post-ops, in the order they run, for a matmul or a
// convolution whose result is described by `dst`: the activation and the residual add, the add
// first when `residual_first`. The add is a binary post-op reading a tensor laid out as `dst`
// (`residual_index`, unless null, receives its position, for DNNL_ARG_ATTR_MULTIPLE_POST_OP; -1
// without a residual), or with `residual_in_dst` a sum post-op: the caller has copied the residual
// into dst (oneDNN's GEMM-based convolution runs a binary post-op ~6x slower than the convolution).
dnnl::post_ops epilogue_post_ops(GemmActivation activation, bool residual, bool residual_first,
                                 const dnnl::memory::desc& dst, int* residual_index,
                                 bool residual_in_dst = false);

}  // namespace aotgrad::kernels
