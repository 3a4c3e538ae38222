// The masked attention rows' one entry point outside the op table: what the cpp backend runs
// for a recomputed aotgrad.masked_attention together with the aotgrad.masked_attention_backward
// of the same q, k, v, mask and scale (backends/cpp/attention_pairs.h).
#pragma once

#include <vector>

#include "ops/op.h"

namespace aotgrad::ops {

// `backward_args`: the arguments of an aotgrad.masked_attention_backward.default node, checked as
// the row checks them. Returns the row's three results, then the forward's output for the same
// q, k, v, mask and scale, from one computation of the weights.
std::vector<Tensor> masked_attention_with_backward(const OpArgs& backward_args);

}  // namespace aotgrad::ops
