// Activation kernels: each is one lambda run by the elementwise engine (kernels/elementwise.h),
// which handles strides, broadcasting, dtype conversion, blocking and threads. The formulas follow
// ATen's CPU kernels branch for branch, so boundary values (x == -3, x == 3, x == min_val) get the
// same results and gradients as PyTorch's.
#include "kernels/activation.h"

#include <cmath>

#include "kernels/arith.h"
#include "kernels/elementwise.h"
#include "kernels/pointwise.h"
#include "kernels/vec/vec.h"
#include "tensor/iter.h"
#include "tensor/promotion.h"

namespace aotgrad::kernels {
namespace {

// Calls f(TypeTag<T>) over the float compute types only, or over all of them (hardtanh).
template <bool kAnyType, typename F>
void visit(DType t, F&& f) {
  if constexpr (kAnyType)
    visit_compute(t, f);
  else
    visit_float(t, f);
}

// out = op(self) in self's dtype, computed in its compute type.
template <bool kAnyType = false, typename MakeOp>
Tensor map_self(const Tensor& self, const MakeOp& make_op) {
  Tensor out = make_tensor(self.sizes(), self.dtype());
  visit<kAnyType>(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise::run<T, T>(out, {self}, make_op(tag));
  });
  return out;
}

// out = op(grad, self) in result_type(grad, self), over the broadcast shape.
template <bool kAnyType = false, typename MakeOp>
Tensor map_grad_self(const Tensor& grad, const Tensor& self, const MakeOp& make_op) {
  Tensor out = make_tensor(broadcast_shapes(grad.sizes(), self.sizes()), result_type(grad, self));
  visit<kAnyType>(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise::run<T, T, T>(out, {grad, self}, make_op(tag));
  });
  return out;
}

}  // namespace

Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  return map_self<true>(self, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T lo = elementwise::scalar_as<T>(min_val), hi = elementwise::scalar_as<T>(max_val);
    // Written so that NaN fails both comparisons and passes through, as clamp does.
    return [lo, hi](T x) -> T {
      T r = x < lo ? lo : x;
      return r > hi ? hi : r;
    };
  });
}

Tensor hardtanh_backward(const Tensor& grad, const Tensor& self, const Scalar& min_val,
                         const Scalar& max_val) {
  return map_grad_self<true>(grad, self, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T lo = elementwise::scalar_as<T>(min_val), hi = elementwise::scalar_as<T>(max_val);
    return [lo, hi](T g, T x) -> T { return (x <= lo || x >= hi) ? T(0) : g; };
  });
}

Tensor hardsigmoid(const Tensor& self) {
  return map_self(self, [](auto tag) {
    using T = typename decltype(tag)::type;
    return [](T x) -> T {
      T r = x + T(3);
      r = r < T(0) ? T(0) : r;
      r = r > T(6) ? T(6) : r;
      return r / T(6);
    };
  });
}

Tensor hardsigmoid_backward(const Tensor& grad, const Tensor& self) {
  return map_grad_self(grad, self, [](auto tag) {
    using T = typename decltype(tag)::type;
    // ATen multiplies by 1/6 rounded to float, in every dtype; so do we, for the same bits.
    return [](T g, T x) -> T { return (x > T(-3) && x < T(3)) ? g * T(1.0f / 6.0f) : T(0); };
  });
}

Tensor hardswish(const Tensor& self) {
  return map_self(self, [](auto tag) {
    using T = typename decltype(tag)::type;
    return [](T x) -> T {
      T r = x + T(3);
      r = r < T(0) ? T(0) : r;
      r = r > T(6) ? T(6) : r;
      return x * r / T(6);
    };
  });
}

Tensor hardswish_backward(const Tensor& grad, const Tensor& self) {
  return map_grad_self(grad, self, [](auto tag) {
    using T = typename decltype(tag)::type;
    return [](T g, T x) -> T {
      if (x < T(-3)) return T(0);
      if (x <= T(3)) return g * (x / T(3) + T(0.5));
      return g;
    };
  });
}

// silu and its backward run the runtime-dispatched vector kernels (kernels/vec): x sigma(x) to
// 3.5 ulp, its derivative to 5 (tests/kernels/vec_ulp_test.cpp).
Tensor silu(const Tensor& self) {
  return unary(Unary::silu, self);
}

Tensor silu_backward(const Tensor& grad, const Tensor& self) {
  Tensor out = make_tensor(broadcast_shapes(grad.sizes(), self.sizes()), result_type(grad, self));
  visit_float(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise::run_vec<T>(
        out, grad, self, vec::active().of<T>()(vec::BinaryFn::silu_backward, vec::Broadcast::none));
  });
  return out;
}

}  // namespace aotgrad::kernels
