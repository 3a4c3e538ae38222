// The small f32 products of the fused attention's tiled path (kernels/attention.cpp): one strip of
// 16 query rows (or keys) at a time, over that strip's span of keys (or queries), so a causal
// mask's triangle is followed at 16-element steps instead of the 64-128 of one oneDNN call per
// block, without oneDNN's per-call packing and dispatch.
//
// Why not dnnl_sgemm here: on this machine's shapes (M, N <= 128, K <= 128, AVX-512, one thread,
// hot caches) oneDNN 2.6's sgemm ran 98-104 GFLOP/s against this kernel's 108-111 (a throwaway
// A/B program, the same calls alternating; 118 is the FMA peak), and a strip-sized call to
// oneDNN costs more than the work it would save.
//
// Numerics: each element of C is one chain of fused multiply-adds over k in order (no split
// accumulators), so a result does not depend on the ISA Highway picks (AVX2 and AVX-512 alike;
// SSE4, without FMA, rounds each product). Thread-safety: a pure function of its arguments.
#pragma once

#include <cstdint>

namespace aotgrad::kernels {

// C[m, n] = A[m, k] @ B[k, n] (C's elements overwritten; k = 0 gives zeros). A's element (i, p)
// is a[i * a_row + p * a_col] (a matrix or a transposed one); B's rows are ldb apart and C's ldc
// apart, both with unit-stride columns.
void strip_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col,
                const float* b, int64_t ldb, float* c, int64_t ldc);

}  // namespace aotgrad::kernels
