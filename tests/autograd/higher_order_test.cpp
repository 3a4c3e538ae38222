// Higher-order gradients in eager mode: backward()/grad() with create_graph=true record the
// backward pass, so gradients can be differentiated again (third derivatives, Hessian-vector
// products, a WGAN-GP gradient penalty), and what cannot be differentiated twice says so.
#include <gtest/gtest.h>

#include <string>

#include "aotgrad/aotgrad.h"
#include "aotgrad/function.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/gradgradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::autograd::grad;
using ag::testing::allclose;

namespace {

Tensor vec(std::vector<double> v) {
  return ag::from_vector(v, {static_cast<int64_t>(v.size())});
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(HigherOrder, DerivativesOfACubeUpToTheThird) {
  Tensor x = vec({-1.5, 0.5, 2.0}).requires_grad_();
  Tensor y = (x * x * x).sum();
  Tensor g1 = grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(allclose(g1, vec({6.75, 0.75, 12.0}), 1e-12, 0));  // 3x^2
  ASSERT_TRUE(g1.requires_grad());
  Tensor g2 = grad({g1.sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(allclose(g2, vec({-9.0, 3.0, 12.0}), 1e-12, 0));  // 6x
  Tensor g3 = grad({g2.sum()}, {x})[0];
  EXPECT_TRUE(allclose(g3, vec({6.0, 6.0, 6.0}), 1e-12, 0));
  EXPECT_FALSE(g3.requires_grad());  // no create_graph: a plain gradient
}

TEST(HigherOrder, WithoutCreateGraphTheGradientIsAConstant) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor g = grad({(x * x * x).sum()}, {x})[0];
  EXPECT_FALSE(g.requires_grad());
}

TEST(HigherOrder, HessianVectorProductOfAQuadraticForm) {
  // f(x) = x^T A x: grad = (A + A^T) x, Hessian-vector product = (A + A^T) v.
  Tensor a = ag::from_vector(std::vector<double>{2, -1, 0.5, 3, 1, -2, 0, 4, 1.5}, {3, 3});
  Tensor x = vec({0.3, -1.2, 2.0}).requires_grad_();
  Tensor v = vec({1.0, 0.5, -2.0});
  Tensor f = (x * ag::matmul(a, x)).sum();
  Tensor g = grad({f}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  Tensor sym = a + a.transpose(0, 1);
  EXPECT_TRUE(allclose(g, ag::matmul(sym, x.detach()), 1e-12, 1e-12));
  Tensor hv = grad({(g * v).sum()}, {x})[0];
  EXPECT_TRUE(allclose(hv, ag::matmul(sym, v), 1e-12, 1e-12));
}

TEST(HigherOrder, BackwardWithCreateGraphGivesGradWithHistory) {
  Tensor x = vec({1.0, -2.0}).requires_grad_();
  (x * x * x).sum().backward(Tensor(), std::nullopt, /*create_graph=*/true);
  Tensor g = x.grad();
  ASSERT_TRUE(g.defined());
  EXPECT_TRUE(g.grad_fn() != nullptr);  // as PyTorch: .grad() is a non-leaf under create_graph
  EXPECT_TRUE(allclose(g, vec({3.0, 12.0}), 1e-12, 0));
  Tensor h = grad({g.sum()}, {x})[0];
  EXPECT_TRUE(allclose(h, vec({6.0, -12.0}), 1e-12, 0));
  // A second backward adds out of place: the .grad() the caller holds is not written.
  (x * 2.0).sum().backward(Tensor(), std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(allclose(g, vec({3.0, 12.0}), 1e-12, 0));
  EXPECT_TRUE(allclose(x.grad(), vec({5.0, 14.0}), 1e-12, 0));
}

TEST(HigherOrder, RetainGraphDefaultsToCreateGraph) {
  Tensor x = vec({0.5, 1.5}).requires_grad_();
  Tensor y = x.exp().sum();
  grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  // The graph was retained: a second pass through exp's saved output works.
  Tensor g = grad({y}, {x})[0];
  EXPECT_TRUE(allclose(g, x.detach().exp(), 1e-12, 1e-12));
}

// D(x) = tanh(x W^T + b).sum(1); loss = D(x).mean() + 10 * mean((||dD/dx||_2 - 1)^2).
// The expected values are PyTorch 1.13's (/usr/bin/python3, f64):
//   W = [[0.2,-0.5,0.3],[0.7,0.1,-0.4]], b = [0.1,-0.2], x as below
//   g, = torch.autograd.grad(out, x, torch.ones_like(out), create_graph=True)
//   loss = out.mean() + 10 * ((g.pow(2).sum(1).sqrt() - 1) ** 2).mean(); loss.backward()
TEST(HigherOrder, GradientPenaltyReachesTheLinearWeightsAsInPyTorch) {
  Tensor w =
      ag::from_vector(std::vector<double>{0.2, -0.5, 0.3, 0.7, 0.1, -0.4}, {2, 3}).requires_grad_();
  Tensor b = vec({0.1, -0.2}).requires_grad_();
  Tensor x = ag::from_vector(std::vector<double>{0.5, -1.0, 2.0, 1.5, 0.3, -0.7, -0.2, 0.8, 0.4,
                                                 1.0, 1.0, -1.0},
                             {4, 3})
                 .requires_grad_();
  Tensor out = ag::sum(ag::tanh(ag::linear(x, w, b)), {1});
  Tensor g = grad({out}, {x}, {ag::ones_like(out)}, std::nullopt, /*create_graph=*/true)[0];
  Tensor norm = ag::sqrt(ag::sum(g * g, {1}));
  Tensor penalty = ag::mean((norm - 1.0) * (norm - 1.0));
  (ag::mean(out) + penalty * 10.0).backward();
  EXPECT_TRUE(allclose(w.grad(),
                       ag::from_vector(std::vector<double>{-3.550023003964965, 1.9972407925786837,
                                                           0.478933904489142, -2.3595072804402233,
                                                           3.465043003041705, -3.315042069748991},
                                       {2, 3}),
                       1e-12, 1e-10));
  EXPECT_TRUE(allclose(b.grad(), vec({0.1375272118773483, -0.30558424814729346}), 1e-12, 1e-10));
  EXPECT_TRUE(allclose(
      x.grad(),
      ag::from_vector(
          std::vector<double>{-0.8677321597794186, -0.25137306814005134, 0.5957098835759893,
                              0.3049147840920792, -0.12939979886380495, -0.038674517905810904,
                              -0.0013347954804088687, -0.07358775655969862, 0.05829017468643814,
                              0.37774863984011264, 0.3550385928101514, -0.4518336775344947},
          {4, 3}),
      1e-12, 1e-10));
}

namespace {

struct Cube : ag::autograd::Function<Cube> {
  static Tensor forward(ag::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static ag::variable_list backward(ag::AutogradContext* ctx, ag::variable_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * 3.0 * x * x};
  }
};

struct OnceCube : ag::autograd::Function<OnceCube> {
  static constexpr bool once_differentiable = true;
  static Tensor forward(ag::AutogradContext* ctx, const Tensor& x) { return Cube::forward(ctx, x); }
  static ag::variable_list backward(ag::AutogradContext* ctx, ag::variable_list grads) {
    return Cube::backward(ctx, std::move(grads));
  }
};

// Saves its output: under create_graph the saved output's history is the Function's own node.
struct Exp : ag::autograd::Function<Exp> {
  static Tensor forward(ag::AutogradContext* ctx, const Tensor& x) {
    Tensor y = x.exp();
    ctx->save_for_backward({y});
    return y;
  }
  static ag::variable_list backward(ag::AutogradContext* ctx, ag::variable_list grads) {
    return {grads[0] * ctx->get_saved_variables()[0]};
  }
};

}  // namespace

TEST(HigherOrder, CustomFunctionBackwardIsDifferentiated) {
  Tensor x = vec({-1.0, 2.0}).requires_grad_();
  Tensor g = grad({Cube::apply(x).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(allclose(grad({g.sum()}, {x})[0], vec({-6.0, 12.0}), 1e-12, 0));
  Tensor e = grad({Exp::apply(x).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(allclose(grad({e.sum()}, {x})[0], x.detach().exp(), 1e-12, 1e-12));
}

TEST(HigherOrder, OnceDifferentiableFunctionSaysSoWhenDifferentiatedTwice) {
  Tensor x = vec({-1.0, 2.0}).requires_grad_();
  // The first backward under create_graph works (as PyTorch's @once_differentiable) ...
  Tensor g = grad({OnceCube::apply(x).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(allclose(g, vec({3.0, 12.0}), 1e-12, 0));
  // ... and differentiating its result is the error, by grad() and by backward().
  std::string msg = error_of([&] { grad({g.sum()}, {x}); });
  EXPECT_NE(msg.find("once_differentiable (OnceCubeBackward)"), std::string::npos) << msg;
  msg = error_of([&] { g.sum().backward(); });
  EXPECT_NE(msg.find("once_differentiable (OnceCubeBackward)"), std::string::npos) << msg;
}

TEST(HigherOrder, GradientPenaltyThroughAOnceDifferentiableNodeIsAnError) {
  // The incoming gradient is a constant (ones), yet the penalty depends on w through the saved
  // input: this must fail, not silently leave w's penalty term out.
  Tensor w = vec({0.5, -1.0}).requires_grad_();
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor y = OnceCube::apply(x * w).sum();
  Tensor g = grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  std::string msg = error_of([&] { (g * g).sum().backward(); });
  EXPECT_NE(msg.find("once_differentiable"), std::string::npos) << msg;
}

TEST(HigherOrder, CompiledFunctionUnderCreateGraphSaysDoubleBackwardIsUnsupported) {
  auto f = ag::aot_function([](const Tensor& x) { return (x * x * x).sum(); });
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor g = grad({f(x)}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(allclose(g, vec({3.0, 12.0}), 1e-12, 0));
  std::string msg = error_of([&] { grad({g.sum()}, {x}); });
  EXPECT_NE(msg.find("aot_function does not currently support double backward"), std::string::npos)
      << msg;
}

TEST(HigherOrder, CreateGraphInsideATracedFunctionIsRefused) {
  auto f = ag::aot_function([](const Tensor& x) {
    return grad({(x * x).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  });
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  std::string msg = error_of([&] { f(x); });
  EXPECT_NE(msg.find("create_graph=true inside a function aot_function traces"), std::string::npos)
      << msg;
}

TEST(HigherOrder, GradGradCheckOfComposites) {
  using ag::testing::test_input;
  EXPECT_TRUE(ag::testing::gradgradcheck(
      [](const std::vector<Tensor>& a) { return ag::tanh(ag::linear(a[0], a[1], a[2])); },
      {test_input({4, 3}, -1, 1, 1), test_input({2, 3}, -1, 1, 2), test_input({2}, -1, 1, 3)}));
  EXPECT_TRUE(ag::testing::gradgradcheck(
      [](const std::vector<Tensor>& a) { return ag::sigmoid(a[0] * a[1]).exp(); },
      {test_input({2, 3}, -1, 1, 4), test_input({2, 3}, -1, 1, 5)}));
}

namespace {

// Layer norm whose backward calls the fused backward row directly: a row without a derivative
// (the layer_norm op itself switches to differentiable ops under create_graph).
struct FusedLayerNorm : ag::autograd::Function<FusedLayerNorm> {
  static Tensor forward(ag::AutogradContext* ctx, const Tensor& x) {
    auto [y, mean, rstd] = ag::native_layer_norm(x, {x.size(-1)}, Tensor(), Tensor(), 1e-5);
    ctx->save_for_backward({x, mean, rstd});
    return y;
  }
  static ag::variable_list backward(ag::AutogradContext* ctx, ag::variable_list grads) {
    static const ag::ops::OpDef& row = ag::ops::lookup("aten.native_layer_norm_backward.default");
    std::vector<Tensor> s = ctx->get_saved_variables();
    return {ag::ops::dispatch(row, {grads[0], s[0], ag::IntList{s[0].size(-1)}, s[1], s[2],
                                    std::monostate{}, std::monostate{}, ag::IntList{1, 0, 0}})
                .at(0)};
  }
};

}  // namespace

TEST(HigherOrder, OpWhoseBackwardHasNoDerivativeSaysSoWhenDifferentiatedTwice) {
  // The Function's backward calls native_layer_norm_backward, a row without a derivative: its
  // second derivative is an error naming both, not a zero.
  Tensor x = ag::from_vector(std::vector<double>{0.5, -1.0, 2.0, 1.5, 0.25, -0.75}, {2, 3})
                 .requires_grad_();
  Tensor w = ag::from_vector(std::vector<double>{1.0, 2.0, 3.0, -1.0, 0.5, 2.5}, {2, 3});
  Tensor g = grad({(FusedLayerNorm::apply(x) * w).sum()}, {x}, {}, std::nullopt,
                  /*create_graph=*/true)[0];
  std::string msg = error_of([&] { grad({(g * g).sum()}, {x}); });
  EXPECT_NE(msg.find("FusedLayerNormBackward's backward is not differentiable (it calls "
                     "aten.native_layer_norm_backward.default"),
            std::string::npos)
      << msg;
}
