// aot_function end to end: graphs, compiled == eager, recompilation, errors.
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::test_input;

namespace {

Tensor mlp_loss(const Tensor& x, const Tensor& w) { return ag::mm(x, w).tanh().sum(); }

}  // namespace

TEST(AotBasic, ForwardBackwardMatchEager) {
  Tensor x = test_input({4, 3}, -1, 1, 1), w = test_input({3, 5}, -1, 1, 2);
  Tensor x2 = x.detach().requires_grad_(), w2 = w.detach().requires_grad_();
  Tensor eager = mlp_loss(x, w);
  eager.backward();
  auto f = ag::aot_function(mlp_loss);
  Tensor out = f(x2, w2);
  EXPECT_TRUE(out.requires_grad());
  EXPECT_FALSE(out.is_leaf());
  out.backward();
  EXPECT_TRUE(allclose(out, eager, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(x2.grad(), x.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(w2.grad(), w.grad(), 1e-12, 1e-12));
  ag::CompiledGraphs g = f.graphs();
  EXPECT_FALSE(g.is_inference);
  EXPECT_NE(g.forward.find("aten.mm.default"), std::string::npos) << g.forward;
  EXPECT_NE(g.backward.find("aten.tanh_backward.default"), std::string::npos) << g.backward;
  EXPECT_EQ(f.num_compilations(), 1u);
}

TEST(AotBasic, SavesOnlyWhatBackwardNeeds) {
  auto f = ag::aot_function(mlp_loss);
  Tensor x = test_input({4, 3}, -1, 1, 1), w = test_input({3, 5}, -1, 1, 2);
  f(x, w);
  ag::CompiledGraphs g = f.graphs();
  // Backward of mm needs x and w; of tanh its output: 3 saved values.
  EXPECT_EQ(g.num_saved, 3u) << g.saved_report;
  EXPECT_EQ(g.saved_activation_bytes, 4u * 5u * 8u) << g.saved_report;
}

TEST(AotBasic, InferenceGraphWhenNothingRequiresGrad) {
  auto f = ag::aot_function(mlp_loss);
  Tensor x = test_input({4, 3}, -1, 1, 1, false), w = test_input({3, 5}, -1, 1, 2, false);
  Tensor out = f(x, w);
  EXPECT_FALSE(out.requires_grad());
  EXPECT_TRUE(f.graphs().is_inference);
  EXPECT_TRUE(allclose(out, mlp_loss(x, w), 1e-12, 1e-12));
}

TEST(AotBasic, InferenceGraphUnderNoGrad) {
  auto f = ag::aot_function(mlp_loss);
  Tensor x = test_input({4, 3}), w = test_input({3, 5});
  ag::NoGradGuard no_grad;
  Tensor out = f(x, w);
  EXPECT_FALSE(out.requires_grad());
  EXPECT_TRUE(f.graphs().is_inference);
}

// A call first tests the specialization used last (no key is built): one that differs from it
// only in grad mode or in how its inputs alias must still find, or compile, its own.
TEST(AotBasic, TheLastSpecializationServesOnlyCallsOfItsSignature) {
  auto fn = [](const Tensor& a, const Tensor& b) { return (a * b).sum(); };
  auto f = ag::aot_function(fn);
  Tensor x = test_input({3, 3}), y = test_input({3, 3}, -1, 1, 2);
  f(x, y);
  f(x, y);
  EXPECT_EQ(f.num_compilations(), 1u);
  EXPECT_EQ(f.stats().hits, 1u);
  {
    ag::NoGradGuard no_grad;
    Tensor out = f(x, y);
    EXPECT_FALSE(out.requires_grad());
    EXPECT_TRUE(f.graphs().is_inference);
  }
  EXPECT_EQ(f.num_compilations(), 2u);
  Tensor same = f(x, x);  // one tensor twice: another input plan, same shapes
  EXPECT_EQ(f.num_compilations(), 3u);
  EXPECT_TRUE(allclose(same, fn(x, x), 1e-12, 1e-12));
  same.backward();
  Tensor want = x.detach().clone().requires_grad_();
  fn(want, want).backward();
  EXPECT_TRUE(allclose(x.grad(), want.grad(), 1e-12, 1e-12));
  Tensor out = f(x, y);  // back to the first: found, not compiled
  EXPECT_TRUE(out.requires_grad());
  EXPECT_EQ(f.num_compilations(), 3u);
  EXPECT_EQ(f.stats().hits, 2u);
}

TEST(AotBasic, RecompilesOnShapeDtypeAndRequiresGrad) {
  auto f = ag::aot_function(mlp_loss);
  f(test_input({4, 3}), test_input({3, 5}));
  f(test_input({4, 3}), test_input({3, 5}));
  EXPECT_EQ(f.num_compilations(), 1u);
  f(test_input({2, 3}), test_input({3, 5}));
  EXPECT_EQ(f.num_compilations(), 2u);
  f(test_input({2, 3}).to(ag::DType::f32).detach(), test_input({3, 5}).to(ag::DType::f32).detach());
  EXPECT_EQ(f.num_compilations(), 3u);
  f(test_input({2, 3}, -1, 1, 1, false), test_input({3, 5}));
  EXPECT_EQ(f.num_compilations(), 4u);
  // Back to the first specialization: no new compile.
  f(test_input({4, 3}), test_input({3, 5}));
  EXPECT_EQ(f.num_compilations(), 4u);
}

TEST(AotBasic, OnlyInputsThatRequireGradGetGradients) {
  Tensor x = test_input({4, 3}, -1, 1, 1, false), w = test_input({3, 5});
  auto f = ag::aot_function(mlp_loss);
  f(x, w).backward();
  EXPECT_FALSE(x.grad().defined());
  ASSERT_TRUE(w.grad().defined());
  Tensor w2 = w.detach().requires_grad_();
  mlp_loss(x, w2).backward();
  EXPECT_TRUE(allclose(w.grad(), w2.grad(), 1e-12, 1e-12));
}

TEST(AotBasic, MultipleOutputsTupleAndVector) {
  auto f = ag::aot_function([](const Tensor& a, const Tensor& b) {
    return std::make_tuple((a * b).sum(), a.exp());
  });
  Tensor a = test_input({3}), b = test_input({3}, -1, 1, 7);
  auto [s, e] = f(a, b);
  EXPECT_TRUE(allclose(s, (a * b).sum(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(e, a.exp(), 1e-12, 1e-12));
  ag::autograd::backward({s, e}, {ag::ones({}, ag::DType::f64), ag::ones({3}, ag::DType::f64)});
  Tensor a2 = a.detach().requires_grad_(), b2 = b.detach().requires_grad_();
  ag::autograd::backward({(a2 * b2).sum(), a2.exp()},
                         {ag::ones({}, ag::DType::f64), ag::ones({3}, ag::DType::f64)});
  EXPECT_TRUE(allclose(a.grad(), a2.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(b.grad(), b2.grad(), 1e-12, 1e-12));

  auto g = ag::aot_function([](const std::vector<Tensor>& xs) {
    return std::vector<Tensor>{xs[0] + xs[1], xs[1] * 2.0};
  });
  std::vector<Tensor> r = g(std::vector<Tensor>{a, b});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(allclose(r[1], b * 2.0, 1e-12, 1e-12));
}

TEST(AotBasic, UnusedOutputGradientIsZeroNotError) {
  auto f = ag::aot_function([](const Tensor& a) { return std::make_pair(a.sin(), a.cos()); });
  Tensor a = test_input({5});
  auto [s, c] = f(a);
  s.sum().backward();  // c receives no gradient
  EXPECT_TRUE(allclose(a.grad(), a.cos(), 1e-12, 1e-12));
}

TEST(AotBasic, SecondBackwardWithoutRetainGraphFails) {
  auto f = ag::aot_function([](const Tensor& a) { return a.exp().sum(); });
  Tensor a = test_input({3});
  Tensor y = f(a);
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  EXPECT_TRUE(allclose(a.grad(), a.exp() * 2.0, 1e-12, 1e-12));
  EXPECT_THROW(y.backward(), std::runtime_error);
}

TEST(AotBasic, SavedInputModifiedInPlaceIsAnError) {
  auto f = ag::aot_function([](const Tensor& a, const Tensor& b) { return (a * b).sum(); });
  Tensor a = test_input({3}), b = test_input({3}, -1, 1, 3, false);
  Tensor y = f(a, b);
  b.add_(1.0);
  try {
    y.backward();
    FAIL() << "expected a version-counter error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos) << e.what();
  }
}

TEST(AotBasic, InputMutationIsAppliedToTheCallersTensor) {
  auto f = ag::aot_function([](Tensor a) {
    a.mul_(2.0);
    return a.sum();
  });
  Tensor a = test_input({3}, -1, 1, 1, false);
  Tensor expected = a * 2.0;
  uint64_t version = a.version();
  Tensor s = f(a);
  EXPECT_TRUE(allclose(a, expected, 0, 0));
  EXPECT_TRUE(allclose(s, expected.sum(), 1e-12, 1e-12));
  EXPECT_GT(a.version(), version);
  EXPECT_EQ(f.graphs().inference.find("mul_"), std::string::npos) << f.graphs().inference;
}

TEST(AotBasic, ReturningAViewOfAnInputReplaysTheView) {
  auto f = ag::aot_function([](const Tensor& a) { return a.t(); });
  Tensor a = test_input({2, 3});
  Tensor out = f(a);
  EXPECT_TRUE(out.is_view());
  EXPECT_TRUE(out._base().is_same(a));
  EXPECT_EQ(out.sizes(), (ag::IntList{3, 2}));
  EXPECT_TRUE(out.requires_grad());
  auto g = ag::aot_function([](const Tensor& a) { return a; });
  Tensor b = test_input({2});
  EXPECT_TRUE(g(b).is_same(b));
}

TEST(AotBasic, InPlaceOnIntermediateIsFunctionalized) {
  auto fn = [](const Tensor& a) {
    Tensor y = a * 2.0;
    y.add_(a);
    y.mul_(y);
    return y.sum();
  };
  Tensor a = test_input({4});
  Tensor a2 = a.detach().requires_grad_();
  auto f = ag::aot_function(fn);
  Tensor out = f(a);
  out.backward();
  Tensor ref = fn(a2);
  ref.backward();
  EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(a.grad(), a2.grad(), 1e-12, 1e-12));
  EXPECT_EQ(f.graphs().forward.find("add_"), std::string::npos) << f.graphs().forward;
}

TEST(AotBasic, ShapeErrorNamesTheInputs) {
  auto f = ag::aot_function(mlp_loss);
  try {
    f(test_input({4, 3}), test_input({4, 5}));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("f64[4, 3], f64[4, 5]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("aten.mm.default"), std::string::npos) << msg;
  }
}

TEST(AotBasic, CapturedTensorIsRejectedClearly) {
  Tensor captured = test_input({3}, -1, 1, 5, false);
  auto f = ag::aot_function([&](const Tensor& a) { return (a * captured).sum(); });
  try {
    f(test_input({3}));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("did not receive as an input"), std::string::npos) << e.what();
  }
}

TEST(AotBasic, ScalarArgumentsAreGuarded) {
  auto f = ag::aot_function([](const Tensor& a, double s) { return (a * s).sum(); });
  Tensor a = test_input({3});
  EXPECT_TRUE(allclose(f(a, 2.0), (a * 2.0).sum(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(f(a, 3.0), (a * 3.0).sum(), 1e-12, 1e-12));
  EXPECT_EQ(f.num_compilations(), 2u);
}
