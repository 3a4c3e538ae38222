// Which inputs a node saves: as PyTorch's generated code, an input is saved only when a gradient
// that reads it will be computed (SaveMask::read_by, should_compute_output), so writing an
// unsaved input in place before backward is no error. Each expectation is PyTorch 1.13's, stated
// in the comment.
#include <gtest/gtest.h>

#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::allclose;

namespace {

Tensor vec(std::initializer_list<double> v) {
  return ag::from_vector(std::vector<double>(v), {static_cast<int64_t>(v.size())});
}

Tensor mat(std::initializer_list<double> v, const ag::IntList& sizes) {
  return ag::from_vector(std::vector<double>(v), sizes);
}

// Runs `f`, expecting the saved-value version error.
template <typename F>
::testing::AssertionResult raises_version_error(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("modified by an inplace operation") != std::string::npos)
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "another error: " << e.what();
  }
  return ::testing::AssertionFailure() << "no error";
}

}  // namespace

// torch 1.13: x = [0.1, 0.2] requires grad, w = [3, 4]; y = (x * w).sum(); x.add_(1) under
// no_grad; y.backward() runs (MulBackward0 saved x only for w's gradient), x.grad = [3, 4].
TEST(SavedInputsForGradients, MulKeepsSelfOnlyForOthersGradient) {
  Tensor x = vec({0.1, 0.2}).requires_grad_();
  Tensor w = vec({3.0, 4.0});
  Tensor y = (x * w).sum();
  {
    ag::NoGradGuard no_grad;
    x.add_(1.0);
  }
  y.backward();
  EXPECT_TRUE(allclose(x.grad(), vec({3.0, 4.0}), 0, 0));
}

// torch 1.13: the same with w requiring grad and x not: writing w is fine, w.grad = x = [0.1, 0.2]
// (the value mul saved); writing x raises.
TEST(SavedInputsForGradients, MulKeepsOtherOnlyForSelfsGradient) {
  Tensor x = vec({0.1, 0.2});
  Tensor w = vec({3.0, 4.0}).requires_grad_();
  Tensor y = (x * w).sum();
  {
    ag::NoGradGuard no_grad;
    w.add_(1.0);
  }
  y.backward();
  EXPECT_TRUE(allclose(w.grad(), vec({0.1, 0.2}), 0, 0));

  Tensor w2 = vec({3.0, 4.0}).requires_grad_();
  Tensor y2 = (x * w2).sum();
  x.add_(1.0);
  EXPECT_TRUE(raises_version_error([&] { y2.backward(); }));
}

// torch 1.13: x / w with only x requiring grad: writing x is fine, x.grad = 1 / w = [1/3, 1/4];
// writing w raises (other is read by both gradients). With only w requiring grad, writing x
// raises (self is read by other's gradient).
TEST(SavedInputsForGradients, DivKeepsSelfOnlyForOthersGradientAndOtherAlways) {
  Tensor x = vec({0.1, 0.2}).requires_grad_();
  Tensor w = vec({3.0, 4.0});
  Tensor y = (x / w).sum();
  {
    ag::NoGradGuard no_grad;
    x.add_(1.0);
  }
  y.backward();
  EXPECT_TRUE(allclose(x.grad(), vec({1.0 / 3.0, 0.25}), 1e-15, 1e-15));

  Tensor x2 = vec({0.1, 0.2}).requires_grad_();
  Tensor w2 = vec({3.0, 4.0});
  Tensor y2 = (x2 / w2).sum();
  w2.add_(1.0);
  EXPECT_TRUE(raises_version_error([&] { y2.backward(); }));

  Tensor x3 = vec({0.1, 0.2});
  Tensor w3 = vec({3.0, 4.0}).requires_grad_();
  Tensor y3 = (x3 / w3).sum();
  x3.add_(1.0);
  EXPECT_TRUE(raises_version_error([&] { y3.backward(); }));
}

// torch 1.13: mm(x, W) with x requiring grad, x.mul_(2) under no_grad, then backward:
// x.grad = ones @ W^T = [[3, 7], [3, 7]].
TEST(SavedInputsForGradients, MmKeepsEachMatrixOnlyForTheOthersGradient) {
  Tensor x = mat({0.1, 0.2, 0.3, 0.4}, {2, 2}).requires_grad_();
  Tensor W = mat({1.0, 2.0, 3.0, 4.0}, {2, 2});
  Tensor y = ag::mm(x, W).sum();
  {
    ag::NoGradGuard no_grad;
    x.mul_(2.0);
  }
  y.backward();
  EXPECT_TRUE(allclose(x.grad(), mat({3.0, 7.0, 3.0, 7.0}, {2, 2}), 0, 0));
}

// torch 1.13: bmm(x, W) with W requiring grad and x written afterwards raises (x is read by W's
// gradient); with x requiring grad, writing x is fine.
TEST(SavedInputsForGradients, BmmKeepsEachBatchOnlyForTheOthersGradient) {
  Tensor x = mat({0.1, 0.2, 0.3, 0.4}, {1, 2, 2});
  Tensor W = mat({1.0, 2.0, 3.0, 4.0}, {1, 2, 2}).requires_grad_();
  Tensor y = ag::bmm(x, W).sum();
  x.mul_(2.0);
  EXPECT_TRUE(raises_version_error([&] { y.backward(); }));

  Tensor x2 = mat({0.1, 0.2, 0.3, 0.4}, {1, 2, 2}).requires_grad_();
  Tensor W2 = mat({1.0, 2.0, 3.0, 4.0}, {1, 2, 2});
  Tensor y2 = ag::bmm(x2, W2).sum();
  {
    ag::NoGradGuard no_grad;
    x2.mul_(2.0);
  }
  y2.backward();
  EXPECT_TRUE(allclose(x2.grad(), mat({3.0, 7.0, 3.0, 7.0}, {1, 2, 2}), 0, 0));
}

// torch 1.13: linear(x, W, b) (AddmmBackward0) with only b requiring grad saves neither matrix:
// writing x and W is fine, and so is a second backward without retain_graph (nothing to free);
// b.grad = [2, 2] twice = [4, 4].
TEST(SavedInputsForGradients, AddmmWithOnlyTheBiasRequiringGradSavesNeitherMatrix) {
  Tensor x = mat({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {2, 3});
  Tensor W = ag::ones({2, 3}, ag::DType::f64);
  Tensor b = vec({0.5, -0.5}).requires_grad_();
  Tensor y = ag::linear(x, W, b);
  ASSERT_EQ(y.grad_fn()->name(), "aten.addmm.default");
  Tensor s = y.sum();
  x.add_(1.0);
  W.add_(1.0);
  s.backward();
  s.backward();
  EXPECT_TRUE(allclose(b.grad(), vec({4.0, 4.0}), 0, 0));
}

// torch 1.13: index_add(s, 0, idx, src) and scatter_add(s, 0, idx, src) with only s requiring
// grad: idx.add_(1) afterwards is fine (idx is read by src's gradient only), s0.grad =
// 2 * [1, 2, 3, 4]; with src requiring grad it raises.
TEST(SavedInputsForGradients, IndexAddAndScatterAddKeepTheIndexOnlyForTheSourcesGradient) {
  for (bool scatter : {false, true}) {
    SCOPED_TRACE(scatter ? "scatter_add" : "index_add");
    auto op = [&](const Tensor& s, const Tensor& idx, const Tensor& src) {
      return scatter ? ag::scatter_add(s, 0, idx, src) : ag::index_add(s, 0, idx, src);
    };
    Tensor s0 = vec({1.0, 2.0, 3.0, 4.0}).requires_grad_();
    Tensor idx = ag::from_vector(std::vector<int64_t>{0, 2}, {2});
    Tensor y = (op(s0 * 2.0, idx, vec({10.0, 20.0})) * vec({1.0, 2.0, 3.0, 4.0})).sum();
    idx.add_(1);
    y.backward();
    EXPECT_TRUE(allclose(s0.grad(), vec({2.0, 4.0, 6.0, 8.0}), 0, 0));

    Tensor src = vec({10.0, 20.0}).requires_grad_();
    Tensor idx2 = ag::from_vector(std::vector<int64_t>{0, 2}, {2});
    Tensor y2 = op(vec({1.0, 2.0, 3.0, 4.0}), idx2, src).sum();
    idx2.add_(1);
    EXPECT_TRUE(raises_version_error([&] { y2.backward(); }));
  }
}

// A VJP never reads an input it did not save: under create_graph, x * x * w differentiated with
// respect to x builds its gradient from what was saved only (2 * x * w = [0.6, 1.6], torch 1.13),
// and w, saved for x's gradient, still raises when written before backward.
TEST(SavedInputsForGradients, DoubleBackwardReadsOnlySavedInputs) {
  Tensor x = vec({0.1, 0.2}).requires_grad_();
  Tensor w = vec({3.0, 4.0});
  Tensor y = (x * x * w).sum();
  Tensor g = ag::autograd::grad({y}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  EXPECT_TRUE(allclose(g.detach(), vec({0.6, 1.6}), 1e-15, 1e-15));
  g.sum().backward();
  EXPECT_TRUE(allclose(x.grad(), vec({6.0, 8.0}), 1e-15, 1e-15));
  w.add_(1.0);
  EXPECT_TRUE(raises_version_error([&] { y.backward(); }));
}

// The op table's read_by masks name only saved inputs, and only Tensor arguments as readers.
TEST(SavedInputsForGradients, ReadByMasksNameSavedInputsAndTensorArguments) {
  for (const ag::ops::OpDef* op : ag::ops::all_ops()) {
    const auto& read_by = op->saves.read_by;
    for (size_t i = 0; i < read_by.size(); ++i) {
      if (read_by[i] == 0) continue;
      SCOPED_TRACE(std::string(op->name) + " input " + std::to_string(i));
      EXPECT_TRUE(op->saves.inputs & ag::ops::bit(static_cast<unsigned>(i)));
      const auto& args = op->parsed_schema().args;
      for (size_t j = 0; j < 32; ++j)
        if (read_by[i] & ag::ops::bit(static_cast<unsigned>(j))) {
          ASSERT_LT(j, args.size());
          EXPECT_TRUE(args[j].type == ag::ops::ArgType::tensor ||
                      args[j].type == ag::ops::ArgType::tensor_list);
        }
    }
  }
}
