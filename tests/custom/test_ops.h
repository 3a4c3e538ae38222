// Custom ops the tests in tests/custom share, registered once per process (registering twice is
// an error): testops::scale (y = s * x), testops::scale_ (in place), cheap_square and
// heavy_square (y = x * x, declared cheap / opaque), novjp (no VJP) and liar (a kernel that
// writes an argument its schema does not mark).
#pragma once

#include <mutex>

#include "aotgrad/aotgrad.h"
#include "aotgrad/custom_op.h"

namespace aotgrad::testing {

inline std::vector<TensorSpec> same_as_x(const OpArgs& a) {
  const Tensor& x = std::get<Tensor>(a[0]);
  return {{x.dtype(), x.sizes()}};
}

inline std::vector<Tensor> scale_kernel(const OpArgs& a) {
  return {std::get<Tensor>(a[0]) * std::get<double>(a[1])};
}

inline std::vector<Tensor> scale_vjp(const CustomVjpContext& c) {
  return {c.grads[0] * std::get<double>(c.args[1])};
}

inline std::vector<Tensor> scale__kernel(const OpArgs& a) {
  Tensor x = std::get<Tensor>(a[0]);
  x.mul_(std::get<double>(a[1]));
  return {x};
}

inline std::vector<Tensor> square_kernel(const OpArgs& a) {
  const Tensor& x = std::get<Tensor>(a[0]);
  return {x * x};
}

inline std::vector<Tensor> square_vjp(const CustomVjpContext& c) {
  return {c.grads[0] * std::get<Tensor>(c.args[0]) * 2.0};
}

inline std::vector<Tensor> liar_kernel(const OpArgs& a) {
  Tensor x = std::get<Tensor>(a[0]);
  Tensor y = x * 2.0;
  x.zero_();
  return {y};
}

inline void register_test_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_op({.schema = "testops::scale(Tensor x, float s=2.0) -> Tensor",
                 .meta = same_as_x,
                 .kernel = scale_kernel,
                 .vjp = scale_vjp});
    register_op({.schema = "testops::scale_(Tensor(a!) x, float s) -> Tensor(a!)",
                 .meta = same_as_x,
                 .kernel = scale__kernel,
                 .vjp = scale_vjp});
    register_op({.schema = "testops::cheap_square(Tensor x) -> Tensor",
                 .meta = same_as_x,
                 .kernel = square_kernel,
                 .vjp = square_vjp,
                 .recompute = CustomRecompute::cheap});
    register_op({.schema = "testops::heavy_square(Tensor x) -> Tensor",
                 .meta = same_as_x,
                 .kernel = square_kernel,
                 .vjp = square_vjp});
    register_op({.schema = "testops::novjp(Tensor x) -> Tensor",
                 .meta = same_as_x,
                 .kernel = square_kernel});
    register_op(
        {.schema = "testops::liar(Tensor x) -> Tensor", .meta = same_as_x, .kernel = liar_kernel});
    register_op({.schema = "testops::log(Tensor x) -> Tensor",
                 .meta = same_as_x,
                 .kernel = square_kernel,
                 .vjp = square_vjp,
                 .effectful = true});
  });
}

}  // namespace aotgrad::testing
