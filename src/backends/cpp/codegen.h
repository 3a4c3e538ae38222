// Code generation for the cpp backend: one C++ translation unit per graph.
//
// Needs: a Schedule of the graph (schedule.h). Guarantees: the source defines, for each kernel,
// `extern "C" void NAME(const char* const* in, char* const* out, const int64_t* sizes,
// const int64_t* strides, const double* scalars)`: `sizes` holds the collapsed loop sizes
// (dim_groups.size() of them), `strides` the inputs' collapsed strides in elements (one row of
// that length per input), `scalars` the kernel's scalar arguments. Outputs are contiguous, but
// for one written into a cat's slice (Kernel::out_cat): when a kernel has one, `strides` holds a
// row per output after the inputs' rows, and such an output steps by its row (unit inner stride).
// Shapes and scalars are arguments, not constants; only the rank, dtypes and which inputs are
// broadcast or unit-stride in the innermost loop are baked in. The outer loops run under
// `#pragma omp parallel for` when the kernel has at least kParallelGrain elements (else inline,
// without an OpenMP region); the inner loop is left to the compiler's auto-vectorizer, with f32
// exp, erf and tanh as inline branch-free code it can vectorize (codegen.cpp, kMathHelpers).
// The text depends only on the graph, so equal graphs give equal sources (and hit the build
// cache).
#pragma once

#include <string>

#include "backends/cpp/schedule.h"
#include "graph/graph.h"

namespace aotgrad::backends::cpp {

// Elements below which a kernel runs on one thread (waking the team costs more).
inline constexpr int64_t kParallelGrain = 32768;
// Elements of the innermost dim one task handles, so a long flat loop still splits over threads.
inline constexpr int64_t kInnerChunk = 4096;

std::string generate_source(const graph::Graph& g, const Schedule& s);

}  // namespace aotgrad::backends::cpp
