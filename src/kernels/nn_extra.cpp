// Kernels of kernels/nn_extra.h. The pointwise parts are lambdas run by the elementwise engine
// (kernels/elementwise.h: strides, broadcasting, dtype conversion, threads); reductions reuse the
// sum / mean / amax kernels, which accumulate floating values in double. Formulas follow ATen's
// CPU kernels branch for branch, so boundary values (x == 0 for leaky_relu, |x - t| == beta for
// smooth_l1, x in {0, 1} for binary_cross_entropy) get PyTorch's results and gradients.
#include "kernels/nn_extra.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/arith.h"
#include "kernels/copy.h"
#include "kernels/elementwise.h"
#include "kernels/nn.h"
#include "kernels/pointwise.h"
#include "kernels/reduction.h"
#include "tensor/iter.h"
#include "tensor/promotion.h"

namespace aotgrad::kernels {
namespace {

using elementwise::Input;

Input optional_input(const Tensor& t) {
  return t.defined() ? Input(t) : Input(Scalar(1));
}

IntList every_dim(int64_t ndim) {
  IntList dims;
  for (int64_t d = 0; d < ndim; ++d) dims.push_back(d);
  return dims;
}

// The loss's per-element values reduced as `reduction` says.
Tensor reduce(const Tensor& elementwise_loss, int64_t reduction, DType dtype) {
  const IntList dims = every_dim(elementwise_loss.dim());
  if (reduction == kReductionMean) return mean(elementwise_loss, dims, false, dtype);
  if (reduction == kReductionSum) return sum(elementwise_loss, dims, false, dtype);
  return elementwise_loss;
}

// 1 / numel for mean (the gradient of each element), else 1.
double grad_scale(int64_t reduction, const IntList& shape) {
  return reduction == kReductionMean ? 1.0 / static_cast<double>(numel_of(shape)) : 1.0;
}

// out = op(ins...) over the broadcast shape of the tensor inputs, in `dtype`, computed in its
// floating compute type.
template <size_t N, typename MakeOp>
Tensor map_float(const IntList& shape, DType dtype, const std::array<Input, N>& ins,
                 const MakeOp& make_op) {
  Tensor out = make_tensor(shape, dtype);
  visit_float(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    [&]<size_t... I>(std::index_sequence<I...>) {
      elementwise::run<T, decltype(I, T())...>(out, ins, make_op(tag));
    }
    (std::make_index_sequence<N>{});
  });
  return out;
}

IntList shape_of(std::initializer_list<const Tensor*> ts) {
  IntList shape;
  for (const Tensor* t : ts)
    if (t->defined()) shape = broadcast_shapes(shape, t->sizes());
  return shape;
}

}  // namespace

Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope) {
  return map_float<1>(self.sizes(), self.dtype(), {self}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T slope = elementwise::scalar_as<T>(negative_slope);
    return [slope](T x) -> T { return x > T(0) ? x : x * slope; };
  });
}

Tensor leaky_relu_backward(const Tensor& grad, const Tensor& self, const Scalar& negative_slope) {
  const IntList shape = broadcast_shapes(grad.sizes(), self.sizes());
  return map_float<2>(shape, result_type(grad, self), {grad, self}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T slope = elementwise::scalar_as<T>(negative_slope);
    return [slope](T g, T x) -> T { return x > T(0) ? g : g * slope; };
  });
}

Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight,
                            int64_t reduction, DType dtype) {
  const IntList shape = shape_of({&self, &target, &weight});
  Tensor loss = map_float<3>(shape, dtype, {self, target, optional_input(weight)}, [](auto tag) {
    using T = typename decltype(tag)::type;
    return [](T x, T t, T w) -> T {
      const T log_x = std::max(T(std::log(x)), T(-100));
      const T log_1mx = std::max(T(std::log1p(-x)), T(-100));
      return w * ((t - T(1)) * log_1mx - t * log_x);
    };
  });
  return reduce(loss, reduction, dtype);
}

Tensor binary_cross_entropy_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                     const Tensor& weight, int64_t reduction, DType dtype) {
  const IntList shape = shape_of({&self, &target, &weight});
  const double scale = grad_scale(reduction, shape);
  return map_float<4>(shape, dtype, {grad, self, target, optional_input(weight)},
                      [scale](auto tag) {
                        using T = typename decltype(tag)::type;
                        // ATen's epsilon is the float 1e-12f in every dtype.
                        const T eps = T(1e-12f), s = T(scale);
                        return [eps, s](T g, T x, T t, T w) -> T {
                          return s * g * w * (x - t) / std::max((T(1) - x) * x, eps);
                        };
                      });
}

Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        int64_t reduction, DType dtype) {
  const IntList shape = shape_of({&self, &target, &weight, &pos_weight});
  const bool has_pos = pos_weight.defined();
  Tensor loss =
      map_float<4>(shape, dtype, {self, target, optional_input(weight), optional_input(pos_weight)},
                   [has_pos](auto tag) {
                     using T = typename decltype(tag)::type;
                     return [has_pos](T x, T t, T w, T pw) -> T {
                       // log(1 + exp(-x)) = m + log(exp(-m) + exp(-x - m)) with m = max(-x, 0): no
                       // overflow.
                       const T m = std::max(-x, T(0));
                       const T softplus = T(std::log(std::exp(-m) + std::exp(-x - m))) + m;
                       const T lw = has_pos ? (pw - T(1)) * t + T(1) : T(1);
                       return w * ((T(1) - t) * x + lw * softplus);
                     };
                   });
  return reduce(loss, reduction, dtype);
}

Tensor robust_loss(RobustLoss kind, const Tensor& self, const Tensor& target, int64_t reduction,
                   double param, DType dtype) {
  const IntList shape = broadcast_shapes(self.sizes(), target.sizes());
  Tensor loss = map_float<2>(shape, dtype, {self, target}, [kind, param](auto tag) {
    using T = typename decltype(tag)::type;
    const T b = T(param);
    const bool smooth = kind == RobustLoss::smooth_l1;
    return [b, smooth](T x, T t) -> T {
      const T z = std::abs(x - t);
      if (smooth) return z < b ? T(0.5) * z * z / b : z - T(0.5) * b;
      return z < b ? T(0.5) * z * z : b * (z - T(0.5) * b);
    };
  });
  return reduce(loss, reduction, dtype);
}

Tensor robust_loss_backward(RobustLoss kind, const Tensor& grad, const Tensor& self,
                            const Tensor& target, int64_t reduction, double param, DType dtype) {
  const IntList shape = broadcast_shapes(self.sizes(), target.sizes());
  const double scale = grad_scale(reduction, shape);
  return map_float<3>(shape, dtype, {grad, self, target}, [kind, param, scale](auto tag) {
    using T = typename decltype(tag)::type;
    const T b = T(param), s = T(scale);
    const bool smooth = kind == RobustLoss::smooth_l1;
    return [b, s, smooth](T g, T x, T t) -> T {
      const T d = x - t;
      if (smooth) {
        // ATen tests x <= -beta first: at beta == 0 a zero difference takes -grad.
        if (d <= -b) return -s * g;
        if (d >= b) return s * g;
        return s * d * g / b;
      }
      if (d < -b) return -s * g * b;
      if (d > b) return s * g * b;
      return s * d * g;
    };
  });
}

Tensor norm(const Tensor& self, double p, const IntList& given_dims, bool keepdim) {
  const IntList dims = given_dims.empty() ? every_dim(self.dim()) : given_dims;
  const DType compute = self.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Tensor result;
  if (std::isinf(p)) {
    // The largest |x| (or, for -inf, minus the largest -|x|).
    const double sign = p > 0 ? 1.0 : -1.0;
    Tensor a = map_float<1>(self.sizes(), compute, {self}, [sign](auto tag) {
      using T = typename decltype(tag)::type;
      return [s = T(sign)](T x) -> T { return s * std::abs(x); };
    });
    result = amax(a, dims, keepdim);
    if (p < 0) result = mul(result, Scalar(-1.0));
  } else {
    Tensor terms = map_float<1>(self.sizes(), compute, {self}, [p](auto tag) {
      using T = typename decltype(tag)::type;
      return [q = T(p)](T x) -> T {
        const T a = std::abs(x);
        if (q == T(0)) return a != T(0) ? T(1) : T(0);
        if (q == T(1)) return a;
        if (q == T(2)) return a * a;
        return T(std::pow(a, q));
      };
    });
    result = sum(terms, dims, keepdim, compute);
    if (p != 0 && p != 1) {
      result = map_float<1>(result.sizes(), compute, {result}, [p](auto tag) {
        using T = typename decltype(tag)::type;
        return [q = T(p)](T s) -> T { return q == T(2) ? std::sqrt(s) : T(std::pow(s, T(1) / q)); };
      });
    }
  }
  return result.dtype() == self.dtype() ? result : contiguous_copy(result, self.dtype());
}

Tensor all_any(bool all, const Tensor& self, const IntList& given_dims, bool keepdim) {
  const IntList dims = given_dims.empty() ? every_dim(self.dim()) : given_dims;
  int64_t reduced = 1;
  for (int64_t d : dims) reduced *= self.size(d);
  Tensor count = sum(compare(Compare::ne, self, Scalar(int64_t{0})), dims, keepdim, DType::i64);
  return all ? compare(Compare::eq, count, Scalar(reduced))
             : compare(Compare::gt, count, Scalar(int64_t{0}));
}

}  // namespace aotgrad::kernels
