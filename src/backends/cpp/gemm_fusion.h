// Product epilogues for the cpp backend: a matrix product (addmm with beta == alpha == 1, or mm) of
// f32 matrices whose result flows, through views only, into an activation (relu) and/or a
// residual add, runs as one oneDNN matmul with those ops as post-ops (kernels::mm_epilogue); a
// 2-D f32 convolution (not transposed) whose result flows straight into them runs as one oneDNN
// convolution with the same post-ops (kernels::conv2d_epilogue) when asked (`convolutions`: off
// in the default schedule, see CppOptions::conv_epilogues). The add may come before the
// activation (relu(conv(x) + x), a residual block without batch norm) or after it.
//
// Needs: a verified graph. Guarantees: a fusion only swallows values nothing else reads: each
// intermediate (the product, its views, the activation's result) has exactly one user and is not
// a graph output; in particular a value saved for the backward (a forward output) stays
// materialized, so in training the activation's input is never fused away. The residual has the
// add's shape (no broadcast) and the add's alpha is 1. No in-place node lies between the product
// and the last fused node (the step runs at the last node's place). The fused result is the last
// node's value, dense row-major. A fusion holds at least one post-op. A node belongs to at most
// one fusion: of two products added together, the first takes the add and the other's result
// is its residual.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpp/value_uses.h"
#include "graph/graph.h"
#include "kernels/conv.h"
#include "kernels/gemm.h"

namespace aotgrad::backends::cpp {

struct GemmFusion {
  std::vector<uint32_t> nodes;  // the product, views, activation, add: graph order
  int64_t bias = -1;            // value ids; -1: none
  uint32_t a = 0, b = 0;        // a convolution's input and weight
  kernels::GemmActivation activation = kernels::GemmActivation::none;
  int64_t residual = -1;
  bool residual_first = false;  // the add runs before the activation
  uint32_t output = 0;          // the last node's value
  bool conv = false;            // a convolution (conv_params), else a matrix product
  kernels::Conv2dParams conv_params;
};

// `convolutions`: convolutions start fusions too (CppOptions::conv_epilogues).
std::vector<GemmFusion> find_gemm_fusions(const graph::Graph& g, const ValueUses& uses,
                                          bool convolutions = false);

}  // namespace aotgrad::backends::cpp
