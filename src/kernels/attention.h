// Masked scaled dot-product attention as one kernel (the rows aotgrad.masked_attention and
// aotgrad.masked_attention_backward, ops/attention.cpp): what the eager composite
//
//   softmax(masked_fill((q @ k^T) * scale, mask, -inf), -1) @ v
//
// computes, without the clones that make the heads contiguous and without the [*, T, S] weights
// leaving the cache. The fuse_attention graph pass (graph/fuse_attention.h) rewrites that
// composite into these rows.
//
// Shapes: q [*, T, D], k [*, S, D], v [*, S, Dv] with the same batch dims *; mask (optional, bool,
// true = masked out, as masked_fill reads it) broadcastable to [*, T, S]. Any strides: the heads
// of a fused qkv projection are read where they lie. Results are contiguous.
//
// Numerics: each [T, S] block is computed as the composite computes it: the product, then times
// `scale`, then the mask, then softmax with the row kernels eager softmax uses
// (kernels/vec/rows.h); the backward recomputes the weights the same way (nothing but q, k, v and
// the mask is saved) and applies eager softmax's backward, then the mask (0), then `scale`. Only
// the products' summation order differs from the composite (f32: oneDNN's sgemm, and on the tiled
// path kernels/attention_gemm.h's strip kernel, per batch entry, in parallel over the batch; other
// dtypes: a plain loop nest). A row whose every entry is masked gives NaN, as softmax of all -inf
// does, and a zero gradient, as the composite's masked_fill makes it.
//
// Tiling: the mask is read once per call (per distinct mask of the batch) for the strips of 16
// rows and of 16 keys it leaves something in; the softmax rows and four of the seven products then
// cover only those (a causal mask at T = 128: ~56% of the work), the two q @ k^T-like products
// blocks of 64-128 rows (at T = 128: 3/4; T = 512: 5/8); not below 64 query rows. Skipped
// weights are exactly 0, so this changes no value: it is used only when q, k, v, the output
// gradient and the scale are finite (0 times inf would be NaN in the composite), and the backward
// computes every block of an entry whose weights hold a NaN row. The strip kernel is one thread's:
// a batch of fewer entries than threads (run one entry at a time, oneDNN's products threaded)
// runs its strips on one thread.
//
// Memory: two (forward) or three (backward) [T, S] blocks of scratch per thread, kept by the
// thread between calls up to 8 MiB; not tiled over S (fine up to a few thousand positions;
// flash-style tiling over S is not done).
#pragma once

#include <array>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// The attention output [*, T, Dv]. f32 and f64 (q, k, v of one dtype; checked by the op row).
Tensor masked_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                        double scale);

// Gradients {dq, dk, dv} (each contiguous, shaped like its input) for output gradient `grad_out`
// [*, T, Dv]; `need` picks which are computed (the others come back undefined). A defined
// `into[i]` (a needed result's dtype and sizes, rows unit-stride and not overlapping, any batch
// strides: a view of a caller's buffer, e.g. the heads' slice of a cat the cpp backend fills,
// backends/cpp/cat_fusion.h) is written instead of a new tensor and returned; the values are the
// same either way.
std::array<Tensor, 3> masked_attention_backward(const Tensor& grad_out, const Tensor& q,
                                                const Tensor& k, const Tensor& v,
                                                const Tensor& mask, double scale,
                                                std::array<bool, 3> need,
                                                const std::array<Tensor, 3>& into = {});

// masked_attention_backward's {dq, dk, dv}, then masked_attention's output from the same weights:
// one pass over the [T, S] blocks where a backward that must recompute the output (a partition
// that saved only q, k, v) would otherwise make two (backends/cpp/attention_pairs.h). The output
// equals masked_attention's up to the products' summation order.
std::array<Tensor, 4> masked_attention_with_backward(const Tensor& grad_out, const Tensor& q,
                                                     const Tensor& k, const Tensor& v,
                                                     const Tensor& mask, double scale,
                                                     std::array<bool, 3> need,
                                                     const std::array<Tensor, 3>& into = {});

}  // namespace aotgrad::kernels
