// Views made in special ways (issue 10, items 10 and 11), eagerly, against PyTorch 1.13: a view
// made under no_grad of a tensor that requires grad requires grad itself (a leaf, through which no
// gradient flows), and neither it nor a piece of split / chunk / unbind may be written in place
// while autograd tracks it, nor used by autograd once its storage was written. The texts are
// PyTorch's, word for word (torch/csrc/autograd/variable.cpp, handle_view_on_rebase).
#include <gtest/gtest.h>

#include <string>

#include "aotgrad/aotgrad.h"
#include "aotgrad/inplace_view.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::test_input;

namespace {

const std::string kMultiSuffix =
    " This view is the output of a function that returns multiple views. Such functions do not "
    "allow the output views to be modified inplace. You should replace the inplace operation by "
    "an out-of-place one.";
const std::string kNoGradSuffix =
    " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block (if "
    "you don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked).";

// The message of the std::runtime_error `f` throws ("" when it does not throw one).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

Tensor nonleaf(const ag::IntList& sizes, uint64_t seed = 1) {
  return test_input(sizes, -1, 1, seed) * 2.0;
}

}  // namespace

// ---- pieces of split / chunk / unbind ----

TEST(MultiOutputViewEager, InPlaceOnAPieceRaisesPyTorchsError) {
  Tensor y = nonleaf({3, 4});
  EXPECT_EQ(error_of([&] { ag::unbind(y, 0)[1].mul_(3.0); }),
            "Output 1 of UnbindBackward0 is a view and is being modified inplace." + kMultiSuffix);
  EXPECT_EQ(error_of([&] { ag::split(y, 2, 1)[1].add_(3.0); }),
            "Output 1 of SplitBackward0 is a view and is being modified inplace." + kMultiSuffix);
  EXPECT_EQ(error_of([&] {
              ag::split_with_sizes(y, {1, 3}, 1)[0].zero_();
            }),
            "Output 0 of SplitWithSizesBackward0 is a view and is being modified inplace." +
                kMultiSuffix);
  // chunk is its own row here (PyTorch decomposes it into split: SplitBackward0).
  EXPECT_EQ(error_of([&] { ag::chunk(y, 2, 1)[0].fill_(1.0); }),
            "Output 0 of ChunkBackward0 is a view and is being modified inplace." + kMultiSuffix);
  // A leaf's pieces: this check comes before the leaf check, as in PyTorch.
  Tensor x = test_input({3, 4});
  EXPECT_EQ(error_of([&] { ag::unbind(x, 0)[2].copy_(ag::zeros({4}, ag::DType::f64)); }),
            "Output 2 of UnbindBackward0 is a view and is being modified inplace." + kMultiSuffix);
  // Metadata-only in-place ops count too.
  EXPECT_EQ(error_of([&] {
              Tensor p = ag::unbind(y, 0)[0];
              ag::unsqueeze_(p, 0);
            }),
            "Output 0 of UnbindBackward0 is a view and is being modified inplace." + kMultiSuffix);
  EXPECT_EQ(y.version(), 0u) << "nothing was written";
}

TEST(MultiOutputViewEager, ViewsOfAPieceInheritTheRule) {
  Tensor y = nonleaf({3, 4});
  EXPECT_EQ(error_of([&] {
              ag::unbind(y, 0)[1].view({2, 2}).mul_(3.0);
            }),
            "Output 0 of ViewBackward0 is a view and is being modified inplace." + kMultiSuffix);
  EXPECT_EQ(error_of([&] { ag::split(y, 2, 1)[0].t().mul_(2.0); }),
            "Output 0 of TBackward0 is a view and is being modified inplace." + kMultiSuffix);
}

TEST(MultiOutputViewEager, AllowedWithoutAutograd) {
  // The base needs no grad, or grad mode is off: nothing to record, nothing to forbid.
  Tensor x = test_input({3, 4}, -1, 1, 2, false);
  ag::unbind(x, 0)[1].mul_(3.0);
  Tensor y = nonleaf({3, 4});
  Tensor before = y.clone();
  {
    ag::NoGradGuard no_grad;
    ag::unbind(y, 0)[1].mul_(3.0);
  }
  EXPECT_TRUE(allclose(ag::select(y, 0, 1), ag::select(before, 0, 1) * 3.0, 0, 0));
  // A detached piece is a plain tensor.
  ag::unbind(y, 0)[0].detach().mul_(2.0);
}

TEST(MultiOutputViewEager, PieceWithoutHistoryWrittenWithAGradOperand) {
  // PyTorch names no node then, whatever the view's kind.
  Tensor x = test_input({3, 4}, -1, 1, 3, false);
  Tensor w = test_input({4}, -1, 1, 4);
  EXPECT_EQ(error_of([&] { ag::unbind(x, 0)[0].mul_(w); }),
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled." +
                kMultiSuffix);
}

TEST(MultiOutputViewEager, UsingAPieceAfterItsBaseWasWrittenRaises) {
  const std::string indirect =
      "Output 1 of UnbindBackward0 is a view and its base or another view of its base has been "
      "modified inplace." +
      kMultiSuffix;
  {
    Tensor y = nonleaf({3, 4});
    std::vector<Tensor> p = ag::unbind(y, 0);
    y.mul_(2.0);
    EXPECT_EQ(error_of([&] { p[1].sum().backward(); }), indirect);
  }
  {  // written under no_grad, through a detached alias of another piece
    Tensor y = nonleaf({3, 4});
    std::vector<Tensor> p = ag::unbind(y, 0);
    {
      ag::NoGradGuard no_grad;
      p[0].detach().mul_(2.0);
    }
    EXPECT_EQ(error_of([&] { (p[1] * 2.0).sum(); }), indirect);
  }
  {  // used before the write: the recorded history stays valid
    Tensor y = nonleaf({3, 4});
    std::vector<Tensor> p = ag::unbind(y, 0);
    Tensor z = p[0] * 2.0;
    y.mul_(2.0);
    z.sum().backward();
    // no_grad use of a written piece is fine too
    ag::NoGradGuard no_grad;
    EXPECT_FALSE((p[0] * 2.0).requires_grad());
  }
}

// ---- views made under no_grad ----

TEST(NoGradViewEager, RequiresGradFollowsTheBase) {
  Tensor x = test_input({3, 4});
  Tensor y = x * 2.0;
  Tensor v, w, s;
  {
    ag::NoGradGuard no_grad;
    v = x.view({-1});
    w = y.view({-1});
    s = y.slice(0, 1, 3);
    EXPECT_FALSE((y * 2.0).requires_grad());
    EXPECT_FALSE(y.detach().requires_grad());
  }
  for (const Tensor& t : {v, w, s}) {
    EXPECT_TRUE(t.requires_grad());
    EXPECT_TRUE(t.is_leaf());
    EXPECT_EQ(t.grad_fn(), nullptr);
    EXPECT_TRUE(t.is_view());
  }
  EXPECT_TRUE(v._base().is_same(x));
  // requires_grad_(false) clears the view's own flag only: the base still requires grad.
  w.requires_grad_(false);
  EXPECT_TRUE(w.requires_grad());
}

TEST(NoGradViewEager, OpsOnItRequireGradButNoGradientReachesTheBase) {
  Tensor x = test_input({3});
  Tensor v;
  {
    ag::NoGradGuard no_grad;
    v = x.view({-1});
  }
  Tensor out = (v * 2.0).sum();
  EXPECT_TRUE(out.requires_grad());
  EXPECT_NE(out.grad_fn(), nullptr);
  out.backward();
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(v.grad().defined());
  // Its own flag turned on: a leaf of its own that accumulates (PyTorch's grad accumulator).
  v.requires_grad_();
  (v * 3.0).sum().backward();
  EXPECT_TRUE(allclose(v.grad(), ag::full({3}, 3.0, ag::DType::f64), 0, 0));
  EXPECT_FALSE(x.grad().defined());
}

TEST(NoGradViewEager, InPlaceWithGradModeRaises) {
  Tensor y = nonleaf({3});
  Tensor v;
  {
    ag::NoGradGuard no_grad;
    v = y.slice(0, 0, 2);
  }
  EXPECT_EQ(error_of([&] { v.mul_(2.0); }),
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled." +
                kNoGradSuffix);
  // The base is written (with or without grad): using the view with grad mode raises.
  {
    ag::NoGradGuard no_grad;
    y.mul_(2.0);
    EXPECT_FALSE((v * 2.0).requires_grad());  // fine under no_grad
  }
  EXPECT_EQ(error_of([&] { (v * 1.0).sum(); }),
            "A view was created in no_grad mode and its base or another view of its base has been "
            "modified inplace with grad mode enabled." +
                kNoGradSuffix);
  // A base that needs no grad: nothing is tracked.
  Tensor plain = test_input({3}, -1, 1, 5, false);
  Tensor pv;
  {
    ag::NoGradGuard no_grad;
    pv = plain.slice(0, 0, 2);
  }
  pv.mul_(2.0);
  EXPECT_FALSE(pv.requires_grad());
}

TEST(NoGradViewEager, ViewWithHistoryOfANoGradViewNamesItsNode) {
  // PyTorch 1.13 trips an internal assert here; later versions give this text.
  Tensor y = nonleaf({3, 4});
  Tensor v;
  {
    ag::NoGradGuard no_grad;
    v = ag::unbind(y, 0)[0];
  }
  Tensor q = v.view({2, 2});
  EXPECT_TRUE(q.requires_grad());
  EXPECT_EQ(error_of([&] { q.mul_(2.0); }),
            "Output 0 of ViewBackward0 is a view of a view which was created in no_grad mode and "
            "is being modified inplace with grad mode enabled." +
                kNoGradSuffix);
}

// ---- requires_grad_ and the engine ----

TEST(RequiresGradEager, NonLeafRules) {
  Tensor y = nonleaf({3});
  EXPECT_NO_THROW(y.requires_grad_(true));  // already requires grad: nothing to change
  try {
    y.requires_grad_(false);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "you can only change requires_grad flags of leaf variables. If you want to use a "
              "computed variable in a subgraph that doesn't require differentiation use "
              "var_no_grad = var.detach().");
  }
}

TEST(RequiresGradEager, LeafTurnedOffAfterUseGetsNoGradient) {
  // PyTorch's AccumulateGrad skips a leaf that no longer requires grad.
  Tensor x = test_input({3});
  Tensor y = (x * 2.0).sum();
  x.requires_grad_(false);
  y.backward();
  EXPECT_FALSE(x.grad().defined());
}

TEST(RequiresGradEager, GradRunsOnlyTheNodesOnAPathToItsInputs) {
  // As PyTorch's engine: history upstream of grad()'s inputs is not run, nor freed.
  Tensor a = test_input({3});
  Tensor h = a.sin();
  Tensor y = (h * h).sum();
  std::vector<Tensor> g = ag::autograd::grad({y}, {h});
  EXPECT_TRUE(allclose(g[0], h.detach() * 2.0, 1e-12, 1e-12));
  // sin's node did not run: a backward to `a` still works without retain_graph.
  Tensor z = h.sum();
  z.backward();
  EXPECT_TRUE(allclose(a.grad(), a.detach().cos(), 1e-12, 1e-12));
}

TEST(RequiresGradEager, NodesThatSaveNothingCanRunTwice) {
  // add and sum keep no data: a second backward without retain_graph runs (PyTorch does too).
  Tensor x = test_input({3});
  Tensor y = (x + 1.0).sum();
  ag::autograd::grad({y}, {x});
  y.backward();
  EXPECT_TRUE(allclose(x.grad(), ag::ones({3}, ag::DType::f64), 0, 0));
  // sin saves its input: the second run raises.
  Tensor z = x.sin().sum();
  ag::autograd::grad({z}, {x});
  EXPECT_NE(error_of([&] { z.backward(); }).find("backward through the graph a second time"),
            std::string::npos);
}
