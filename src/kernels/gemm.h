// Matrix products for the linalg family.
//
// f32 goes to oneDNN's matmul with strided memory descriptors, so a transposed operand (a view
// from t() / transpose()) is read in place; one primitive per (shapes, strides) is cached per
// thread. With several threads, a product whose b is row-major and at least 256 columns wide runs
// as one column block of b per thread, each a one-thread oneDNN call (run_in_column_blocks: oneDNN
// 2.x had both threads pack all of b; docs/performance.md, thirteenth pass). f64 and i64 (oneDNN
// has no f64 matmul), layouts oneDNN only serves with its slow reference implementation, and any
// case oneDNN rejects run a cache-blocked OpenMP loop nest.
// f16/bf16 compute in f32. Results are contiguous; operands must share one dtype (checked by the
// op layer's meta functions).
#pragma once

#include <cstdint>
#include <string>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// [M, K] @ [K, N] -> [M, N].
Tensor mm(const Tensor& a, const Tensor& b);
// [B, M, K] @ [B, K, N] -> [B, M, N].
Tensor bmm(const Tensor& a, const Tensor& b);
// beta * self + alpha * (a @ b), with `self` broadcast to [M, N]. beta == 0 ignores self
// entirely (NaN included), as torch.addmm does.
Tensor addmm(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta,
             const Scalar& alpha);

// The loop-nest fallback for [B, M, K] @ [B, K, N], exposed so tests can compare both paths.
Tensor bmm_loop(const Tensor& a, const Tensor& b);
// Which implementation bmm(a, b) would run: "onednn:<oneDNN impl name>" or "loop".
std::string gemm_backend(const Tensor& a, const Tensor& b);

// ---- a linear layer's epilogue fused into the product (the cpp backend's GEMM steps) ----

// relu only: oneDNN's gelu post-ops lose gelu's negative tail (0 where the eager kernel gives
// -2.1e-32 at x = -12), so no caller may fuse gelu here.
enum class GemmActivation : uint8_t { none, relu };

// What runs on a product (a matmul here, or a convolution: conv.h) before it is stored, as oneDNN
// post-ops: the bias (addmm's self with beta == alpha == 1: f32 [N] or [rows, N] with rows 1 or M;
// a convolution's [O]), then the activation and the residual (f32, as many elements as the
// result, contiguous) in either order: added after the activation, or before it when
// `residual_first` (relu(conv(x) + x)). Undefined tensors mean none.
struct GemmEpilogue {
  Tensor bias;
  GemmActivation activation = GemmActivation::none;
  Tensor residual;
  bool residual_first = false;
};

// activation(a @ b + bias) + residual for f32 [M, K] @ [K, N], into a fresh contiguous tensor of
// `out_sizes` (M * N elements). Transposed operands are read through their strides. Returns an
// undefined tensor when oneDNN cannot run it fused (another dtype, an empty or oversized problem,
// a rejected case, or only oneDNN's reference implementation): the caller runs the ops unfused.
Tensor mm_epilogue(const Tensor& a, const Tensor& b, const GemmEpilogue& epilogue,
                   const IntList& out_sizes);

}  // namespace aotgrad::kernels
