// Batch normalisation kernels. Every tensor is read as [N, C, S] (S: the product of the spatial
// dims) after a contiguous copy when needed; channels are independent, so the OpenMP loop runs
// over C and each thread owns its channels' statistics and output elements.
#include "kernels/batch_norm.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/copy.h"
#include "kernels/parallel.h"
#include "tensor/dtype_dispatch.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kParallelWork = 32768;

struct Layout {
  int64_t N, C, S;
};

Layout layout(const Tensor& input) {
  Layout l{input.size(0), input.size(1), 1};
  for (int64_t d = 2; d < input.dim(); ++d) l.S *= input.size(d);
  return l;
}

DType compute_dtype(DType t) {
  return t == DType::f64 ? DType::f64 : DType::f32;
}

Tensor dense(const Tensor& t, DType dtype) {
  if (t.is_contiguous() && t.dtype() == dtype) return t;
  return contiguous_copy(t, dtype);
}

// A per-channel parameter as doubles; `fallback` everywhere when `t` is undefined.
std::vector<double> per_channel(const Tensor& t, int64_t C, double fallback) {
  if (!t.defined()) return std::vector<double>(static_cast<size_t>(C), fallback);
  return dense(t, DType::f64).to_vector<double>();
}

Tensor channel_tensor(const std::vector<double>& v, DType dtype) {
  Tensor t = from_vector(v, {static_cast<int64_t>(v.size())});
  return dtype == DType::f64 ? t : contiguous_copy(t, dtype);
}

Tensor empty_stat(DType dtype) {
  return make_tensor({0}, dtype);
}

// Per channel: mean and biased variance (training), then y = x * scale + shift.
template <typename T>
void forward_channels(const Layout& l, const T* x, T* y, bool training,
                      const std::vector<double>& w, const std::vector<double>& b,
                      std::vector<double>& mean, std::vector<double>& var, double eps,
                      std::vector<double>& invstd) {
  const int64_t M = l.N * l.S;
#pragma omp parallel for if (l.N * l.C * l.S > kParallelWork)
  for (int64_t c = 0; c < l.C; ++c) {
    if (training) {
      double sum = 0;
      for (int64_t n = 0; n < l.N; ++n) {
        const T* xp = x + (n * l.C + c) * l.S;
        for (int64_t s = 0; s < l.S; ++s) sum += static_cast<double>(xp[s]);
      }
      const double m = sum / static_cast<double>(M);
      double sq = 0;
      for (int64_t n = 0; n < l.N; ++n) {
        const T* xp = x + (n * l.C + c) * l.S;
        for (int64_t s = 0; s < l.S; ++s) {
          const double d = static_cast<double>(xp[s]) - m;
          sq += d * d;
        }
      }
      mean[c] = m;
      var[c] = sq;  // the sum of squares; the caller divides by n or n - 1
      invstd[c] = 1.0 / std::sqrt(sq / static_cast<double>(M) + eps);
    } else {
      invstd[c] = 1.0 / std::sqrt(var[c] + eps);
    }
    // y = (x - mean) * scale + b, the centring first and in double: folded into one
    // x * scale + shift, the two terms cancel when the variance is tiny next to the mean (train
    // mode over a few values per channel), and float32 keeps only noise of y.
    const double m = mean[c], scale = invstd[c] * w[c], shift = b[c];
    for (int64_t n = 0; n < l.N; ++n) {
      const T* xp = x + (n * l.C + c) * l.S;
      T* yp = y + (n * l.C + c) * l.S;
#pragma omp simd
      for (int64_t s = 0; s < l.S; ++s)
        yp[s] = static_cast<T>((static_cast<double>(xp[s]) - m) * scale + shift);
    }
  }
}

template <typename T>
void backward_channels(const Layout& l, const T* g, const T* x, T* gi, bool training,
                       const std::vector<double>& w, const std::vector<double>& mean,
                       const std::vector<double>& invstd, std::vector<double>& sum_g,
                       std::vector<double>& dot) {
  const double M = static_cast<double>(l.N * l.S);
#pragma omp parallel for if (l.N * l.C * l.S > kParallelWork)
  for (int64_t c = 0; c < l.C; ++c) {
    double sg = 0, sd = 0;
    for (int64_t n = 0; n < l.N; ++n) {
      const T* gp = g + (n * l.C + c) * l.S;
      const T* xp = x + (n * l.C + c) * l.S;
      for (int64_t s = 0; s < l.S; ++s) {
        sg += static_cast<double>(gp[s]);
        sd += static_cast<double>(gp[s]) * (static_cast<double>(xp[s]) - mean[c]);
      }
    }
    sum_g[c] = sg;
    dot[c] = sd;
    if (!gi) continue;
    // Training: dx = w * invstd * (g - mean(g) - (x - mean) * invstd^2 * mean(g * (x - mean))),
    // the batch statistics' own dependence on x included. Eval: the statistics are constants.
    const double k = training ? sd * invstd[c] * invstd[c] / M : 0.0;
    const double gmean = training ? sg / M : 0.0;
    // dx = a * (g - mean(g) - (x - mean) * k), centred first and in double, as the forward.
    const double a = invstd[c] * w[c], m = mean[c];
    for (int64_t n = 0; n < l.N; ++n) {
      const T* gp = g + (n * l.C + c) * l.S;
      const T* xp = x + (n * l.C + c) * l.S;
      T* ip = gi + (n * l.C + c) * l.S;
#pragma omp simd
      for (int64_t s = 0; s < l.S; ++s)
        ip[s] = static_cast<T>(
            a * (static_cast<double>(gp[s]) - gmean - (static_cast<double>(xp[s]) - m) * k));
    }
  }
}

}  // namespace

BatchNormForward batch_norm_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                    const Tensor& running_mean, const Tensor& running_var,
                                    bool training, double momentum, double eps, DType stat_dtype) {
  const Layout l = layout(input);
  const DType compute = compute_dtype(input.dtype());
  std::vector<double> w = per_channel(weight, l.C, 1.0), b = per_channel(bias, l.C, 0.0);
  std::vector<double> mean = per_channel(training ? Tensor() : running_mean, l.C, 0.0);
  std::vector<double> var = per_channel(training ? Tensor() : running_var, l.C, 1.0);
  std::vector<double> invstd(static_cast<size_t>(l.C));
  Tensor x = dense(input, compute);
  Tensor y = make_tensor(input.sizes(), compute);
  visit_dtype(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>)
      forward_channels<T>(l, x.data_ptr<T>(), y.data_ptr<T>(), training, w, b, mean, var, eps,
                          invstd);
  });
  BatchNormForward r;
  r.output = compute == input.dtype() ? y : contiguous_copy(y, input.dtype());
  if (!training) {
    r.save_mean = empty_stat(stat_dtype);
    r.save_invstd = empty_stat(stat_dtype);
    if (running_mean.defined())
      r.new_running_mean = contiguous_copy(running_mean, running_mean.dtype());
    if (running_var.defined())
      r.new_running_var = contiguous_copy(running_var, running_var.dtype());
    return r;
  }
  r.save_mean = channel_tensor(mean, stat_dtype);
  r.save_invstd = channel_tensor(invstd, stat_dtype);
  const double M = static_cast<double>(l.N * l.S);
  if (running_mean.defined()) {
    std::vector<double> rm = per_channel(running_mean, l.C, 0.0);
    for (int64_t c = 0; c < l.C; ++c) rm[c] = (1 - momentum) * rm[c] + momentum * mean[c];
    r.new_running_mean = channel_tensor(rm, running_mean.dtype());
  }
  if (running_var.defined()) {
    std::vector<double> rv = per_channel(running_var, l.C, 1.0);
    // Unbiased, as ATen: one value per channel gives 0 / 0 = NaN, like PyTorch.
    for (int64_t c = 0; c < l.C; ++c) rv[c] = (1 - momentum) * rv[c] + momentum * var[c] / (M - 1);
    r.new_running_var = channel_tensor(rv, running_var.dtype());
  }
  return r;
}

std::array<Tensor, 3> batch_norm_backward(const Tensor& grad_output, const Tensor& input,
                                          const Tensor& weight, const Tensor& running_mean,
                                          const Tensor& running_var, const Tensor& save_mean,
                                          const Tensor& save_invstd, bool training, double eps,
                                          std::array<bool, 3> need, DType param_dtype) {
  const Layout l = layout(input);
  const DType compute = compute_dtype(input.dtype());
  std::vector<double> w = per_channel(weight, l.C, 1.0);
  std::vector<double> mean, invstd;
  if (training) {
    mean = per_channel(save_mean, l.C, 0.0);
    invstd = per_channel(save_invstd, l.C, 1.0);
  } else {
    mean = per_channel(running_mean, l.C, 0.0);
    invstd = per_channel(running_var, l.C, 1.0);
    for (double& v : invstd) v = 1.0 / std::sqrt(v + eps);
  }
  std::vector<double> sum_g(static_cast<size_t>(l.C)), dot(static_cast<size_t>(l.C));
  Tensor g = dense(grad_output, compute), x = dense(input, compute);
  Tensor gi = need[0] ? make_tensor(input.sizes(), compute) : Tensor();
  visit_dtype(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>)
      backward_channels<T>(l, g.data_ptr<T>(), x.data_ptr<T>(),
                           gi.defined() ? gi.data_ptr<T>() : nullptr, training, w, mean, invstd,
                           sum_g, dot);
  });
  std::array<Tensor, 3> r;
  if (need[0]) r[0] = compute == input.dtype() ? gi : contiguous_copy(gi, input.dtype());
  if (need[1]) {
    for (int64_t c = 0; c < l.C; ++c) dot[c] *= invstd[c];
    r[1] = channel_tensor(dot, param_dtype);
  }
  if (need[2]) r[2] = channel_tensor(sum_g, param_dtype);
  return r;
}

}  // namespace aotgrad::kernels
