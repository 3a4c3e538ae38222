// In-place ops: values (broadcasting, dtype rules, strided and aliased operands), version
// counters, eager autograd through in-place ops on non-leaf tensors and on views of them
// (CopySlices), and the errors autograd raises for unsafe mutation.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::contains;
using testing::error_of;
using testing::f64;
using testing::gradcheck;
using testing::i64;
using testing::test_input;

Tensor f32(std::vector<float> v, const IntList& sizes) {
  return from_vector(v, sizes);
}
TEST(InplaceValues, AddBroadcastsAndScalesByAlpha) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor& r = x.add_(f32({10, 20, 30}, {3}), 2);
  EXPECT_TRUE(r.is_same(x));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{21, 42, 63, 24, 45, 66}));
  x.add_(0.5);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{21.5, 42.5, 63.5, 24.5, 45.5, 66.5}));
  add_(x, 1.0, -2);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{19.5, 40.5, 61.5, 22.5, 43.5, 64.5}));
}

TEST(InplaceValues, DtypeRules) {
  // A wider other is computed in the promoted type and written back in self's dtype.
  Tensor x = f32({1, 2}, {2});
  x.add_(f64({0.25, 0.5}, {2}));
  EXPECT_EQ(x.dtype(), DType::f32);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.25, 2.5}));
  Tensor n = i64({1, 2}, {2});
  n.add_(i64({3, 4}, {2}), 2);
  n.mul_(int64_t{3});
  EXPECT_EQ(n.to_vector<int64_t>(), (std::vector<int64_t>{21, 30}));
  // Float results cannot go into an integer self; float alpha is refused for integer results.
  std::string msg = error_of([&] { n.add_(f32({1, 1}, {2})); });
  EXPECT_TRUE(contains(msg, "aten.add_.Tensor")) << msg;
  EXPECT_TRUE(contains(msg, "can't be cast")) << msg;
  EXPECT_TRUE(contains(error_of([&] { n.mul_(1.5); }), "can't be cast"));
  EXPECT_TRUE(contains(error_of([&] { n.add_(i64({1, 1}, {2}), 0.5); }), "alpha"));
  EXPECT_EQ(n.to_vector<int64_t>(), (std::vector<int64_t>{21, 30}));  // untouched by the errors
  // bool arithmetic is logical.
  Tensor b = from_vector(std::vector<bool>{true, false, true}, {3});
  b.mul_(from_vector(std::vector<bool>{true, true, false}, {3}));
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, false}));
}

TEST(InplaceValues, ShapeErrors) {
  Tensor x = f32({1, 2, 3}, {3});
  std::string msg = error_of([&] { x.add_(f32({1, 2, 3, 4, 5, 6}, {2, 3})); });
  EXPECT_TRUE(contains(msg, "does not broadcast to self's shape [3]")) << msg;
  EXPECT_TRUE(contains(error_of([&] { x.mul_(f32({1, 2}, {2})); }), "aten.mul_.Tensor"));
  // Writing into an expanded tensor would write one element several times (fill_ and zero_,
  // which write one value, may: InplaceValues.FillAndZeroWriteThroughAnExpandedView).
  Tensor e = f32({1}, {1}).expand({3});
  EXPECT_TRUE(contains(error_of([&] { e.add_(1.0); }), "clone()"));
  EXPECT_TRUE(contains(error_of([&] { e.copy_(f32({1, 2, 3}, {3})); }), "single memory location"));
  EXPECT_TRUE(contains(error_of([&] { e.mul_(2.0); }), "single memory location"));
}

TEST(InplaceValues, FillAndZeroWriteThroughAnExpandedView) {
  // As PyTorch 1.13 (fill is idempotent, so its overlap check is off): every element the
  // expanded view reaches gets the value; add_ there still raises (ShapeErrors).
  Tensor x = zeros({1, 3});
  Tensor e = x.expand({2, 3});
  e.fill_(5.0);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{5, 5, 5}));
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{5, 5, 5, 5, 5, 5}));
  Tensor col = f32({0, 1, 2}, {3, 1});
  col.expand({3, 2}).zero_();
  EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  Tensor t = zeros({2, 1}, DType::f64);
  ops::dispatch(ops::lookup("aten.fill_.Tensor"), {t.expand({2, 3}), full({}, 4.0, DType::f64)});
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{4, 4}));
  // Large enough for the kernel's threads: each element is written once.
  Tensor big = zeros({1, 100000});
  big.expand({8, 100000}).fill_(-1.0);
  EXPECT_EQ(sum(big).item<double>(), -100000.0);
}

TEST(InplaceValues, MulOnStridedSelf) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor col = x.t().select(0, 1);  // column 1: elements 2 and 5
  col.mul_(f32({10, 100}, {2}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 20, 3, 4, 500, 6}));
  x.slice(1, 0, 3, 2).mul_(-1.0);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{-1, 20, -3, -4, 500, -6}));
}

TEST(InplaceValues, AliasedOperandsReadBeforeWrite) {
  Tensor x = f32({1, 2, 3, 4}, {4});
  x.add_(x);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
  // other overlaps self shifted by one element.
  x.slice(0, 1, 4).add_(x.slice(0, 0, 3));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{2, 6, 10, 14}));
  Tensor m = f32({1, 2, 3, 4}, {2, 2});
  m.copy_(m.t());
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{1, 3, 2, 4}));
}

TEST(InplaceValues, CopyBroadcastsAndConverts) {
  Tensor x = zeros({2, 3});
  x.copy_(f64({1.5, 2.5, 3.5}, {3}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.5, 2.5, 3.5, 1.5, 2.5, 3.5}));
  Tensor n = zeros({3}, DType::i64);
  n.copy_(f32({1.9f, -2.7f, 3.0f}, {3}));
  EXPECT_EQ(n.to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
  Tensor t = zeros({3, 2}).t();
  t.copy_(f32({1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_EQ(t._base().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(InplaceValues, ZeroAndFillWriteThroughViews) {
  Tensor x = ones({3, 4});
  x.select(1, 2).zero_();
  x.slice(0, 0, 1).fill_(7);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{7, 7, 7, 7, 1, 1, 0, 1, 1, 1, 0, 1}));
  Tensor b = zeros({2}, DType::b8);
  b.fill_(true);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, true}));
  Tensor n = zeros({2}, DType::i64);
  n.fill_(2.9);
  EXPECT_EQ(n.to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
}

TEST(InplaceVersions, EveryInPlaceOpBumpsTheSharedCounter) {
  Tensor x = zeros({2, 3});
  Tensor v = x.select(0, 1);
  Tensor w = x.t();
  const uint64_t start = x.version();
  EXPECT_EQ(v.version(), start);
  x.add_(1.0);
  x.add_(ones({3}));
  x.mul_(2.0);
  x.mul_(ones({2, 3}));
  v.copy_(ones({3}));
  w.zero_();
  v.fill_(3.0);
  EXPECT_EQ(x.version(), start + 7);
  EXPECT_EQ(v.version(), start + 7);
  EXPECT_EQ(w.version(), start + 7);
  // Out-of-place ops and new views leave it alone.
  Tensor c = x.clone();
  Tensor u = x.view({6});
  EXPECT_EQ(x.version(), start + 7);
  EXPECT_EQ(c.version(), 0u);
  (void)u;
}

// ---- eager autograd ----

TEST(InplaceAutograd, NonLeafAddAndMul) {
  Tensor x = test_input({2, 3});
  Tensor w = test_input({3}, -1, 1, 2);
  Tensor y = x.clone();
  y.add_(w, 2.0);
  y.mul_(3.0);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(y.grad_fn()->name(), "aten.mul_.Scalar");
  y.backward(ones({2, 3}, DType::f64));
  EXPECT_TRUE(allclose(x.grad(), full({2, 3}, 3.0, DType::f64)));
  EXPECT_TRUE(allclose(w.grad(), full({3}, 12.0, DType::f64)));  // 2 * 3, summed over 2 rows
}

TEST(InplaceAutograd, MulWithOtherRequiringGrad) {
  Tensor x = test_input({2, 3});
  Tensor w = test_input({2, 3}, -1, 1, 2);
  Tensor y = x.clone();
  y.mul_(w);
  y.backward(ones({2, 3}, DType::f64));
  EXPECT_TRUE(allclose(x.grad(), w.detach()));
  EXPECT_TRUE(allclose(w.grad(), x.detach()));
  // other aliasing self: y * y.
  Tensor a = test_input({3});
  Tensor z = a.clone();
  z.mul_(z);
  z.backward(ones({3}, DType::f64));
  EXPECT_TRUE(allclose(a.grad(), (a.detach() * 2.0)));
}

TEST(InplaceAutograd, MulRowGivesOtherTheGradientOfSelfBeforeTheWrite) {
  // The row saves self's value from before the write (PyTorch's original_self), which other's
  // gradient reads; the saved copy is no alias of self, so writing self again is no error.
  Tensor x = test_input({3});
  Tensor w = test_input({3}, -1, 1, 2);
  Tensor y = x.clone();
  ops::dispatch(ops::lookup("aten.mul_.Tensor"), {y, w});
  EXPECT_EQ(y.grad_fn()->name(), "aten.mul_.Tensor");
  y.add_(1.0);
  y.backward(ones({3}, DType::f64));
  EXPECT_TRUE(allclose(w.grad(), x.detach(), 0, 0)) << w.grad();
  EXPECT_TRUE(allclose(x.grad(), w.detach(), 0, 0)) << x.grad();
  // Double backward: d(w.grad)/dx is one per element, through the saved copy's old history.
  Tensor x2 = test_input({3});
  Tensor w2 = test_input({3}, -1, 1, 2);
  Tensor y2 = x2 * 1.0;
  y2.mul_(w2);
  std::vector<Tensor> gw = autograd::grad({y2.sum()}, {w2}, {}, /*retain_graph=*/true,
                                          /*create_graph=*/true);
  gw[0].sum().backward();
  EXPECT_TRUE(allclose(x2.grad(), ones({3}, DType::f64), 0, 0)) << x2.grad();
}

TEST(InplaceAutograd, OpReadingItsOldSelfThroughAViewGivesTheBasesWindowItsGradient) {
  // AotProgramFuzz, seed 1408235 (our eager differed from PyTorch). v4 is an as_strided of a
  // view v3 reaching past it; written in place by an op whose gradient reads self's old value,
  // eager's CopySlices passes that gradient to the base's window, element 5 included, which v4's
  // own history (through v3) would drop. mul_ with other requiring grad, silu_ and hardswish_
  // were copy_ of the functional op, which routed it through that history. PyTorch 1.13 values.
  auto run = [](const std::function<void(Tensor&, const Tensor&)>& write) {
    Tensor r0 = (arange(120.0).to(DType::f64) / 100.0).view({4, 6, 5}).detach().requires_grad_();
    Tensor a1 = r0 * 1.0;
    unsqueeze_(a1, 1);
    Tensor v3 = a1.select(3, -1);
    a1.add_(a1);
    Tensor v4 = v3.as_strided({2, 1}, {1, 2});
    write(v4, v3);
    (v4.sum() + (a1 * 0.5).sum()).backward();
    return r0.grad().view({-1}).slice(0, 0, 8);
  };
  auto expect = [](std::vector<double> v) { return from_vector(v, {8}).to(DType::f64); };
  EXPECT_TRUE(allclose(run([](Tensor& v4, const Tensor& v3) { v4.mul_(v3.sum()); }),
                       expect({1, 1, 1, 1, 89.1, 88.56, 1, 1}), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(run([](Tensor& v4, const Tensor&) { silu_(v4); }),
                       expect({1, 1, 1, 1, 1.6198721227739803, 1.6497503744946878, 1, 1}), 1e-12,
                       1e-12));
  EXPECT_TRUE(allclose(run([](Tensor& v4, const Tensor&) { hardswish_(v4); }),
                       expect({1, 1, 1, 1, 1.58, 1.6, 1, 1}), 1e-12, 1e-12));
}

TEST(InplaceAutograd, DetachedAliasOfSelfAsOther) {
  // other shares self's storage but does not require grad: it must be read before mul_ writes.
  Tensor x = test_input({3});
  Tensor y = x.clone();
  y.mul_(y.detach());
  y.backward(ones({3}, DType::f64));
  EXPECT_TRUE(allclose(x.grad(), x.detach()));
}

TEST(InplaceAutograd, CopyZeroAndFillGiveTheOldHistoryZeros) {
  // As PyTorch (derivatives.yaml's `self: zeros_like(grad)`, CopyBackwards): the overwritten
  // value's history still runs, with zeros, so x.grad() is defined and zero.
  Tensor x = test_input({3});
  Tensor w = test_input({1}, -1, 1, 2);
  Tensor y = x.clone();
  y.copy_(w);
  y.backward(ones({3}, DType::f64));
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(allclose(x.grad(), zeros({3}, DType::f64)));
  EXPECT_TRUE(allclose(w.grad(), full({1}, 3.0, DType::f64)));
  Tensor z = x.clone();
  z.zero_();
  EXPECT_TRUE(z.requires_grad());
  z.fill_(2.0);
  z.backward(ones({3}, DType::f64));
  EXPECT_TRUE(allclose(x.grad(), zeros({3}, DType::f64)));
}

TEST(InplaceAutograd, BackwardOfAFillThroughAnExpandedViewRaisesAsPyTorch) {
  // PyTorch 1.13: the forward runs; CopySlices' backward copies the gradient into the base's
  // gradient through the view's geometry, a copy that refuses a destination overlapping itself.
  Tensor a = test_input({3});
  Tensor y = a * 2.0;
  y.expand({2, 3}).fill_(7.0);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{7, 7, 7}));
  std::string msg = error_of([&] { (y * 1.0).sum().backward(); });
  EXPECT_TRUE(contains(msg, "more than one element of the written-to tensor")) << msg;
  // Under no_grad nothing is recorded: y's old history runs (PyTorch: a.grad = 7 + 2a).
  Tensor b = f64({1, 2, 3}, {3}).requires_grad_();
  Tensor z = b * 2.0;
  {
    NoGradGuard no_grad;
    z.expand({2, 3}).fill_(7.0);
  }
  (z * b).sum().backward();
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{9, 11, 13}));
}

TEST(InplaceAutograd, BackwardOfAWriteThroughAViewOfADetachedExpandedTensorRaisesAsPyTorch) {
  // d overlaps itself and is its select's base: PyTorch lays d's gradient out in d's geometry.
  Tensor x = f64({0, 1, 2}, {1, 3});
  Tensor w = f64({5, 10, 20}, {3}).requires_grad_();
  Tensor d = x.expand({2, 3}).detach();
  d.select(0, 1).mul_(w);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 10, 40}));
  std::string msg = error_of([&] { (d * 1.0).sum().backward(); });
  EXPECT_TRUE(contains(msg, "more than one element of the written-to tensor")) << msg;
}

TEST(InplaceAutograd, WriteThroughASelectOfAnExpandedViewPassesItsGradient) {
  // A select of an expanded column overlaps nothing, so mul_ may write it, and the gradient
  // reaches the column it wrote (values pinned with PyTorch 1.13).
  Tensor a = f64({1, 2, 3}, {3, 1}).requires_grad_();
  Tensor b = f64({2, 3, 4}, {3}).requires_grad_();
  Tensor y = a * 1.0;
  y.expand({3, 2}).select(1, 1).mul_(b);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{2, 6, 12}));
  (y * f64({1, 10, 100}, {3, 1})).sum().backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{2, 30, 400}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1, 20, 300}));
}

TEST(InplaceAutograd, InPlaceOnViewOfNonLeafUsesCopySlices) {
  Tensor x = test_input({3, 2});
  Tensor y = x.clone();
  y.select(0, 1).mul_(2.0);
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  y.backward(ones({3, 2}, DType::f64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 1, 2, 2, 1, 1}));
}

TEST(InplaceAutograd, BriefExampleWithMulAndSum) {
  Tensor x = test_input({3, 2});
  Tensor y = x * 1.0;
  y.select(0, 1).mul_(2);
  y.sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 1, 2, 2, 1, 1}));
}

TEST(InplaceAutograd, ViewUsedAfterItsInPlaceOp) {
  Tensor x = test_input({3, 2});
  Tensor y = x.clone();
  Tensor v = y.select(0, 1);
  v.mul_(2.0);
  v.mul_(5.0);
  // v's history was rebased onto its base: reading v differentiates through the base.
  Tensor z = v.clone();
  z.backward(ones({2}, DType::f64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 10, 10, 0, 0}));
}

TEST(InplaceAutograd, CopyIntoViewRoutesGradientToSource) {
  Tensor x = test_input({2, 3});
  Tensor w = test_input({3}, -1, 1, 2);
  Tensor y = x.clone();
  y.select(0, 0).copy_(w);
  y.backward(f64({1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, 4, 5, 6}));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

TEST(InplaceAutograd, LeafRequiringGradIsRefused) {
  Tensor x = test_input({3});
  std::string msg = error_of([&] { x.add_(1.0); });
  EXPECT_TRUE(contains(msg, "leaf")) << msg;
  EXPECT_TRUE(contains(msg, "aten.add_.Scalar")) << msg;
  Tensor w = test_input({3}, -1, 1, 2);
  msg = error_of([&] { x.mul_(w); });  // even when other requires grad
  EXPECT_TRUE(contains(msg, "aten.mul_.Tensor")) << msg;
  msg = error_of([&] { x.slice(0, 0, 2).zero_(); });
  EXPECT_TRUE(contains(msg, "view of a leaf")) << msg;
  EXPECT_TRUE(contains(msg, "aten.zero_.default")) << msg;
  {
    NoGradGuard no_grad;  // the sanctioned way to update parameters
    x.add_(1.0);
  }
}

TEST(InplaceAutograd, ModifyingASavedTensorFailsAtBackward) {
  Tensor x = test_input({3});
  Tensor c = f64({1, 2, 3}, {3});
  Tensor y = x.clone();
  y.mul_(c);  // saves c
  c.add_(1.0);
  std::string msg = error_of([&] { y.backward(ones({3}, DType::f64)); });
  EXPECT_TRUE(contains(msg, "modified by an inplace operation")) << msg;
  EXPECT_TRUE(contains(msg, "aten.mul_.Tensor")) << msg;
}

TEST(InplaceAutograd, ModifyingAFactorOfMulFailsAtBackward) {
  Tensor x = test_input({3});
  Tensor y = x.clone();
  Tensor z = y * y;  // mul saves both factors
  y.add_(1.0);
  std::string msg = error_of([&] { z.sum().backward(); });
  EXPECT_TRUE(contains(msg, "modified by an inplace operation")) << msg;
  EXPECT_TRUE(contains(msg, "aten.mul.Tensor")) << msg;
}

// ---- finite differences through in-place ops ----

using Inputs = std::vector<Tensor>;

TEST(InplaceGrad, Gradchecks) {
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        Tensor y = v[0].clone();
        y.add_(v[1], 2.5);
        return y;
      },
      {test_input({2, 3}), test_input({3}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        Tensor y = v[0].clone();
        y.mul_(v[1]);
        y.mul_(-1.5);
        y.add_(0.25);
        return y;
      },
      {test_input({2, 3}), test_input({2, 1}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        Tensor y = v[0].clone();
        y.slice(1, 0, 2).mul_(v[1]);
        y.select(0, 1).copy_(v[1].select(1, 0));
        return y;
      },
      {test_input({3, 3}), test_input({3, 2}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        Tensor y = v[0].clone();
        y.t().select(0, 0).fill_(2.0);
        y.select(0, 0).zero_();
        return y;
      },
      {test_input({3, 3})}));
}

// ---- compiled == eager: functionalization turns these into functional ops ----

using testing::expect_compiled_matches_eager;
using testing::inputs;

TEST(InplaceCompiled, InPlaceOnViewsOfIntermediates) {
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w) {
        Tensor h = x * 2.0;
        h.select(0, 1).mul_(w);  // other requires grad: mul + copy_ into the view
        h.slice(1, 0, 2).add_(1.0);
        h.select(1, 2).copy_(w.slice(0, 0, 2));
        return h;
      },
      inputs(test_input({2, 3}, -1, 1, 21), test_input({3}, -1, 1, 22)));
}

TEST(InplaceCompiled, CopyCastAndClone) {
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w) {
        Tensor h = zeros({2, 3}, DType::f64);
        h.copy_(w.to(DType::f32));
        Tensor c = x.t().clone();
        return h * x + c.t() + x.to(DType::f32).to(DType::f64);
      },
      inputs(test_input({2, 3}, -1, 1, 23), test_input({3}, -1, 1, 24)));
}

}  // namespace
}  // namespace aotgrad
