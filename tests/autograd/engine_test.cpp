// The eager autograd engine: accumulation, retain_graph, grad(), multiple roots, grad mode,
// detach, retain_grad, node names, version checks of saved tensors and in-place rules.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::test_input;

namespace {

// Runs `f`, expecting an exception of type E whose message contains every one of `needles`.
template <typename E, typename F>
::testing::AssertionResult throws_with(F&& f, std::initializer_list<std::string> needles) {
  try {
    f();
  } catch (const E& e) {
    std::string msg = e.what();
    for (const std::string& n : needles)
      if (msg.find(n) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks \"" << n << "\": " << msg;
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a different exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

Tensor vec(std::vector<double> v) {
  return ag::from_vector(v, {static_cast<int64_t>(v.size())});
}

}  // namespace

TEST(Engine, GradAccumulatesAcrossBackwardCalls) {
  Tensor x = vec({1.0, 2.0, 3.0}).requires_grad_();
  (x * x).sum().backward();
  EXPECT_TRUE(allclose(x.grad(), vec({2.0, 4.0, 6.0}), 0, 0));
  (x * 3.0).sum().backward();
  EXPECT_TRUE(allclose(x.grad(), vec({5.0, 7.0, 9.0}), 0, 0));
}

TEST(Engine, RetainGraphAllowsASecondBackward) {
  Tensor x = vec({0.5, -1.0}).requires_grad_();
  Tensor y = x.exp().sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  EXPECT_TRUE(allclose(x.grad(), x.exp() * 2.0, 1e-15, 1e-15));
}

TEST(Engine, SecondBackwardWithoutRetainGraphSaysSecondTime) {
  // Also guards against a released node reporting zero outputs (the engine then indexed past
  // its gradient buffer and crashed instead of throwing).
  Tensor x = vec({0.5, -1.0}).requires_grad_();
  Tensor y = x.exp().sum();
  y.backward();
  EXPECT_TRUE(
      throws_with<std::runtime_error>([&] { y.backward(); }, {"second time", "retain_graph"}));
  Tensor z = (x * 2.0).exp();
  z.backward(vec({1.0, 1.0}));
  EXPECT_TRUE(throws_with<std::runtime_error>(
      [&] {
        z.backward(vec({1.0, 1.0}));
      },
      {"second time"}));
}

TEST(Engine, GradReturnsGradientsWithoutTouchingDotGrad) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor w = vec({3.0, -4.0}).requires_grad_();
  Tensor y = (x * w).sum();
  std::vector<Tensor> g = ag::autograd::grad({y}, {x, w});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_TRUE(allclose(g[0], vec({3.0, -4.0}), 0, 0));
  EXPECT_TRUE(allclose(g[1], vec({1.0, 2.0}), 0, 0));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
}

TEST(Engine, GradOfUnusedInputNeedsAllowUnused) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor unused = vec({5.0}).requires_grad_();
  auto build = [&] { return (x * x).sum(); };
  EXPECT_TRUE(throws_with<std::invalid_argument>(
      [&] {
        ag::autograd::grad({build()}, {x, unused});
      },
      {"input 1", "allow_unused"}));
  std::vector<Tensor> g =
      ag::autograd::grad({build()}, {x, unused}, {}, false, false, /*allow_unused=*/true);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_TRUE(allclose(g[0], vec({2.0, 4.0}), 0, 0));
  EXPECT_FALSE(g[1].defined());
  EXPECT_FALSE(unused.grad().defined());
}

TEST(Engine, GradOfAnIntermediate) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor h = x * 2.0;
  Tensor y = (h * h).sum();
  std::vector<Tensor> g = ag::autograd::grad({y}, {h});
  EXPECT_TRUE(allclose(g[0], vec({4.0, 8.0}), 0, 0));
  EXPECT_FALSE(x.grad().defined());
}

TEST(Engine, MultipleRootsWithExplicitGradOutputs) {
  Tensor x = vec({1.0, 2.0, 3.0}).requires_grad_();
  Tensor a = x * 2.0;  // da/dx = 2
  Tensor b = x * x;    // db/dx = 2x
  ag::autograd::backward({a, b}, {vec({1.0, 0.5, -1.0}), vec({0.25, 1.0, 2.0})});
  // 2 * ga + 2x * gb
  EXPECT_TRUE(allclose(x.grad(), vec({2.0 + 0.5, 1.0 + 4.0, -2.0 + 12.0}), 1e-15, 0));
}

TEST(Engine, WrongNumberOfGradOutputsIsAnError) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  EXPECT_THROW(ag::autograd::backward({x * 2.0, x * 3.0}, {vec({1.0, 1.0})}),
               std::invalid_argument);
}

TEST(Engine, NonScalarBackwardWithoutGradientIsAnError) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2.0;
  EXPECT_TRUE(throws_with<std::invalid_argument>([&] { y.backward(); }, {"scalar", "[2]"}));
  // With a gradient it works.
  y.backward(vec({1.0, -1.0}));
  EXPECT_TRUE(allclose(x.grad(), vec({2.0, -2.0}), 0, 0));
}

TEST(Engine, GradientOfWrongShapeIsAnError) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  EXPECT_THROW((x * 2.0).backward(vec({1.0, 2.0, 3.0})), std::invalid_argument);
}

TEST(Engine, BackwardOfTensorThatDoesNotRequireGradIsAnError) {
  Tensor x = vec({1.0, 2.0});
  EXPECT_TRUE(
      throws_with<std::invalid_argument>([&] { x.sum().backward(); }, {"does not require grad"}));
}

TEST(Engine, DiamondGraphAccumulatesBothPaths) {
  // y = sin(x) * exp(x): x reaches y through two branches.
  Tensor x = vec({0.3, -0.7, 1.1}).requires_grad_();
  Tensor y = (x.sin() * x.exp()).sum();
  y.backward();
  Tensor ref = x.detach().cos() * x.detach().exp() + x.detach().sin() * x.detach().exp();
  EXPECT_TRUE(allclose(x.grad(), ref, 1e-14, 1e-14));
}

TEST(Engine, SameTensorUsedTwiceInOneOp) {
  Tensor x = vec({1.5, -2.0}).requires_grad_();
  Tensor h = x * 3.0;
  (h * h).sum().backward();  // d/dx (3x)^2 = 18x
  EXPECT_TRUE(allclose(x.grad(), vec({27.0, -36.0}), 1e-14, 0));
}

// The engine keeps emptied gradient buffers between walks for later nodes (WalkScratch::
// spare_buffers): a node of a later walk that gets a gradient for one output only must see
// nothing in its other slots, whatever the buffer held before.
TEST(Engine, AGradientBufferKeptFromAnEarlierWalkCarriesNothingOver) {
  for (int round = 0; round < 3; ++round) {
    Tensor x = ag::ones({3, 2}).requires_grad_();
    std::vector<Tensor> all = ag::unbind(x, 0);
    (all[0] * 2 + all[1] * 3 + all[2] * 4).sum().backward();
    EXPECT_TRUE(allclose(x.grad(), ag::from_vector(std::vector<float>{2, 2, 3, 3, 4, 4}, {3, 2})));

    Tensor y = ag::ones({3, 2}).requires_grad_();
    std::vector<Tensor> one = ag::unbind(y, 0);
    (one[1] * 5).sum().backward();
    EXPECT_TRUE(allclose(y.grad(), ag::from_vector(std::vector<float>{0, 0, 5, 5, 0, 0}, {3, 2})))
        << "round " << round;
  }
}

TEST(Engine, DeepChainAndSharedSubexpression) {
  Tensor x = vec({0.1, 0.2}).requires_grad_();
  Tensor h = x;
  for (int i = 0; i < 50; ++i) h = h * 1.01 + x;  // x feeds every level
  h.sum().backward();
  // dh_n/dx = 1.01 * dh_{n-1}/dx + 1, dh_0/dx = 1
  double d = 1.0;
  for (int i = 0; i < 50; ++i) d = 1.01 * d + 1.0;
  EXPECT_TRUE(allclose(x.grad(), vec({d, d}), 1e-12, 1e-12));
}

TEST(Engine, GradPastTheNodeTableLinearLimitRunsOnlyThePathToItsInput) {
  // 30 nodes before `mid` and 30 after: the engine's node table switches from scanning to an
  // index map past 16 nodes. grad() must run only the nodes between the output and `mid`, so the
  // history before `mid` is still there (not freed) for a backward afterwards.
  Tensor x = vec({0.5, -1.5}).requires_grad_();
  Tensor mid = x;
  for (int i = 0; i < 30; ++i) mid = mid * 1.02;
  Tensor y = mid;
  for (int i = 0; i < 30; ++i) y = y * 0.99 + mid;
  double dy = 1.0;  // dy_n/dmid = 0.99 * dy_{n-1}/dmid + 1, dy_0/dmid = 1
  for (int i = 0; i < 30; ++i) dy = 0.99 * dy + 1.0;
  std::vector<Tensor> g = ag::autograd::grad({y.sum()}, {mid});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(allclose(g[0], vec({dy, dy}), 1e-12, 1e-12));
  EXPECT_FALSE(x.grad().defined());
  mid.sum().backward();  // the 30 nodes before mid were neither run nor released by grad()
  EXPECT_TRUE(allclose(x.grad(), vec({std::pow(1.02, 30), std::pow(1.02, 30)}), 1e-12, 1e-12));
}

TEST(Engine, NoGradGuardStopsRecording) {
  Tensor x = vec({1.0}).requires_grad_();
  {
    ag::NoGradGuard no_grad;
    EXPECT_FALSE(ag::autograd::grad_mode_enabled());
    Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_leaf());
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
  EXPECT_TRUE(ag::autograd::grad_mode_enabled());
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(Engine, GradModeGuardsNestAndRestore) {
  Tensor x = vec({1.0}).requires_grad_();
  {
    ag::NoGradGuard outer;
    {
      ag::EnableGradGuard enable;
      EXPECT_TRUE(ag::autograd::grad_mode_enabled());
      EXPECT_TRUE((x * 2.0).requires_grad());
      {
        ag::NoGradGuard inner;
        EXPECT_FALSE((x * 2.0).requires_grad());
      }
      EXPECT_TRUE(ag::autograd::grad_mode_enabled());
    }
    EXPECT_FALSE(ag::autograd::grad_mode_enabled());
    {
      ag::NoGradGuard again;  // nested no_grad inside no_grad stays off after exit
    }
    EXPECT_FALSE(ag::autograd::grad_mode_enabled());
  }
  EXPECT_TRUE(ag::autograd::grad_mode_enabled());
}

TEST(Engine, BackwardRunsEvenUnderNoGradGuard) {
  Tensor x = vec({2.0}).requires_grad_();
  Tensor y = x * x;
  ag::NoGradGuard no_grad;
  y.backward();
  EXPECT_TRUE(allclose(x.grad(), vec({4.0}), 0, 0));
}

TEST(Engine, DetachStopsGradientsAndSharesStorageAndVersion) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor h = x * 2.0;
  Tensor d = h.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.storage(), h.storage());
  uint64_t before = h.version();
  d.add_(1.0);  // visible through h, and bumps the shared version counter
  EXPECT_EQ(h.version(), before + 1);
  EXPECT_EQ(d.version(), h.version());
  EXPECT_TRUE(allclose(h.detach(), vec({3.0, 5.0}), 0, 0));
  // Gradient flows only through the non-detached factor: d/dx (x * const) = const.
  Tensor x2 = vec({1.0, 2.0}).requires_grad_();
  Tensor c = (x2 * 3.0).detach();
  (x2 * c).sum().backward();
  EXPECT_TRUE(allclose(x2.grad(), vec({3.0, 6.0}), 0, 0));
}

TEST(Engine, RetainGradKeepsTheGradientOfANonLeaf) {
  Tensor x = vec({1.0, -2.0}).requires_grad_();
  Tensor h = x * 3.0;
  Tensor other = x * 4.0;
  h.retain_grad();
  (h * h).sum().backward();
  ASSERT_TRUE(h.grad().defined());
  EXPECT_TRUE(allclose(h.grad(), vec({6.0, -12.0}), 1e-15, 0));  // 2h
  EXPECT_FALSE(other.grad().defined());                          // not retained
  EXPECT_TRUE(allclose(x.grad(), vec({18.0, -36.0}), 1e-15, 0));
}

TEST(Engine, IsLeafAndGradFnNames) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor c = vec({1.0, 2.0});
  EXPECT_TRUE(x.is_leaf());
  EXPECT_TRUE(c.is_leaf());
  EXPECT_EQ(x.grad_fn(), nullptr);
  Tensor y = x * c;
  EXPECT_FALSE(y.is_leaf());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "aten.mul.Tensor");
  EXPECT_EQ((x * 2.0).grad_fn()->name(), "aten.mul.Scalar");
  EXPECT_EQ(x.exp().grad_fn()->name(), "aten.exp.default");
  EXPECT_EQ(x.sum().grad_fn()->name(), "aten.sum.default");
  // mul.Tensor with one input requiring grad: one edge to x's accumulator, none for c.
  ASSERT_EQ(y.grad_fn()->next_edges.size(), 2u);
  ASSERT_NE(y.grad_fn()->next_edges[0].node, nullptr);
  EXPECT_EQ(y.grad_fn()->next_edges[0].node->name(), "AccumulateGrad");
  EXPECT_EQ(y.grad_fn()->next_edges[1].node, nullptr);
  // Inputs that do not require grad give outputs that do not either.
  EXPECT_FALSE((c * c).requires_grad());
  EXPECT_TRUE((c * c).is_leaf());
}

TEST(Engine, ModifyingASavedOutputInPlaceIsAnErrorNamingTheOp) {
  Tensor x = vec({0.1, 0.2}).requires_grad_();
  Tensor e = x.exp();  // exp saves its output
  Tensor y = e.sum();
  e.mul_(2.0);
  EXPECT_TRUE(throws_with<std::runtime_error>(
      [&] { y.backward(); }, {"modified by an inplace operation", "aten.exp.default"}));
}

TEST(Engine, ModifyingASavedInputInPlaceIsAnError) {
  Tensor x = vec({0.1, 0.2}).requires_grad_();
  Tensor w = vec({3.0, 4.0});
  Tensor y = (x * w).sum();  // mul saves w for x's gradient
  w.add_(1.0);
  EXPECT_TRUE(throws_with<std::runtime_error>(
      [&] { y.backward(); }, {"modified by an inplace operation", "aten.mul.Tensor"}));
}

TEST(Engine, ModifyingAnUnsavedInputInPlaceIsFine) {
  // add saves nothing, so changing its input afterwards does not affect its backward.
  Tensor x = vec({0.1, 0.2}).requires_grad_();
  Tensor w = vec({3.0, 4.0});
  Tensor y = (x + w).sum();
  w.add_(1.0);
  y.backward();
  EXPECT_TRUE(allclose(x.grad(), vec({1.0, 1.0}), 0, 0));
}

TEST(Engine, InPlaceOnALeafThatRequiresGradThrows) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  EXPECT_TRUE(throws_with<std::runtime_error>([&] { x.add_(1.0); }, {"leaf", "aten.add_.Scalar"}));
  EXPECT_TRUE(throws_with<std::runtime_error>([&] { x.mul_(vec({1.0, 1.0})); }, {"leaf"}));
  // Allowed under NoGradGuard (an optimizer step).
  {
    ag::NoGradGuard no_grad;
    x.add_(1.0);
  }
  EXPECT_TRUE(allclose(x.detach(), vec({2.0, 3.0}), 0, 0));
  EXPECT_TRUE(x.is_leaf());
}

TEST(Engine, InPlaceOnANonLeafGivesRightGradients) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor w = vec({0.5, -3.0}).requires_grad_();
  Tensor h = x * 2.0;
  h.mul_(w);  // h = 2 x w
  h.add_(x);  // h = 2 x w + x
  EXPECT_FALSE(h.is_leaf());
  EXPECT_EQ(h.grad_fn()->name(), "aten.add_.Tensor");
  h.sum().backward();
  EXPECT_TRUE(allclose(x.grad(), vec({2.0 * 0.5 + 1.0, 2.0 * -3.0 + 1.0}), 1e-15, 0));
  EXPECT_TRUE(allclose(w.grad(), vec({2.0, 4.0}), 1e-15, 0));
}

TEST(Engine, InPlaceOnATensorThatDidNotRequireGradStartsTracking) {
  Tensor x = vec({1.0, 2.0}).requires_grad_();
  Tensor buf = ag::zeros({2}, ag::DType::f64);
  EXPECT_FALSE(buf.requires_grad());
  buf.add_(x * x);
  EXPECT_TRUE(buf.requires_grad());
  EXPECT_FALSE(buf.is_leaf());
  buf.sum().backward();
  EXPECT_TRUE(allclose(x.grad(), vec({2.0, 4.0}), 0, 0));
}

TEST(Engine, InPlaceOnAViewOfANonLeafRoutesGradientToTheBase) {
  Tensor x = vec({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  Tensor h = x * 1.0;
  Tensor part = h.slice(0, 1, 3);
  part.mul_(10.0);
  EXPECT_EQ(h.grad_fn()->name(), "CopySlices");
  h.backward(vec({1.0, 1.0, 1.0, 1.0}));
  EXPECT_TRUE(allclose(x.grad(), vec({1.0, 10.0, 10.0, 1.0}), 0, 0));
}

TEST(Engine, RequiresGradOnAnIntegerTensorThrows) {
  Tensor i = ag::from_vector(std::vector<int64_t>{1, 2}, {2});
  EXPECT_TRUE(
      throws_with<std::invalid_argument>([&] { i.requires_grad_(); }, {"floating point", "i64"}));
  EXPECT_NO_THROW(i.requires_grad_(false));
  EXPECT_FALSE(i.requires_grad());
}

TEST(Engine, RequiresGradOnANonLeafThrows) {
  Tensor x = vec({1.0}).requires_grad_();
  Tensor y = x * 2.0;
  EXPECT_TRUE(
      throws_with<std::invalid_argument>([&] { y.requires_grad_(false); }, {"leaf", "detach"}));
}

TEST(Engine, LeafGradientIsOwnedNotAnAliasOfABroadcast) {
  // sum's gradient is an expanded scalar; .grad() must be a real, contiguous [3] tensor.
  Tensor x = vec({1.0, 2.0, 3.0}).requires_grad_();
  x.sum().backward();
  Tensor g = x.grad();
  EXPECT_TRUE(g.is_contiguous());
  EXPECT_EQ(g.strides(), (ag::IntList{1}));
  EXPECT_TRUE(allclose(g, vec({1.0, 1.0, 1.0}), 0, 0));
}

TEST(Engine, GradientOfF32LeafStaysF32) {
  Tensor x = ag::from_vector(std::vector<float>{1.0f, 2.0f}, {2}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward();
  EXPECT_EQ(x.grad().dtype(), ag::DType::f32);
  EXPECT_TRUE(allclose(x.grad(), ag::from_vector(std::vector<float>{2.0f, 4.0f}, {2}), 0, 0));
}

// A view made before its base is written through another alias reads the new values, and its
// gradient must follow the base's new history (PyTorch regenerates the view's grad_fn).
TEST(EngineViews, ViewHistoryFollowsAWriteThroughItsBase) {
  Tensor l = ag::from_vector(std::vector<double>{1, -2, 3, 0.5, -1, 2}, {2, 3});
  l.requires_grad_();
  Tensor base = l * 2.0;
  Tensor v = base.t();
  base.mul_(0.5);  // v now reads l's values
  ag::sum(v * v).backward();
  std::vector<double> expected;
  for (double x : l.to_vector<double>()) expected.push_back(2 * x);  // d/dl sum(l^2)
  EXPECT_EQ(l.grad().to_vector<double>(), expected);
}

TEST(EngineViews, ViewMadeBeforeItsBaseHadHistoryFollowsTheWrite) {
  // Found by AotProgramFuzz: v was made while b needed no grad, so it had no history; after
  // b.mul_(w) it required grad, yet backward gave w nothing through it.
  Tensor b = ag::from_vector(std::vector<double>{1, -2, 3}, {3});
  Tensor w = ag::from_vector(std::vector<double>{0.5}, {1});
  w.requires_grad_();
  Tensor v = b.unsqueeze(1);
  b.mul_(w);
  ASSERT_TRUE(v.requires_grad());
  EXPECT_FALSE(v.is_leaf());  // as PyTorch's grad_fn getter: before autograd used v, too
  ag::sum(v * 2.0).backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{4.0}));  // 2 * (1 - 2 + 3)
}

TEST(EngineViews, ViewMadeUnderNoGradKeepsNoHistory) {
  Tensor l = ag::from_vector(std::vector<double>{1, 2, 3}, {3});
  l.requires_grad_();
  Tensor base = l * 1.0;
  Tensor v;
  {
    ag::NoGradGuard no_grad;
    v = base.slice(0, 0, 2);
  }
  (ag::sum(v * 2.0) + ag::sum(base)).backward();  // nothing flows through the no_grad view
  EXPECT_EQ(l.grad().to_vector<double>(), (std::vector<double>{1, 1, 1}));
}

TEST(EngineViews, ViewHistoryFollowsAWriteThroughASiblingView) {
  Tensor l = ag::from_vector(std::vector<double>{1, 2, 3, 4}, {4});
  l.requires_grad_();
  Tensor base = l * 1.0;
  Tensor a = base.slice(0, 0, 3), b = base.slice(0, 1, 4);  // overlap at elements 1, 2
  b.mul_(3.0);
  ag::sum(a).backward();  // a = [l0, 3 l1, 3 l2]
  EXPECT_EQ(l.grad().to_vector<double>(), (std::vector<double>{1, 3, 3, 0}));
}

// The base had no history when the view was made, and gains one when a sibling view is written
// with values that require grad (found by RespecializeFuzz, seed 24: eager dropped the gradient
// through the view, so compiled functions, which follow PyTorch, looked wrong). PyTorch's
// grad_fn getter gives the view a history from the base's new one.
TEST(EngineViews, ViewOfABaseWithoutHistoryFollowsAWriteThroughASiblingView) {
  Tensor raw = ag::zeros({2, 3}, ag::DType::f64);
  Tensor a = raw.slice(0, 1, 2);  // made while raw has no history
  Tensor w = ag::from_vector(std::vector<double>{1.5}, {1});
  w.requires_grad_();
  Tensor v = raw.select(1, 0);
  v.add_(w.expand({2}) * 2.0);  // raw now has a history; a[0, 0] = 2 w
  ASSERT_TRUE(a.requires_grad());
  ag::sum(a * a).backward();  // d/dw (2 w)^2 = 8 w
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{12.0}));
}

TEST(EngineViews, GradientOfAGeometryChangedUnderNoGradIsFittedAsPyTorch) {
  // Found by AotProgramFuzz (seed 120018). The gradient reaching a tensor whose geometry was
  // changed in place under no_grad has the new shape; its node recorded the old one. PyTorch's
  // validate_outputs takes it as it is when the shapes agree, sums it when the old shape
  // broadcasts to the new, and refuses it otherwise.
  Tensor x = test_input({6});
  Tensor y = x * 2.0;
  {
    ag::NoGradGuard no_grad;
    ag::unsqueeze_(y, 0);
  }
  y.backward(ag::arange(6.0).view({1, 6}));
  EXPECT_TRUE(allclose(x.grad(), ag::arange(6.0) * 2.0, 0, 0));
  Tensor z = x * 2.0;
  {
    ag::NoGradGuard no_grad;
    ag::unsqueeze_(z, 1);
  }
  EXPECT_TRUE(throws_with<std::runtime_error>(
      [&] {
        z.backward(ag::ones({6, 1}));
      },
      {"invalid gradient at index 0 - got [6, 1] but expected shape compatible with [6]"}));
  Tensor w = test_input({2, 3}) * 2.0;
  {
    ag::NoGradGuard no_grad;
    ag::t_(w);
  }
  EXPECT_TRUE(throws_with<std::runtime_error>(
      [&] {
        (w * ag::ones({3, 2})).sum().backward();
      },
      {"Function MulBackward0 returned an invalid gradient at index 0 - got [3, 2] but expected "
       "shape compatible with [2, 3]"}));
}

// A node none of whose inputs has an edge to follow (each a view made under no_grad of a tensor
// that requires grad: it requires grad, yet has neither a grad_fn nor an accumulator) saves no
// input, as PyTorch's should_compute_output guards each SavedVariable: writing the view later is
// no error and such a node needs no retain_graph. PyTorch 1.13 gives the values below.
TEST(EngineSavedValues, ANodeWhoseInputsAreAllNoGradViewsSavesNoInput) {
  Tensor x = vec({1, 2, 3}).requires_grad_();
  Tensor v;
  {
    ag::NoGradGuard no_grad;
    v = x.view({3});
  }
  Tensor out = v * v;
  {
    ag::NoGradGuard no_grad;
    v.add_(1.0);
  }
  EXPECT_TRUE(out.requires_grad());
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{1, 4, 9}));
  (ag::sum(out) + ag::sum(x * 3.0)).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3, 3, 3}));

  // Nothing saved, nothing freed: a second backward needs no retain_graph.
  Tensor x2 = vec({1, 2, 3}).requires_grad_();
  Tensor v2;
  {
    ag::NoGradGuard no_grad;
    v2 = x2.slice(0, 0, 2);
  }
  Tensor l = ag::sum(v2 * v2);
  l.backward();
  l.backward();
  EXPECT_FALSE(x2.grad().defined());
}

TEST(EngineSavedValues, AnIntermediateViewedUnderNoGradThenWrittenKeepsItsOtherGradient) {
  Tensor x = vec({1, 2, 3}).requires_grad_();
  Tensor y = x * 2.0;
  Tensor w;
  {
    ag::NoGradGuard no_grad;
    w = y.slice(0, 1, 3);
  }
  Tensor o = w * w;
  {
    ag::NoGradGuard no_grad;
    w.add_(1.0);
  }
  EXPECT_EQ(o.to_vector<double>(), (std::vector<double>{16, 36}));
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{2, 5, 7}));
  (ag::sum(o) + ag::sum(y)).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 2, 2}));
}

// Outputs are saved regardless (PyTorch saves `result` unguarded), and a saved input some edge
// needs is still checked.
TEST(EngineSavedValues, SavedOutputsAndNeededInputsOfSuchNodesAreStillChecked) {
  Tensor x = vec({1, 2, 3}).requires_grad_();
  Tensor v;
  {
    ag::NoGradGuard no_grad;
    v = x.slice(0, 0, 2);
  }
  Tensor l = ag::sum(v.exp());
  l.backward();
  EXPECT_TRUE(throws_with<std::runtime_error>([&] { l.backward(); }, {"second time"}));

  Tensor e = v.exp();
  Tensor le = ag::sum(e);
  {
    ag::NoGradGuard no_grad;
    e.mul_(2.0);
  }
  EXPECT_TRUE(throws_with<std::runtime_error>(
      [&] { le.backward(); }, {"modified by an inplace operation", "aten.exp.default"}));

  Tensor w = vec({4, 5}).requires_grad_();
  Tensor lw = ag::sum(v * w);  // w's gradient reads v
  {
    ag::NoGradGuard no_grad;
    v.add_(1.0);
  }
  EXPECT_ANY_THROW(lw.backward());
}
