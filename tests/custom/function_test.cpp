// Custom autograd Functions (aotgrad/function.h): eager and compiled (both partitioners, through
// the scenario harness) agree, f64 gradchecks, and the context's features: save_for_backward,
// saved_data, needs_input_grad, mark_dirty, mark_non_differentiable, set_materialize_grads,
// once_differentiable, and the errors for a backward that returns the wrong gradients.
#include "aotgrad/function.h"

#include <gtest/gtest.h>

#include "testing/compare.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace aotgrad::testing {
namespace {

using autograd::Function;

// y = x^3 with the derivative written by hand.
struct Cube : Function<Cube> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * x * x * 3.0};
  }
};

// y = a * b * k, k a double kept in saved_data; records needs_input_grad.
thread_local std::vector<bool> g_needs;
struct ScaledMul : Function<ScaledMul> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b, double k) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["k"] = k;
    return a * b * k;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    variable_list s = ctx->get_saved_variables();
    double k = std::get<double>(ctx->saved_data["k"]);
    g_needs = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    Tensor ga = ctx->needs_input_grad(0) ? grads[0] * s[1] * k : Tensor();
    Tensor gb = ctx->needs_input_grad(1) ? grads[0] * s[0] * k : Tensor();
    return {ga, gb, Tensor()};
  }
};

// Doubles x in place and returns it (mark_dirty).
struct DoubleInPlace : Function<DoubleInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0] * 2.0}; }
};

// (exp(x), x > 0 as a float mask): the mask is non-differentiable.
struct ExpWithMask : Function<ExpWithMask> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    Tensor e = x.exp();
    Tensor mask = gt(x, 0.0).to(x.dtype());
    ctx->mark_non_differentiable({mask});
    ctx->save_for_backward({e});
    return {e, mask};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {grads[0] * ctx->get_saved_variables()[0]};
  }
};

// (2x, 3x) without materialized gradients: records which gradients arrived defined.
thread_local std::vector<bool> g_defined;
struct TwoOutputs : Function<TwoOutputs> {
  static variable_list forward(AutogradContext* ctx, const Tensor& x) {
    ctx->set_materialize_grads(false);
    return {x * 2.0, x * 3.0};
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    g_defined = {grads[0].defined(), grads[1].defined()};
    Tensor g = grads[0].defined() ? grads[0] * 2.0 : Tensor();
    if (grads[1].defined()) g = g.defined() ? g + grads[1] * 3.0 : grads[1] * 3.0;
    return {g};
  }
};

struct OnceOnly : Function<OnceOnly> {
  static constexpr bool once_differentiable = true;
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0] * 2.0}; }
};

struct TooManyGrads : Function<TooManyGrads> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 2.0; }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], grads[0]};
  }
};

struct WrongShape : Function<WrongShape> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x.sum(); }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0]}; }
};

AotConfig config(const std::string& partitioner) {
  AotConfig c;
  c.partitioner = partitioner;
  c.name = "function";
  return c;
}

TEST(CustomFunction, EagerValuesAndGradients) {
  Tensor x = f64({1, -2, 3}, {3}).requires_grad_();
  Tensor y = Cube::apply(x);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{1, -8, 27}));
  EXPECT_EQ(y.grad_fn()->name(), "CubeBackward");
  y.sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3, 12, 27}));
}

TEST(CustomFunction, GradcheckF64) {
  Tensor a = leaf({2, 3}, 1), b = leaf({2, 3}, 2);
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return Cube::apply(in[0]).sin(); }, {a}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) { return ScaledMul::apply(in[0], in[1], 1.5); }, {a, b}));
}

TEST(CustomFunction, CompiledAgreesWithEager) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1), leaf({2, 3}, 2)};
      },
      [](const TensorList& a) {
        return ScaledMul::apply(Cube::apply(a[0]).tanh(), a[1], 0.5).sum();
      });
}

TEST(CustomFunction, CompiledGraphsHoldTheUserBackward) {
  for (const char* p : {"default", "min_cut"}) {
    SCOPED_TRACE(p);
    auto f = aot_function([](const Tensor& x) { return Cube::apply(x).sum(); }, config(p));
    Tensor x = leaf({4}, 3);
    f(x).backward();
    Tensor xe = x.detach().requires_grad_();
    Cube::apply(xe).sum().backward();
    EXPECT_EQ(x.grad().to_vector<double>(), xe.grad().to_vector<double>());
    CompiledGraphs g = f.graphs();
    EXPECT_FALSE(contains(g.joint + g.forward + g.backward, "autograd_function")) << g.joint;
    // backward's grads[0] * x * x * 3.0: three multiplications traced into the backward.
    EXPECT_TRUE(contains(g.backward, "aten.mul.Scalar")) << g.backward;
    compare_detail::expect_graph_text_round_trips(g.backward, "backward");
  }
}

TEST(CustomFunction, NeedsInputGradFollowsRequiresGrad) {
  for (bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    Tensor a = leaf({3}, 1), b = leaf({3}, 2, /*requires_grad=*/false);
    auto fn = [](const Tensor& x, const Tensor& y) { return ScaledMul::apply(x, y, 2.0).sum(); };
    g_needs.clear();
    (compiled ? aot_function(fn)(a, b) : fn(a, b)).backward();
    EXPECT_EQ(g_needs, (std::vector<bool>{true, false}));
    EXPECT_EQ(a.grad().to_vector<double>(), (b * 2.0).to_vector<double>());
  }
}

TEST(CustomFunction, MarkDirtyReturnsTheInput) {
  Tensor l = leaf({3}, 4);
  Tensor x = l * 1.0;
  Tensor y = DoubleInPlace::apply(x);
  EXPECT_TRUE(y.is_same(x));
  EXPECT_EQ(y.grad_fn()->name(), "DoubleInPlaceBackward");
  y.sum().backward();
  EXPECT_EQ(l.grad().to_vector<double>(), (std::vector<double>{2, 2, 2}));
  run_scenario(
      [] {
        return nonleaf_setup({2, 2}, 5);
      },
      [](const TensorList& a) { return DoubleInPlace::apply(a[0]).sin(); });
  std::string e = error_of<std::runtime_error>([] { DoubleInPlace::apply(leaf({2}, 6)); });
  EXPECT_TRUE(contains(e, "leaf Variable that requires grad")) << e;
}

TEST(CustomFunction, NonDifferentiableOutputs) {
  Tensor x = f64({-1, 2}, {2}).requires_grad_();
  variable_list outs = ExpWithMask::apply(x);
  EXPECT_TRUE(outs[0].requires_grad());
  EXPECT_FALSE(outs[1].requires_grad());
  EXPECT_EQ(outs[1].to_vector<double>(), (std::vector<double>{0, 1}));
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 7)};
      },
      [](const TensorList& a) { return ExpWithMask::apply(a[0]); });
}

TEST(CustomFunction, UnmaterializedGradientsArriveUndefined) {
  for (bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    Tensor x = leaf({3}, 8);
    auto fn = [](const Tensor& t) { return TwoOutputs::apply(t)[1].sum(); };
    g_defined.clear();
    (compiled ? aot_function(fn)(x) : fn(x)).backward();
    EXPECT_EQ(g_defined, (std::vector<bool>{false, true}));
    EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3, 3, 3}));
  }
}

TEST(CustomFunction, OnceDifferentiableRefusesDoubleBackward) {
  Tensor x = leaf({2}, 9);
  Tensor y = OnceOnly::apply(x);
  EnableGradGuard grad;
  std::string e =
      error_of<std::runtime_error>([&] { y.grad_fn()->apply({ones({2}, DType::f64)}); });
  EXPECT_TRUE(contains(e, "differentiate twice")) << e;
  EXPECT_TRUE(contains(e, "OnceOnlyBackward")) << e;
}

TEST(CustomFunction, BackwardErrorsNameTheFunction) {
  Tensor x = leaf({2}, 10);
  std::string count =
      error_of<std::runtime_error>([&] { TooManyGrads::apply(x).sum().backward(); });
  EXPECT_TRUE(contains(count,
                       "TooManyGradsBackward returned an incorrect number of gradients "
                       "(expected 1, got 2)"))
      << count;
  std::string shape = error_of<std::runtime_error>([&] { WrongShape::apply(x).backward(); });
  EXPECT_TRUE(contains(shape, "WrongShapeBackward returned an invalid gradient at index 0"))
      << shape;
  Tensor z = Cube::apply(x * 1.0);
  Tensor y = Cube::apply(z);
  z.mul_(2.0);
  std::string modified = error_of<std::runtime_error>([&] { y.sum().backward(); });
  EXPECT_TRUE(contains(modified, "modified by an inplace operation")) << modified;
  Tensor w = Cube::apply(x);
  w.sum().backward();
  std::string twice = error_of<std::runtime_error>([&] { w.sum().backward(); });
  EXPECT_TRUE(contains(twice, "second time")) << twice;
}

}  // namespace
}  // namespace aotgrad::testing
