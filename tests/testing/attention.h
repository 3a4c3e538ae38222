// The eager composite the fuse_attention pass replaces (graph/fuse_attention.h) and the fused
// attention rows compute (kernels/attention.h): what the attention tests compare against.
#pragma once

#include <limits>

#include "aotgrad/ops.h"
#include "aotgrad/tensor.h"

namespace aotgrad::testing {

// softmax(masked_fill((q @ k^T) * scale, mask, -inf), -1) @ v; no masked_fill without a mask.
inline Tensor attention_composite(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& mask, double scale) {
  Tensor s = mul(matmul(q, k.transpose(-2, -1)), Scalar(scale));
  if (mask.defined()) s = masked_fill(s, mask, Scalar(-std::numeric_limits<double>::infinity()));
  return matmul(softmax(s, -1), v);
}

}  // namespace aotgrad::testing
