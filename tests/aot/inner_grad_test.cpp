// autograd::grad inside a compiled function (issue 10, item 9; reference §6 #9, PyTorch's
// test_inner_grad): the inner gradient's ops are traced into the forward graph, its value and the
// outer backward (first order: the inner gradient is a constant to it, as in eager, where it does
// not require grad) match eager under every partitioner, and eager's errors come out the same.
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::autograd::grad;
using ag::testing::contains;
using ag::testing::expect_raises_like_eager;
using ag::testing::expect_unsupported;
using ag::testing::leaf;
using ag::testing::run_scenario;
using ag::testing::TensorList;

TEST(InnerGrad, PyTorchsTestInnerGrad) {
  // y = exp(x); grad(y, x) for a 0-dim x: the gradient needs no grad, so the graph is inference.
  run_scenario([] { return TensorList{leaf({}, 1)}; },
               [](const TensorList& a) {
                 Tensor y = a[0].exp();
                 return grad({y}, {a[0]});
               },
               {.expect_inference = true});
}

TEST(InnerGrad, GradientOpsAreInTheGraph) {
  auto f = ag::aot_function([](const Tensor& x) {
    Tensor y = x.sin();
    Tensor g = grad({y.sum()}, {x})[0];
    return g * 2.0;
  });
  Tensor x = leaf({4}, 2);
  Tensor out = f(x);
  EXPECT_TRUE(ag::testing::allclose(out, x.detach().cos() * 2.0, 1e-12, 1e-12));
  EXPECT_FALSE(out.requires_grad());  // as eager: grad() gives tensors that need no grad
  ag::CompiledGraphs g = f.graphs();
  EXPECT_TRUE(g.is_inference);
  // sin's VJP is in the graph; sin itself is dead once only its gradient is used.
  EXPECT_TRUE(contains(g.inference, "aten.cos.default")) << g.inference;
  EXPECT_FALSE(contains(g.inference, "aten.sin.default")) << g.inference;
}

TEST(InnerGrad, SinGradTimesTwo) {
  run_scenario([] { return TensorList{leaf({5}, 3)}; },
               [](const TensorList& a) {
                 Tensor y = a[0].sin();
                 Tensor g = grad({y.sum()}, {a[0]})[0];
                 return g * 2.0;
               });
}

TEST(InnerGrad, OuterBackwardUsesTheInnerGradientAsAConstant) {
  // d(g * x)/dx = g (g = cos x, no second derivative), and y's own gradient: retain_graph keeps
  // sin's saved input for the outer backward.
  run_scenario([] { return TensorList{leaf({5}, 4)}; },
               [](const TensorList& a) {
                 Tensor y = a[0].sin();
                 Tensor g = grad({y.sum()}, {a[0]}, {}, /*retain_graph=*/true)[0];
                 return TensorList{g * a[0], y};
               });
}

TEST(InnerGrad, TwoInputsGradientOutputsAndIntermediates) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 5), leaf({3}, 6)};
      },
      [](const TensorList& a) {
        Tensor h = a[0] * a[1];
        Tensor y = h.sin();
        // With respect to an input and an intermediate, with a given output gradient.
        TensorList g = grad({y}, {a[1], h}, {a[0] * 3.0}, /*retain_graph=*/true);
        return TensorList{g[0] * a[0], g[1].sum(), y.cos()};
      });
}

TEST(InnerGrad, ThroughMutationsAndViews) {
  // The walk runs over the functionalized graph: an in-place op and a piece of unbind.
  run_scenario(
      [] {
        return TensorList{leaf({3, 2}, 7)};
      },
      [](const TensorList& a) {
        Tensor y = a[0] * 2.0;
        y.add_(a[0].exp());
        Tensor r = ag::unbind(y, 1)[0];
        Tensor g = grad({(r * r).sum()}, {a[0]})[0];
        return TensorList{g, a[0] * 1.0};
      });
}

TEST(InnerGrad, AllowUnused) {
  run_scenario([] { return TensorList{leaf({3}, 8)}; },
               [](const TensorList& a) {
                 Tensor y = a[0] * 2.0;
                 Tensor z = a[0] * 3.0;
                 TensorList g = grad({y.sum()}, {a[0], z}, {}, false, false, /*allow_unused=*/true);
                 EXPECT_FALSE(g[1].defined());
                 return g[0] + 1.0;
               });
}

TEST(InnerGrad, BackwardThroughFreedValuesRaisesLikeEager) {
  // Without retain_graph the inner grad frees sin's saved input; the outer backward through y
  // then fails, eagerly and compiled (at backward time in both).
  run_scenario([] { return TensorList{leaf({4}, 9)}; },
               [](const TensorList& a) {
                 Tensor y = a[0].sin();
                 Tensor g = grad({y.sum()}, {a[0]})[0];
                 return TensorList{g * a[0], y};
               });
  // A second grad through the same nodes fails while the function runs.
  expect_raises_like_eager([] { return TensorList{leaf({4}, 10)}; },
                           [](const TensorList& a) {
                             Tensor y = a[0].sin();
                             grad({y.sum()}, {a[0]});
                             return grad({y.sum()}, {a[0]})[0];
                           },
                           "backward through the graph a second time");
}

TEST(InnerGrad, NodesThatSaveNothingRunAgain) {
  // add and sum keep no data, so a second grad through them works without retain_graph.
  run_scenario([] { return TensorList{leaf({4}, 11)}; },
               [](const TensorList& a) {
                 Tensor y = (a[0] + 1.0).sum();
                 Tensor g1 = grad({y}, {a[0]})[0];
                 Tensor g2 = grad({y}, {a[0]})[0];
                 return TensorList{g1 + g2, y};
               });
}

TEST(InnerGrad, ErrorsLikeEager) {
  expect_raises_like_eager(
      [] { return TensorList{leaf({3}, 12)}; },
      [](const TensorList& a) { return grad({(a[0] * 2.0).detach().sum()}, {a[0]}); },
      "does not require grad");
  expect_raises_like_eager([] { return TensorList{leaf({3}, 13)}; },
                           [](const TensorList& a) {
                             Tensor z = a[0] * 3.0;
                             return grad({(a[0] * 2.0).sum()}, {z});
                           },
                           "was not used");
  // No double backward (there is no create_graph): an inner gradient needs no grad, so
  // differentiating it again fails as eagerly.
  expect_raises_like_eager([] { return TensorList{leaf({3}, 16)}; },
                           [](const TensorList& a) {
                             Tensor g = grad({a[0].sin().sum()}, {a[0]})[0];
                             return grad({g.sum()}, {a[0]});
                           },
                           "element 0 of tensors does not require grad");
  // A saved value written in place before the inner grad: eager's version check.
  expect_raises_like_eager([] { return TensorList{leaf({3}, 14)}; },
                           [](const TensorList& a) {
                             Tensor h = a[0] * 1.0;
                             Tensor y = h.sin();
                             h.mul_(2.0);
                             return grad({y.sum()}, {a[0]});
                           },
                           "modified by an inplace operation");
}

TEST(InnerGrad, BackwardInsideTheFunctionIsRefused) {
  expect_unsupported([] { return TensorList{leaf({3}, 15)}; },
                     [](const TensorList& a) {
                       Tensor y = (a[0] * 2.0).sum();
                       y.backward();
                       return y;
                     },
                     "backward() inside a compiled function");
}
