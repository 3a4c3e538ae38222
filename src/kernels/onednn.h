// The one oneDNN CPU engine the kernels share, and a stream per thread on it.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace aotgrad::kernels {

dnnl::engine& onednn_engine();

// Streams are not thread-safe: each thread executes primitives on its own.
dnnl::stream& onednn_stream();

}  // namespace aotgrad::kernels
