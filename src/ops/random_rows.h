// The eager random rows built on rand / randn (ops/random.cpp: bernoulli, bernoulli_, rand_like,
// randn_like, randint, normal, uniform_) and how the tracer records them.
#pragma once

#include "ops/op.h"

namespace aotgrad::ops {

// The row's results computed by dispatching rand / randn and pointwise ops (so under a tracer
// the draws become functional philox nodes, and eagerly the same draws happen in the same
// order); nullptr for every other row. An in-place row writes self with copy_ and returns it.
using RandomDecomposition = std::vector<Tensor> (*)(const OpArgs&);
RandomDecomposition random_decomposition(const OpDef& op);

}  // namespace aotgrad::ops
