// The op families. Each family file defines its rows (meta, kernel adapter, VJP) and returns them
// here; registry.cpp concatenates the families into the table. Adding an op touches one row in
// one family file.
#pragma once

#include <span>

#include "ops/op.h"

namespace aotgrad::ops {

std::span<const OpDef> pointwise_ops();  // pointwise.cpp: arithmetic, unary math, activations
std::span<const OpDef> compare_ops();    // compare.cpp: eq/gt/lt, where
std::span<const OpDef> reduction_ops();  // reduction.cpp: sum, mean, amax
std::span<const OpDef> linalg_ops();     // linalg.cpp: mm, bmm
std::span<const OpDef> nn_ops();         // nn.cpp: softmax, log_softmax, losses
std::span<const OpDef> view_ops();       // views.cpp: view, permute, expand, slice, ...
std::span<const OpDef> inplace_ops();    // inplace.cpp: add_, mul_, copy_, zero_, fill_
std::span<const OpDef> factory_ops();    // factory.cpp: full, arange, rand, clone, _to_copy, ...
std::span<const OpDef> functional_ops();  // functional.cpp: scatters and updates functionalization emits

}  // namespace aotgrad::ops
