// Calls made from inside other calls on the same thread. The per-call path borrows scratch from
// its thread (tensor/thread_loan.h) so that a small call allocates less: the cpp backend's value
// slots (backends/cpp/cpp_backend.cpp) and the backward walk's vectors (autograd/engine.cpp). A
// call made while another holds them must get its own, and neither may keep a tensor or a node
// alive after its call.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "aotgrad/aotgrad.h"
#include "aotgrad/custom_op.h"
#include "aotgrad/function.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

ag::AotConfig cpp_config() {
  ag::AotConfig c;
  c.fw_compiler = "cpp";
  return c;
}

Tensor inner_body(const Tensor& x) {
  return (x * 2.0).sin() + 1.0;
}

// A compiled function, run by the kernel of a custom op.
const ag::AotFunction<Tensor (*)(const Tensor&)>& inner() {
  static const auto f = ag::aot_function(&inner_body, cpp_config());
  return f;
}

std::vector<ag::TensorSpec> same_spec(const ag::OpArgs& a) {
  const Tensor& x = std::get<Tensor>(a[0]);
  return {{x.dtype(), x.sizes()}};
}
std::vector<Tensor> run_inner(const ag::OpArgs& a) {
  return {inner()(std::get<Tensor>(a[0]))};
}

const std::string& inner_op() {
  static const std::string name = ag::register_op(
      {.schema = "nested_test::inner(Tensor x) -> Tensor", .meta = same_spec, .kernel = run_inner});
  return name;
}

Tensor outer_body(const Tensor& x, const Tensor& y) {
  Tensor e = x.exp();  // live in the outer call's slots while the inner call runs
  return ag::call_op1(inner_op(), x * y) * y + e;
}

// d/dx of sum(x^2) computed by a walk of its own, inside the backward of `Reentrant`.
struct Reentrant : ag::autograd::Function<Reentrant> {
  static Tensor forward(ag::autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * 3.0;
  }
  static ag::autograd::variable_list backward(ag::autograd::AutogradContext* ctx,
                                              ag::autograd::variable_list grads) {
    Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_();
    Tensor twice_x;
    {
      ag::EnableGradGuard grad;
      twice_x = ag::autograd::grad({(x * x).sum()}, {x})[0];
    }
    return {grads[0] * 3.0 + twice_x};  // 3 + 2x per element
  }
};

struct Throwing : ag::autograd::Function<Throwing> {
  static Tensor forward(ag::autograd::AutogradContext*, const Tensor& x) { return x * 1.0; }
  static ag::autograd::variable_list backward(ag::autograd::AutogradContext*,
                                              ag::autograd::variable_list) {
    throw std::runtime_error("backward of Throwing");
  }
};

}  // namespace

// The custom op's kernel runs a compiled (cpp) call while the outer compiled call's values, x.exp()
// among them, wait in its slots; both calls must see their own values.
TEST(NestedCall, ACompiledCallInsideACompiledCallKeepsItsOwnValues) {
  Tensor x = ag::testing::test_input({4, 8}, -1, 1, 3, false);
  Tensor y = ag::testing::test_input({4, 8}, -1, 1, 4, false);
  auto f = ag::aot_function(&outer_body, cpp_config());
  Tensor want = ((x * y * 2.0).sin() + 1.0) * y + x.exp();
  for (int call = 0; call < 3; ++call) {  // the first call compiles; the later ones reuse scratch
    Tensor got = f(x, y);
    EXPECT_TRUE(ag::testing::allclose(got, want, 1e-6, 1e-6)) << "call " << call << "\n"
                                                              << got.to_string();
  }
  EXPECT_TRUE(ag::testing::allclose(inner()(x), inner_body(x), 1e-6, 1e-6));
}

// A compiled call returns its values to the caller and keeps none: the input's reference count
// is what it was before the call.
TEST(NestedCall, ACompiledCallHoldsNoValueAfterItReturns) {
  Tensor x = ag::testing::test_input({16}, -1, 1, 5, false);
  const auto& f = inner();
  Tensor warm = f(x);
  const long before = x.impl_ptr().use_count();
  Tensor out = f(x);
  EXPECT_EQ(x.impl_ptr().use_count(), before);
  EXPECT_EQ(out.impl_ptr().use_count(), 1);
}

// A backward walk inside a node's backward gets its own scratch: the outer walk's gradients are
// exact, twice in a row.
TEST(NestedCall, ABackwardInsideABackward) {
  for (int round = 0; round < 2; ++round) {
    Tensor x = ag::testing::test_input({6}, -1, 1, 6).requires_grad_();
    Tensor loss = (Reentrant::apply(x) * x).sum();
    loss.backward();
    // loss = sum(r * x) with r = 3x. Through the product: r = 3x. Through Reentrant, whose
    // incoming gradient is x: 3x, plus the 2x of the inner walk. In all, 8x.
    EXPECT_TRUE(ag::testing::allclose(x.grad(), x.detach() * 8.0, 1e-6, 1e-6))
        << "round " << round << "\n"
        << x.grad().to_string();
  }
}

// A walk keeps no node alive after it returns, nor after it throws, and the next walk on the
// thread runs as usual.
TEST(NestedCall, AWalkHoldsNoNodeAfterItEnds) {
  Tensor x = ag::testing::test_input({5}, -1, 1, 7).requires_grad_();
  std::weak_ptr<ag::autograd::Node> node;
  {
    Tensor y = (x * 3.0).sum();
    node = y.grad_fn();
    y.backward();
  }
  EXPECT_TRUE(node.expired());

  std::weak_ptr<ag::autograd::Node> thrown;
  {
    Tensor y = Throwing::apply(x).sum();
    thrown = y.grad_fn();
    EXPECT_THROW(y.backward(), std::runtime_error);
  }
  EXPECT_TRUE(thrown.expired());

  Tensor z = ag::testing::test_input({5}, -1, 1, 8).requires_grad_();
  (z * z).sum().backward();
  EXPECT_TRUE(ag::testing::allclose(z.grad(), z.detach() * 2.0, 1e-6, 1e-6));
}
