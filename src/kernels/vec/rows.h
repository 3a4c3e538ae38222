// Row kernels on contiguous f32 data, compiled for several x86 ISAs and picked at run time: the
// inner loops of softmax / log_softmax and their backwards (kernels/nn.cpp), mse_loss
// (kernels/nn.cpp), sum / mean (kernels/reduction.cpp) and layer norm (kernels/normalization.cpp).
//
// Accuracy contract (what the callers' PyTorch fixtures rely on): exp is Highway's, within 1 ULP
// of the true value, and NaN in gives NaN out; every sum that leaves a kernel as a statistic
// (a softmax denominator, a dot product, a row or column sum, a sum of squares) is accumulated in
// double, as the scalar loops these replace did.
//
// Thread-safety: the kernels are pure functions of their arguments (they write only `out`
// ranges); row_kernels() is initialized once, thread-safely.
#pragma once

#include <cstdint>
#include <span>

namespace aotgrad::kernels::vec {

struct RowKernels {
  const char* name;
  // y = softmax(x) or log_softmax(x) over n elements (n >= 1).
  void (*softmax)(const float* x, float* y, int64_t n, bool log);
  // softmax: r = y * (g - sum(g * y)); log_softmax: r = g - exp(y) * sum(g).
  void (*softmax_backward)(const float* g, const float* y, float* r, int64_t n, bool log);
  // sum(x) in double.
  double (*sum)(const float* x, int64_t n);
  // max(x) over n >= 0 elements: -inf when empty, NaN when any element is NaN.
  float (*max)(const float* x, int64_t n);
  // acc[i] += x[r * stride + i] for r < rows (a column sum's rows, accumulators in double).
  void (*add_rows)(double* acc, const float* x, int64_t stride, int64_t rows, int64_t n);
  // sum((a - b)^2) in double: mse_loss's reduction.
  double (*squared_distance)(const float* a, const float* b, int64_t n);
  // out = scale * (a - b) * g, g a single value (g_stride 0) or n contiguous ones: mse_loss's
  // backward.
  void (*scaled_difference)(const float* a, const float* b, const float* g, int64_t g_stride,
                            float scale, float* out, int64_t n);
  // Mean and sum of squared deviations of x, in double (two passes: the sum, then the squared
  // deviations from the mean).
  void (*moments)(const float* x, int64_t n, double* mean, double* m2);
  // y = (x - mean) * rstd * w + b; w and b may be null (treated as 1 and 0).
  void (*normalize)(const float* x, float mean, float rstd, const float* w, const float* b,
                    float* y, int64_t n);
  // One row of layer norm's backward, xhat = (x - mean) * rstd, gw = g * w (w null: 1):
  // dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)) (dx null: skipped; the two means
  // accumulate in double), and pw += g * xhat, pb += g (pw / pb null: skipped).
  void (*layer_norm_backward)(const float* g, const float* x, float mean, float rstd,
                              const float* w, float* dx, float* pw, float* pb, int64_t n);
  // x[i] = mask[i] ? fill : x[i] * scale: attention's scale and mask on one row of scores
  // (kernels/attention.cpp; a masked element is `fill` whatever x[i] was, NaN included).
  void (*scale_or_fill)(float* x, const bool* mask, float scale, float fill, int64_t n);
};

const RowKernels& row_kernels();
// Every compiled target this CPU runs, best first: tests check each against a reference.
std::span<const RowKernels* const> row_kernel_targets();

}  // namespace aotgrad::kernels::vec
