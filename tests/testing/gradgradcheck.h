// Finite-difference checking of second derivatives (PyTorch's gradgradcheck).
//
// gradgradcheck(fn, inputs) differentiates the first-derivative function
//   s(x, v) = sum_k <u_k, d<v, fn(x)>/dx_k>
// (v a fixed projection of fn's output, u_k fixed projections of each input's gradient) with
// autograd::grad(create_graph=true) twice, and compares the analytic d s/dx_k and d s/dv with
// central differences of s evaluated by ordinary first-order backward passes, in f64. Checking
// d s/dv matters: a VJP that treats its incoming gradient as a constant is wrong there even when
// the op is linear. Inputs should be f64 tensors; those that require grad are checked.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "aotgrad/aotgrad.h"

namespace aotgrad::testing {

using GradGradFn = std::function<Tensor(const std::vector<Tensor>&)>;

namespace detail {

// A fixed pseudo-random f64 tensor of `sizes` (values in [0.5, 1.5)), different per `salt`.
inline Tensor projection(const IntList& sizes, double salt) {
  std::vector<double> v(static_cast<size_t>(numel_of(sizes)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.5 + std::fmod(0.37 * static_cast<double>(i + 1) + 0.61 * salt, 1.0);
  return from_vector(v, sizes);
}

// Element offsets (in elements, from the tensor's storage offset) of `t` in row-major order.
inline std::vector<int64_t> element_offsets(const Tensor& t) {
  std::vector<int64_t> offsets, idx(t.dim(), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.strides()[d];
    offsets.push_back(off);
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[d] < t.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return offsets;
}

}  // namespace detail

inline ::testing::AssertionResult gradgradcheck(const GradGradFn& fn,
                                                const std::vector<Tensor>& inputs,
                                                double eps = 1e-6, double atol = 1e-5,
                                                double rtol = 1e-3) {
  std::vector<Tensor> wrt;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) {
      if (t.dtype() != DType::f64)
        return ::testing::AssertionFailure() << "gradgradcheck wants f64 inputs";
      wrt.push_back(t);
    }
  Tensor out = fn(inputs);
  if (!out.requires_grad()) return ::testing::AssertionFailure() << "output does not require grad";
  Tensor v = detail::projection(out.sizes(), 0.0).to(out.dtype()).requires_grad_();
  std::vector<Tensor> u;
  for (size_t k = 0; k < wrt.size(); ++k)
    u.push_back(detail::projection(wrt[k].sizes(), static_cast<double>(k + 1)));

  // s(x, v); recorded (create_graph) for the analytic side.
  auto first = [&](bool create_graph) {
    Tensor o = fn(inputs);
    std::vector<Tensor> g =
        autograd::grad({o}, wrt, {v}, create_graph, create_graph, /*allow_unused=*/true);
    Tensor s = zeros({}, DType::f64);
    for (size_t k = 0; k < g.size(); ++k)
      if (g[k].defined()) s = s + (g[k].to(DType::f64) * u[k]).sum();
    return s;
  };
  std::vector<Tensor> checked = wrt;
  checked.push_back(v);
  Tensor s = first(true);
  std::vector<Tensor> analytic(checked.size());
  if (s.requires_grad())
    analytic = autograd::grad({s}, checked, {}, false, false, /*allow_unused=*/true);

  for (size_t k = 0; k < checked.size(); ++k) {
    const Tensor& t = checked[k];
    std::vector<double> a = analytic[k].defined() ? analytic[k].to_vector<double>()
                                                  : std::vector<double>(t.numel(), 0.0);
    double* data = t.data_ptr<double>();
    std::vector<int64_t> offsets = detail::element_offsets(t);
    for (size_t e = 0; e < offsets.size(); ++e) {
      double orig = data[offsets[e]];
      data[offsets[e]] = orig + eps;
      double plus = first(false).item<double>();
      data[offsets[e]] = orig - eps;
      double minus = first(false).item<double>();
      data[offsets[e]] = orig;
      double numeric = (plus - minus) / (2 * eps);
      if (!(std::abs(numeric - a[e]) <= atol + rtol * std::abs(numeric)))
        return ::testing::AssertionFailure()
               << "second derivative wrt "
               << (k + 1 == checked.size() ? "the output gradient" : "input " + std::to_string(k))
               << " element " << e << ": analytic " << a[e] << ", numeric " << numeric;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace aotgrad::testing
