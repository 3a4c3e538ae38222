// Views: geometry (sizes, strides, storage_offset) against hand-computed values, storage sharing
// and _base, edge cases of slice/select/as_strided, errors, and finite-difference gradients of
// every view and of the functional backward rows.
#include <gtest/gtest.h>

#include <cstdint>
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
using testing::error_of;
using testing::gradcheck;
using testing::iota;
using testing::test_input;
using testing::values;

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

// Runs `f` and returns the message of the std::invalid_argument it throws ("" if none).
void expect_geometry(const Tensor& t, const IntList& sizes, const IntList& strides,
                     int64_t offset) {
  EXPECT_EQ(t.sizes(), sizes);
  EXPECT_EQ(t.strides(), strides);
  EXPECT_EQ(t.storage_offset(), offset);
}

TEST(ViewsGeometry, ViewSharesStorageAndRecordsBase) {
  Tensor x = iota({3, 4});
  Tensor v = x.view({4, 3});
  expect_geometry(v, {4, 3}, {3, 1}, 0);
  EXPECT_TRUE(v.is_view());
  EXPECT_FALSE(x.is_view());
  EXPECT_TRUE(v._base().is_same(x));
  EXPECT_EQ(v.storage(), x.storage());
  // A view of a view records the root, as PyTorch does.
  Tensor w = v.view({12});
  EXPECT_TRUE(w._base().is_same(x));
  expect_geometry(x.view({-1}), {12}, {1}, 0);
  expect_geometry(x.view({2, -1, 2}), {2, 3, 2}, {6, 2, 1}, 0);
}

TEST(ViewsGeometry, WritesThroughViewsAreVisibleInBase) {
  Tensor x = zeros({3, 4});
  Tensor row = x.select(0, 1);
  row.fill_(5.0);
  Tensor col = x.slice(1, 2, 3);
  col.add_(1.0);
  x.t().select(0, 0).copy_(from_vector(std::vector<float>{7, 8, 9}, {3}));
  EXPECT_EQ(values(x), (std::vector<float>{7, 0, 1, 0, 8, 5, 6, 5, 9, 0, 1, 0}));
}

TEST(ViewsGeometry, ViewOfNonContiguousSplitsAndMerges) {
  Tensor x = iota({2, 3, 4}).permute({1, 0, 2});  // sizes [3, 2, 4], strides [4, 12, 1]
  expect_geometry(x, {3, 2, 4}, {4, 12, 1}, 0);
  // Splitting and merging inside the contiguous last dim is a view.
  expect_geometry(x.view({3, 2, 2, 2}), {3, 2, 2, 2}, {4, 12, 2, 1}, 0);
  expect_geometry(x.view({3, 2, 4, 1}), {3, 2, 4, 1}, {4, 12, 1, 1}, 0);
  // Merging dims 0 and 1 would span two chunks: view refuses and names reshape.
  std::string msg = error_of([&] { x.view({6, 4}); });
  EXPECT_NE(msg.find("aten.view.default"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reshape"), std::string::npos) << msg;
}

TEST(ViewsGeometry, ViewErrors) {
  Tensor x = iota({3, 4});
  EXPECT_NE(error_of([&] {
              x.view({5, -1});
            }).find("invalid for input of size 12"),
            std::string::npos);
  EXPECT_NE(error_of([&] { x.view({-1, -1}); }).find("only one dimension"), std::string::npos);
  EXPECT_NE(error_of([&] { x.view({5, 3}); }).find("[5, 3]"), std::string::npos);
  EXPECT_NE(error_of([&] { zeros({0, 3}).view({-1, 0}); }).find("0 elements"), std::string::npos);
  expect_geometry(zeros({0, 3}).view({3, 0}), {3, 0}, {1, 1}, 0);
  expect_geometry(scalar_tensor(2.0, DType::f32).view({1, 1}), {1, 1}, {1, 1}, 0);
}

TEST(ViewsGeometry, ReshapeViewsWhenPossibleElseCopies) {
  Tensor x = iota({3, 4});
  Tensor r = x.reshape({2, 6});
  EXPECT_TRUE(r.is_view());
  EXPECT_EQ(r.storage(), x.storage());
  Tensor xt = x.t();
  Tensor c = xt.reshape({12});
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_FALSE(c.is_view());  // clone + _unsafe_view: a fresh tensor, not an autograd view
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values(c), (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_EQ(xt.reshape({-1, 3}).sizes(), (IntList{4, 3}));
}

TEST(ViewsGeometry, PermuteTransposeT) {
  Tensor x = iota({2, 3, 4});
  expect_geometry(x.permute({2, 0, 1}), {4, 2, 3}, {1, 12, 4}, 0);
  expect_geometry(x.permute({-1, 0, 1}), {4, 2, 3}, {1, 12, 4}, 0);
  expect_geometry(x.transpose(0, -1), {4, 3, 2}, {1, 4, 12}, 0);
  Tensor m = iota({2, 3});
  expect_geometry(m.t(), {3, 2}, {1, 3}, 0);
  EXPECT_EQ(values(m.t()), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  expect_geometry(iota({5}).t(), {5}, {1}, 0);
  EXPECT_NE(error_of([&] { x.t(); }).find("transpose"), std::string::npos);
  EXPECT_NE(error_of([&] { x.permute({0, 0, 1}); }).find("permutation"), std::string::npos);
  EXPECT_NE(error_of([&] { x.permute({0, 1}); }).find("3 dims"), std::string::npos);
  EXPECT_NE(error_of([&] { x.transpose(0, 3); }).find("out of range"), std::string::npos);
}

TEST(ViewsGeometry, Expand) {
  Tensor x = iota({3, 1});
  Tensor e = x.expand({2, 3, 4});
  expect_geometry(e, {2, 3, 4}, {0, 1, 0}, 0);
  EXPECT_EQ(values(e.select(0, 1).select(0, 2)), (std::vector<float>{2, 2, 2, 2}));
  expect_geometry(x.expand({-1, 5}), {3, 5}, {1, 0}, 0);
  expect_geometry(x.expand({1, 3, 1}), {1, 3, 1}, {3, 1, 1}, 0);
  std::string msg = error_of([&] { x.expand({4, 4}); });
  EXPECT_NE(msg.find("must match the existing size (3)"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { x.expand({-1, 3, 1}); }).find("leading"), std::string::npos);
  EXPECT_NE(error_of([&] { x.expand({4}); }).find("greater or equal"), std::string::npos);
  expect_geometry(scalar_tensor(1.0, DType::f32).expand({2, 2}), {2, 2}, {0, 0}, 0);
}

TEST(ViewsGeometry, UnsqueezeSqueeze) {
  Tensor x = iota({2, 3});
  expect_geometry(x.unsqueeze(0), {1, 2, 3}, {6, 3, 1}, 0);
  expect_geometry(x.unsqueeze(1), {2, 1, 3}, {3, 3, 1}, 0);
  expect_geometry(x.unsqueeze(-1), {2, 3, 1}, {3, 1, 1}, 0);
  expect_geometry(x.unsqueeze(1).squeeze(1), {2, 3}, {3, 1}, 0);
  expect_geometry(x.squeeze(0), {2, 3}, {3, 1}, 0);  // size 2: unchanged
  expect_geometry(x.unsqueeze(-1).squeeze(-1), {2, 3}, {3, 1}, 0);
  Tensor s = scalar_tensor(3.0, DType::f32);
  expect_geometry(s.squeeze(0), {}, {}, 0);
  expect_geometry(s.unsqueeze(0), {1}, {1}, 0);
  EXPECT_NE(error_of([&] { x.unsqueeze(3); }).find("out of range"), std::string::npos);
}

TEST(ViewsSlice, ClampsLikePython) {
  Tensor x = iota({6});
  expect_geometry(x.slice(0, 1, 4), {3}, {1}, 1);
  expect_geometry(x.slice(0, 1, kEnd, 2), {3}, {2}, 1);
  EXPECT_EQ(values(x.slice(0, 1, kEnd, 2)), (std::vector<float>{1, 3, 5}));
  EXPECT_EQ(values(x.slice(0, -2, kEnd)), (std::vector<float>{4, 5}));
  EXPECT_EQ(values(x.slice(0, -100, 2)), (std::vector<float>{0, 1}));
  EXPECT_EQ(values(x.slice(0, 0, -1, 3)), (std::vector<float>{0, 3}));
  expect_geometry(x.slice(0, 4, 2), {0}, {1}, 4);
  expect_geometry(x.slice(0, 10, 20), {0}, {1}, 6);
  expect_geometry(x.slice(0, 0, 100), {6}, {1}, 0);
  Tensor m = iota({3, 4});
  expect_geometry(m.slice(1, 1, 3), {3, 2}, {4, 1}, 1);
  expect_geometry(m.slice(-1, 1, 3).slice(0, 1, 3), {2, 2}, {4, 1}, 5);
  EXPECT_EQ(values(m.slice(-1, 1, 3).slice(0, 1, 3)), (std::vector<float>{5, 6, 9, 10}));
  EXPECT_NE(error_of([&] { x.slice(0, 0, 2, 0); }).find("step must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([&] { x.slice(0, 0, 2, -1); }).find("step must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([&] { scalar_tensor(1.0, DType::f32).slice(0, 0, 1); }).find("0-dim"),
            std::string::npos);
}

TEST(ViewsSlice, DefaultStartAndEndThroughTheRow) {
  Tensor x = iota({5});
  const ops::OpDef& def = ops::lookup("aten.slice.Tensor");
  Tensor all = ops::call1(def, {x});
  expect_geometry(all, {5}, {1}, 0);
  Tensor tail = ops::call1(def, {x, int64_t{0}, int64_t{2}});
  EXPECT_EQ(values(tail), (std::vector<float>{2, 3, 4}));
}

TEST(ViewsSelect, NegativeIndexAndErrors) {
  Tensor m = iota({3, 4});
  expect_geometry(m.select(0, 1), {4}, {1}, 4);
  expect_geometry(m.select(1, -1), {3}, {4}, 3);
  EXPECT_EQ(values(m.select(1, -1)), (std::vector<float>{3, 7, 11}));
  EXPECT_EQ(m.select(0, 2).select(0, 3).item<float>(), 11.0f);
  std::string msg = error_of([&] { m.select(0, 3); });
  EXPECT_NE(msg.find("index 3 out of range"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { m.select(1, -5); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { scalar_tensor(1.0, DType::f32).select(0, 0); }).find("0-dim"),
            std::string::npos);
}

TEST(ViewsAsStrided, GeometryOverlapAndBounds) {
  Tensor x = iota({6});
  // Sliding windows of 3 with step 1: rows overlap in memory.
  Tensor w = x.as_strided({4, 3}, {1, 1});
  EXPECT_EQ(values(w), (std::vector<float>{0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 5}));
  EXPECT_TRUE(w._base().is_same(x));
  // storage_offset defaults to the input's own offset and is absolute in the storage.
  Tensor tail = x.slice(0, 2, kEnd);
  expect_geometry(tail.as_strided({2}, {1}), {2}, {1}, 2);
  expect_geometry(tail.as_strided({2}, {1}, 0), {2}, {1}, 0);
  EXPECT_EQ(values(tail.as_strided({2}, {2}, 1)), (std::vector<float>{1, 3}));
  EXPECT_NE(error_of([&] { x.as_strided({4}, {2}); }).find("storage of 7 elements"),
            std::string::npos);
  EXPECT_NE(error_of([&] { x.as_strided({2}, {-1}); }).find("negative strides"), std::string::npos);
  EXPECT_NE(error_of([&] { x.as_strided({2, 2}, {1}); }).find("same length"), std::string::npos);
  expect_geometry(x.as_strided({0, 3}, {100, 100}, 50), {0, 3}, {100, 100}, 50);
}

TEST(ViewsAlias, AliasIsAViewDetachIsNot) {
  Tensor x = test_input({2, 3});
  Tensor a = x.alias();
  EXPECT_TRUE(a.is_view());
  EXPECT_TRUE(a.requires_grad());
  EXPECT_EQ(a.storage(), x.storage());
  Tensor d = x.detach();
  EXPECT_FALSE(d.is_view());
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.storage(), x.storage());
  // The detached alias shares the version counter, and may be written in place.
  uint64_t v = x.version();
  d.mul_(2.0);
  EXPECT_EQ(x.version(), v + 1);
  EXPECT_EQ(x.to_vector<double>(), d.to_vector<double>());
}

TEST(ViewsAlias, ContiguousReturnsSelfWhenContiguous) {
  Tensor x = iota({3, 4});
  EXPECT_TRUE(x.contiguous().is_same(x));
  Tensor s = x.slice(0, 1, 2);
  EXPECT_TRUE(s.contiguous().is_same(s));
  Tensor c = x.t().contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_EQ(values(c), values(x.t()));
}

TEST(ViewsNoGrad, ViewsOfTensorsWithoutGradRecordNothing) {
  Tensor x = iota({3, 4});
  Tensor v = x.view({12}).slice(0, 2, 8).unsqueeze(0);
  EXPECT_FALSE(v.requires_grad());
  EXPECT_TRUE(v.is_leaf());
  Tensor g = test_input({3, 4});
  {
    // As in PyTorch, a view made under no_grad requires grad when its base does; it is a leaf,
    // and no gradient flows through it to the base.
    NoGradGuard no_grad;
    EXPECT_TRUE(g.t().requires_grad());
    EXPECT_TRUE(g.t().is_leaf());
    EXPECT_FALSE((g * 2.0).requires_grad());
  }
  EXPECT_TRUE(g.t().requires_grad());
}

// ---- gradients ----

using Inputs = std::vector<Tensor>;

// A leaf requiring grad with a non-contiguous layout: the transpose of a [cols, rows] buffer.
Tensor transposed_input(int64_t rows, int64_t cols, uint64_t seed = 3) {
  Tensor t = test_input({cols, rows}, -1, 1, seed, false).t();
  t.requires_grad_();
  return t;
}

TEST(ViewsGrad, ViewAndReshape) {
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].view({4, 3}); }, {test_input({3, 4})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return v[0].view({2, -1, 2});
      },
      {test_input({3, 4})}));
  // Reshape of a transposed input copies (clone + _unsafe_view); of a contiguous one it views.
  EXPECT_TRUE(
      gradcheck([](const Inputs& v) { return v[0].reshape({12}); }, {transposed_input(3, 4)}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return v[0].reshape({6, 2});
      },
      {test_input({3, 4})}));
}

TEST(ViewsGrad, PermuteTransposeT) {
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return v[0].permute({2, 0, 1});
      },
      {test_input({2, 3, 4})}));
  EXPECT_TRUE(
      gradcheck([](const Inputs& v) { return v[0].transpose(1, -1); }, {test_input({2, 3, 4})}));
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].t(); }, {test_input({2, 5})}));
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].t(); }, {transposed_input(3, 2)}));
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].t(); }, {test_input({4})}));
}

TEST(ViewsGrad, Expand) {
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return v[0].expand({2, 3, 4});
      },
      {test_input({3, 1})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return v[0].expand({-1, 3});
      },
      {test_input({4, 1})}));
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].expand({2, 3}); }, {test_input({2, 3})}));
}

TEST(ViewsGrad, UnsqueezeSqueeze) {
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].unsqueeze(1); }, {test_input({2, 3})}));
  EXPECT_TRUE(
      gradcheck([](const Inputs& v) { return v[0].unsqueeze(-1); }, {transposed_input(2, 3)}));
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].squeeze(1); }, {test_input({2, 1, 3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].squeeze(0); }, {test_input({2, 3})}));
}

TEST(ViewsGrad, SliceAndSelect) {
  EXPECT_TRUE(
      gradcheck([](const Inputs& v) { return v[0].slice(1, 1, kEnd, 2); }, {test_input({3, 6})}));
  EXPECT_TRUE(
      gradcheck([](const Inputs& v) { return v[0].slice(0, -2, kEnd); }, {transposed_input(4, 3)}));
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].select(1, -1); }, {test_input({3, 4})}));
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].select(0, 2).select(0, 1); },
                        {transposed_input(4, 3)}));
}

TEST(ViewsGrad, AsStrided) {
  // A strided window that skips elements: partial, non-overlapping.
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return v[0].as_strided({2, 2}, {4, 2}, 1);
      },
      {test_input({3, 4})}));
  // Overlapping sliding windows: each input element receives the sum of its window gradients.
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return v[0].as_strided({4, 3}, {1, 1});
      },
      {test_input({6})}));
  // On a non-contiguous input, the strides address the shared storage.
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].as_strided({3}, {5}); },
                        {transposed_input(3, 4)}));
}

// as_strided's VJP reads the input's storage offset from the metadata eager autograd keeps.
TEST(ViewsGrad, AsStridedOfAnOffsetInput) {
  Tensor tail = test_input({6}, -1, 1, 5, false).slice(0, 2, kEnd);  // storage offset 2
  tail.requires_grad_();
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].as_strided({2}, {1}, 3); }, {tail}));
}

TEST(ViewsGrad, AsStridedOverlapValues) {
  Tensor x = test_input({5});
  Tensor w = x.as_strided({3, 3}, {1, 1});  // element k is read min(k, 2, 4-k) + 1 times
  w.backward(ones({3, 3}, DType::f64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 2, 3, 2, 1}));
}

TEST(ViewsGrad, AliasAndDetach) {
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].alias(); }, {test_input({2, 3})}));
  Tensor x = test_input({2, 3});
  Tensor y = x.detach();
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
}

TEST(ViewsGrad, ChainOfViews) {
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return v[0].transpose(0, 1).slice(0, 1, 3).unsqueeze(0).expand({2, 2, 3}).select(2, 1);
      },
      {test_input({3, 4})}));
}

// ---- the functional backward rows (used by the VJPs above, differentiable themselves so the
// backward graphs they appear in can be differentiated again under tracing) ----

Tensor call(std::string_view op, ops::OpArgs args) {
  return ops::call1(ops::lookup(op), std::move(args));
}

TEST(ViewsBackwardOps, SelectBackwardValues) {
  Tensor g = from_vector(std::vector<float>{1, 2, 3}, {3});
  Tensor r = call("aten.select_backward.default", {g, IntList{3, 3}, int64_t{1}, int64_t{-1}});
  EXPECT_EQ(values(r), (std::vector<float>{0, 0, 1, 0, 0, 2, 0, 0, 3}));
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_NE(error_of([&] {
              call("aten.select_backward.default", {g, IntList{3, 4}, int64_t{0}, int64_t{0}});
            }).find("expected [4]"),
            std::string::npos);
}

TEST(ViewsBackwardOps, SliceBackwardValues) {
  Tensor g = from_vector(std::vector<float>{1, 2}, {2});
  Tensor r = call("aten.slice_backward.default",
                  {g, IntList{5}, int64_t{0}, int64_t{1}, int64_t{kEnd}, int64_t{2}});
  EXPECT_EQ(values(r), (std::vector<float>{0, 1, 0, 2, 0}));
}

TEST(ViewsBackwardOps, AsStridedScatterValues) {
  Tensor self = iota({2, 3});
  Tensor src = from_vector(std::vector<float>{10, 20}, {2});
  Tensor r =
      call("aten.as_strided_scatter.default", {self, src, IntList{2}, IntList{3}, int64_t{1}});
  EXPECT_EQ(values(r), (std::vector<float>{0, 10, 2, 3, 20, 5}));
  EXPECT_NE(r.storage(), self.storage());
  // Overlapping window: positions written twice receive the sum.
  Tensor o = call("aten.as_strided_scatter.default",
                  {zeros({4}), ones({2, 2}), IntList{2, 2}, IntList{1, 1}, int64_t{0}});
  EXPECT_EQ(values(o), (std::vector<float>{1, 2, 1, 0}));
  // A non-contiguous self is read in logical order; the window addresses its contiguous copy.
  Tensor t = call("aten.as_strided_scatter.default",
                  {iota({3, 2}).t(), from_vector(std::vector<float>{-1}, {1}), IntList{1},
                   IntList{1}, int64_t{1}});
  EXPECT_EQ(values(t), (std::vector<float>{0, -1, 4, 1, 3, 5}));
  EXPECT_NE(
      error_of([&] {
        call("aten.as_strided_scatter.default", {self, src, IntList{2}, IntList{5}, int64_t{1}});
      }).find("reaches past"),
      std::string::npos);
}

TEST(ViewsBackwardOps, Gradients) {
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return call("aten.select_backward.default", {v[0], IntList{3, 4}, int64_t{0}, int64_t{1}});
      },
      {test_input({4})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return call("aten.slice_backward.default",
                    {v[0], IntList{3, 5}, int64_t{1}, int64_t{1}, int64_t{5}, int64_t{2}});
      },
      {test_input({3, 2})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return call("aten.as_strided_scatter.default",
                    {v[0], v[1], IntList{2, 2}, IntList{3, 1}, int64_t{1}});
      },
      {test_input({3, 3}), test_input({2, 2}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return call("aten.as_strided_scatter.default",
                    {v[0], v[1], IntList{2, 2}, IntList{1, 1}, int64_t{0}});
      },
      {test_input({4}), test_input({2, 2}, -1, 1, 2)}));
}

// ---- compiled == eager (the second oracle): the metas must describe what the kernels return ----

using testing::expect_compiled_matches_eager;
using testing::inputs;

TEST(ViewsCompiled, AsStridedReshapeCopyAndAlias) {
  expect_compiled_matches_eager(
      [](const Tensor& x) {
        Tensor h = x * 2.0;
        Tensor a = h.as_strided({3, 2}, {1, 1}, 1);  // overlapping windows
        Tensor b = h.t().reshape({-1});              // clone + _unsafe_view
        Tensor c = h.slice(1, 1, kEnd, 2).select(0, -1).alias();
        return a.sum() + b.sum(0) * c.sum();
      },
      inputs(test_input({2, 3}, -1, 1, 11)));
}

TEST(ViewsCompiled, ExpandSqueezeContiguousView) {
  expect_compiled_matches_eager(
      [](const Tensor& x) {
        return x.unsqueeze(0)
            .expand({4, -1, -1})
            .squeeze(1)
            .transpose(0, 1)
            .contiguous()
            .view({-1});
      },
      inputs(test_input({1, 3}, -1, 1, 12)));
}

}  // namespace
}  // namespace aotgrad
