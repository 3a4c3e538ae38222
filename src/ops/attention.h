// The masked attention rows' entry points outside the op table, for the cpp backend: a recomputed
// aotgrad.masked_attention together with the aotgrad.masked_attention_backward of the same q, k,
// v, mask and scale (backends/cpp/attention_pairs.h), and the backward writing its gradients
// into buffers the caller gives (the heads' slices of a cat, backends/cpp/cat_fusion.h).
#pragma once

#include <array>
#include <vector>

#include "ops/op.h"

namespace aotgrad::ops {

// `backward_args`: the arguments of an aotgrad.masked_attention_backward.default node, checked as
// the row checks them. Returns the row's three results, then the forward's output for the same
// q, k, v, mask and scale, from one computation of the weights. A defined into[i] receives
// gradient i (kernels::masked_attention_backward says what it may be) and is returned as it.
std::vector<Tensor> masked_attention_with_backward(const OpArgs& backward_args,
                                                   const std::array<Tensor, 3>& into = {});

// The backward row's three results, gradient i written into into[i] where that is defined.
std::vector<Tensor> masked_attention_backward_into(const OpArgs& backward_args,
                                                   const std::array<Tensor, 3>& into);

}  // namespace aotgrad::ops
