// Binary and ternary pointwise kernels: arithmetic, comparisons, where, activation backwards.
// Floating results run the runtime-dispatched vector kernels of kernels/vec; integral and bool
// ones (and comparisons, where) a plain loop.
#include <cmath>
#include <stdexcept>

#include "kernels/arith.h"
#include "kernels/elementwise.h"
#include "kernels/pointwise.h"
#include "kernels/vec/vec.h"
#include "tensor/promotion.h"

namespace aotgrad::kernels {
namespace {

using elementwise::Input;

IntList out_shape(const Input& a, const Input& b) {
  const Tensor* ta = std::get_if<Tensor>(&a);
  const Tensor* tb = std::get_if<Tensor>(&b);
  if (ta && tb) return broadcast_shapes(ta->sizes(), tb->sizes());
  return ta ? ta->sizes() : tb->sizes();
}

DType result_of(const Input& a, const Input& b) {
  ResultTypeState s;
  for (const Input* in : {&a, &b}) std::visit([&](const auto& v) { s.add(v); }, *in);
  return s.result();
}

// out = f(a, b) through the best vector kernel this CPU runs, for a floating `out`.
void run_vec(const Tensor& out, const Input& a, const Input& b, vec::BinaryFn fn, double p = 0) {
  visit_float(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise::run_vec<T>(out, a, b, vec::active().of<T>()(fn, vec::Broadcast::none),
                            static_cast<T>(p));
  });
}

// a + alpha * b (sign = +1) or a - alpha * b (sign = -1), in the promoted dtype.
Tensor add_impl(const Input& a, const Input& b, const Scalar& alpha, int sign) {
  Tensor out = make_tensor(out_shape(a, b), result_of(a, b));
  if (is_floating(out.dtype())) {
    run_vec(out, a, b, sign > 0 ? vec::BinaryFn::add : vec::BinaryFn::sub, alpha.to_double());
    return out;
  }
  visit_compute(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T al = elementwise::scalar_as<T>(alpha);
    if (sign > 0)
      elementwise::run<T, T, T>(out, {a, b},
                                [al](T x, T y) -> T { return arith::add(x, arith::mul(al, y)); });
    else
      elementwise::run<T, T, T>(out, {a, b},
                                [al](T x, T y) -> T { return arith::sub(x, arith::mul(al, y)); });
  });
  return out;
}

Tensor mul_impl(const Input& a, const Input& b) {
  Tensor out = make_tensor(out_shape(a, b), result_of(a, b));
  if (is_floating(out.dtype())) {
    run_vec(out, a, b, vec::BinaryFn::mul);
    return out;
  }
  visit_compute(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise::run<T, T, T>(out, {a, b}, [](T x, T y) -> T { return arith::mul(x, y); });
  });
  return out;
}

// True division: integral operands are read as the default float.
Tensor div_impl(const Input& a, const Input& b) {
  Tensor out = make_tensor(out_shape(a, b), float_op_dtype(result_of(a, b)));
  run_vec(out, a, b, vec::BinaryFn::div);
  return out;
}

Tensor compare_impl(Compare op, const Input& a, const Input& b) {
  Tensor out = make_tensor(out_shape(a, b), DType::b8);
  visit_compute(result_of(a, b), [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (op) {
      case Compare::eq:
        elementwise::run<bool, T, T>(out, {a, b}, [](T x, T y) { return x == y; });
        break;
      case Compare::gt:
        elementwise::run<bool, T, T>(out, {a, b}, [](T x, T y) { return x > y; });
        break;
      case Compare::lt:
        elementwise::run<bool, T, T>(out, {a, b}, [](T x, T y) { return x < y; });
        break;
      case Compare::ne:  // NaN != anything, as IEEE and torch.ne
        elementwise::run<bool, T, T>(out, {a, b}, [](T x, T y) { return x != y; });
        break;
      case Compare::ge:
        elementwise::run<bool, T, T>(out, {a, b}, [](T x, T y) { return x >= y; });
        break;
      case Compare::le:
        elementwise::run<bool, T, T>(out, {a, b}, [](T x, T y) { return x <= y; });
        break;
    }
  });
  return out;
}

// Backward kernels of float activations: f(grad, x) in the promoted floating dtype.
Tensor float_binary(const Tensor& grad, const Tensor& x, const char* what, vec::BinaryFn fn) {
  Tensor out = make_tensor(broadcast_shapes(grad.sizes(), x.sizes()), result_type(grad, x));
  if (!is_floating(out.dtype()))
    throw std::invalid_argument(std::string(what) + ": expected floating tensors, got " +
                                std::string(dtype_name(out.dtype())));
  run_vec(out, grad, x, fn);
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_impl(a, b, alpha, 1);
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return add_impl(a, b, alpha, 1);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_impl(a, b, alpha, -1);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return add_impl(a, b, alpha, -1);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return mul_impl(a, b);
}
Tensor mul(const Tensor& a, const Scalar& b) {
  return mul_impl(a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  return div_impl(a, b);
}
Tensor div(const Tensor& a, const Scalar& b) {
  return div_impl(a, b);
}

Tensor compare(Compare op, const Tensor& a, const Tensor& b) {
  return compare_impl(op, a, b);
}
Tensor compare(Compare op, const Tensor& a, const Scalar& b) {
  return compare_impl(op, a, b);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  IntList shape = broadcast_shapes(condition.sizes(), broadcast_shapes(a.sizes(), b.sizes()));
  Tensor out = make_tensor(shape, result_type(a, b));
  visit_compute(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise::run<T, bool, T, T>(out, {condition, a, b},
                                    [](bool c, T x, T y) -> T { return c ? x : y; });
  });
  return out;
}

Tensor tanh_backward(const Tensor& grad, const Tensor& output) {
  return float_binary(grad, output, "tanh_backward", vec::BinaryFn::tanh_backward);
}

Tensor sigmoid_backward(const Tensor& grad, const Tensor& output) {
  return float_binary(grad, output, "sigmoid_backward", vec::BinaryFn::sigmoid_backward);
}

Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  Tensor out = make_tensor(broadcast_shapes(grad.sizes(), self.sizes()), result_type(grad, self));
  if (is_floating(out.dtype())) {
    run_vec(out, grad, self, vec::BinaryFn::threshold_backward, threshold.to_double());
    return out;
  }
  visit_compute(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T th = elementwise::scalar_as<T>(threshold);
    elementwise::run<T, T, T>(out, {grad, self},
                              [th](T g, T x) -> T { return x <= th ? T(0) : g; });
  });
  return out;
}

Tensor gelu_backward(const Tensor& grad, const Tensor& self, bool tanh_approximation) {
  return float_binary(
      grad, self, "gelu_backward",
      tanh_approximation ? vec::BinaryFn::gelu_tanh_backward : vec::BinaryFn::gelu_erf_backward);
}

}  // namespace aotgrad::kernels
