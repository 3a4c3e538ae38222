// The op families. Each family file defines its rows (meta, kernel adapter, VJP) and returns them
// here; registry.cpp concatenates the families into the table. Adding an op touches one row in
// one family file.
#pragma once

#include <span>

#include "ops/op.h"

namespace aotgrad::ops {

std::span<const OpDef> pointwise_ops();  // pointwise.cpp: arithmetic, unary math, activations
std::span<const OpDef> compare_ops();    // compare.cpp: eq/ne/gt/ge/lt/le, where
std::span<const OpDef> reduction_ops();  // reduction.cpp: sum, mean, amax
std::span<const OpDef> linalg_ops();     // linalg.cpp: mm, bmm
std::span<const OpDef> nn_ops();         // nn.cpp: softmax, log_softmax, losses
std::span<const OpDef> view_ops();       // views.cpp: view, permute, expand, slice, ...
std::span<const OpDef> inplace_ops();    // inplace.cpp: add_, mul_, copy_, zero_, fill_
std::span<const OpDef> inplace_view_ops();  // inplace_view.cpp: t_, transpose_, unsqueeze_, squeeze_, as_strided_
std::span<const OpDef> factory_ops();    // factory.cpp: full, arange, rand, clone, _to_copy, ...
std::span<const OpDef> functional_ops();  // functional.cpp: scatters and updates functionalization emits
std::span<const OpDef> joining_ops();    // joining.cpp: cat, stack, split, unbind, chunk
std::span<const OpDef> indexing_ops();   // indexing.cpp: index_select, gather, embedding, masked_fill, tril
std::span<const OpDef> normalization_ops();  // normalization.cpp: native_layer_norm, native_dropout
std::span<const OpDef> random_ops();  // random.cpp: philox_rand, philox_randn, philox_dropout_mask
std::span<const OpDef> effect_ops();  // effects.cpp: print, with_effects
std::span<const OpDef> math_ops();  // math.cpp: clamp, abs, sign, max/min, var/std, cumsum, ...
std::span<const OpDef> conv_ops();     // conv.cpp: convolution, batch norm (and backward rows)
std::span<const OpDef> pooling_ops();  // pooling.cpp: max_pool2d_with_indices, _adaptive_avg_pool2d
// activation.cpp: hardtanh, hardsigmoid, hardswish, silu, their backward ops, relu_, silu_, ...
std::span<const OpDef> activation_ops();
std::span<const OpDef> transform_ops();
std::span<const OpDef> advanced_indexing_ops();
std::span<const OpDef> nn_extra_ops();  // nn_extra.cpp: leaky_relu, bce, smooth_l1, huber (issue 17)
std::span<const OpDef> reduce_extra_ops();  // reduce_extra.cpp: norm, all, any, argmin
std::span<const OpDef> attention_ops();  // attention.cpp: aotgrad.masked_attention and its backward
std::span<const OpDef> upsample_ops();  // upsample.cpp: upsample_bilinear2d and its backward  // index_tensor.cpp: index.Tensor, index_put(_)  // transform.cpp: constant_pad_nd, roll

}  // namespace aotgrad::ops
