// Finite-difference gradient checking (the first test oracle, DESIGN "Testing").
//
// gradcheck(fn, inputs) compares the analytic vector-Jacobian product that autograd computes for
// a random projection v of fn's output with central differences of <v, fn(x)> in f64. Inputs
// should be f64 tensors; those that require grad are checked.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <vector>

#include "aotgrad/aotgrad.h"

namespace aotgrad::testing {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

inline ::testing::AssertionResult gradcheck(const Fn& fn, const std::vector<Tensor>& inputs,
                                            double eps = 1e-6, double atol = 1e-5,
                                            double rtol = 1e-3) {
  Tensor out = fn(inputs);
  if (!out.requires_grad()) return ::testing::AssertionFailure() << "output does not require grad";
  // A fixed pseudo-random projection so every output element matters.
  std::vector<double> v(static_cast<size_t>(out.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5 + std::fmod(0.37 * static_cast<double>(i + 1), 1.0);
  Tensor v_t = from_vector(v, out.sizes()).to(out.dtype());
  std::vector<Tensor> wrt;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) wrt.push_back(t);
  std::vector<Tensor> analytic = autograd::grad({out}, wrt, {v_t}, false, false, /*allow_unused=*/true);

  auto projected = [&]() {
    NoGradGuard no_grad;
    std::vector<double> o = fn(inputs).to_vector<double>();
    double s = 0;
    for (size_t i = 0; i < o.size(); ++i) s += o[i] * v[i];
    return s;
  };
  size_t k = 0;
  for (const Tensor& t : inputs) {
    if (!t.requires_grad()) continue;
    if (t.dtype() != DType::f64)
      return ::testing::AssertionFailure() << "gradcheck wants f64 inputs, input " << k << " is "
                                           << dtype_name(t.dtype());
    std::vector<double> a = analytic[k].defined() ? analytic[k].to_vector<double>()
                                                  : std::vector<double>(t.numel(), 0.0);
    // Perturb through a contiguous alias of the input's storage, element by element.
    double* data = t.data_ptr<double>();
    std::vector<int64_t> offsets;
    {
      std::vector<int64_t> idx(t.dim(), 0);
      for (int64_t n = 0; n < t.numel(); ++n) {
        int64_t off = 0;
        for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.strides()[d];
        offsets.push_back(off);
        for (int64_t d = t.dim() - 1; d >= 0; --d) {
          if (++idx[d] < t.sizes()[d]) break;
          idx[d] = 0;
        }
      }
    }
    for (size_t e = 0; e < offsets.size(); ++e) {
      double orig = data[offsets[e]];
      data[offsets[e]] = orig + eps;
      double plus = projected();
      data[offsets[e]] = orig - eps;
      double minus = projected();
      data[offsets[e]] = orig;
      double numeric = (plus - minus) / (2 * eps);
      if (std::abs(numeric - a[e]) > atol + rtol * std::abs(numeric))
        return ::testing::AssertionFailure()
               << "gradient of input " << k << " element " << e << ": analytic " << a[e]
               << ", numeric " << numeric;
    }
    ++k;
  }
  return ::testing::AssertionSuccess();
}

// f64 test input with deterministic values in [lo, hi), requiring grad.
inline Tensor test_input(const IntList& sizes, double lo = -1.0, double hi = 1.0,
                         uint64_t seed = 1, bool requires_grad = true) {
  std::vector<double> v(static_cast<size_t>(numel_of(sizes)));
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (double& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = lo + (hi - lo) * static_cast<double>(s >> 11) / 9007199254740992.0;
  }
  Tensor t = from_vector(v, sizes);
  if (requires_grad) t.requires_grad_();
  return t;
}

// Element-wise closeness of two tensors (any dtypes), with a readable failure message.
inline ::testing::AssertionResult allclose(const Tensor& a, const Tensor& b, double atol = 1e-6,
                                           double rtol = 1e-5) {
  if (!a.defined() || !b.defined()) {
    if (a.defined() == b.defined()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "one tensor is undefined";
  }
  if (a.sizes() != b.sizes())
    return ::testing::AssertionFailure() << "shapes differ: " << shape_to_string(a.sizes())
                                         << " vs " << shape_to_string(b.sizes());
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    bool both_nan = std::isnan(x[i]) && std::isnan(y[i]);
    if (!both_nan && !(std::abs(x[i] - y[i]) <= atol + rtol * std::abs(y[i])))
      return ::testing::AssertionFailure() << "element " << i << ": " << x[i] << " vs " << y[i];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace aotgrad::testing
