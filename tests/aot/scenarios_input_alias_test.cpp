// Scenarios (issue 4, reference §6 "Aliasing between inputs" and "Duplicate inputs"): one tensor
// passed twice, inputs that are overlapping views of one base (a synthetic base when one is
// mutated), and non-overlapping views of one storage (false aliasing).
// Every scenario runs eager and compiled under every partitioner configuration (scenario.h).
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "testing/scenario.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::leaf;
using ag::testing::run_scenario;
using ag::testing::ScenarioInputs;
using ag::testing::TensorList;

// ---- duplicated inputs ----

TEST(ScenarioInputAlias, DuplicateInputNoMutation) {
  run_scenario(
      [] {
        Tensor x = leaf({3}, 1);
        return TensorList{x, x};
      },
      [](const TensorList& a) { return a[0] * a[1] + a[0]; });
}

TEST(ScenarioInputAlias, DuplicateInputMutatedInference) {
  run_scenario(
      [] {
        Tensor x = leaf({3}, 2, false);
        return TensorList{x, x};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.add_(1.0);
        return a[0] * a[1];
      });
}

TEST(ScenarioInputAlias, DuplicateNonLeafMutatedTraining) {
  run_scenario(
      [] {
        Tensor l = leaf({3}, 3);
        Tensor x = l * 2.0;
        return ScenarioInputs{{x, x}, {l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return (x * a[1]).sum();
      });
}

TEST(ScenarioInputAlias, DuplicateMutatedThroughOneReturnedThroughOther) {
  // Reference §6 #60.
  run_scenario(
      [] {
        Tensor x = leaf({2, 2}, 4, false);
        return TensorList{x, leaf({2, 2}, 5), x};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(3.0);
        return TensorList{a[2], a[1] * a[2]};
      });
}

TEST(ScenarioInputAlias, DuplicateAmongOtherInputsWithOtherMutated) {
  run_scenario(
      [] {
        Tensor x = leaf({3}, 6);
        return TensorList{x, leaf({3}, 7, false), x};
      },
      [](const TensorList& a) {
        Tensor y = a[1];
        y.add_(a[0]);
        return (a[0] * a[2] * y).sum();
      });
}

TEST(ScenarioInputAlias, SameViewPassedTwiceAndMutated) {
  // Reference §6 #46.
  run_scenario(
      [] {
        Tensor base = leaf({4}, 8, false);
        Tensor v = base.slice(0, 1, 3);
        return ScenarioInputs{{v, v}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return a[1] + 1.0;
      });
}

// ---- overlapping views of one base ----

TEST(ScenarioInputAlias, OverlappingSlicesOneMutated) {
  run_scenario(
      [] {
        Tensor base = leaf({4, 3}, 1, false);
        return ScenarioInputs{{base.slice(0, 0, 3), base.slice(0, 1, 4)}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return a[1].sum(std::vector<int64_t>{1});
      });
}

TEST(ScenarioInputAlias, OverlappingSlicesOfNonLeafOneMutatedTraining) {
  run_scenario(
      [] {
        Tensor l = leaf({4, 3}, 2);
        Tensor base = l * 1.0;
        return ScenarioInputs{{base.slice(0, 0, 3), base.slice(0, 1, 4)}, {base, l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return a[1].exp();
      });
}

TEST(ScenarioInputAlias, BaseAndItsViewBothInputsViewMutated) {
  // Reference §6 #47: one alias is the base itself.
  run_scenario(
      [] {
        Tensor base = leaf({3, 2}, 3, false);
        return TensorList{base, base.select(1, 0), leaf({3, 2}, 4)};
      },
      [](const TensorList& a) {
        Tensor v = a[1];
        v.add_(5.0);
        return a[0] * a[2];
      });
}

TEST(ScenarioInputAlias, BaseMutatedViewInputRead) {
  run_scenario(
      [] {
        Tensor l = leaf({2, 3}, 5);
        Tensor base = l * 2.0;
        return ScenarioInputs{{base.t(), base}, {l}};
      },
      [](const TensorList& a) {
        Tensor b = a[1];
        b.mul_(0.5);
        return (a[0] * a[0]).sum();
      });
}

TEST(ScenarioInputAlias, BothOverlappingViewsMutated) {
  run_scenario(
      [] {
        Tensor base = leaf({5}, 6, false);
        return ScenarioInputs{{base.slice(0, 0, 3), base.slice(0, 2, 5)}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0], y = a[1];
        x.add_(1.0);
        y.mul_(2.0);
        return TensorList{x * 1.0, y * 1.0};
      });
}

TEST(ScenarioInputAlias, MutatedAliasAndOutputViewOfTheOther) {
  // Reference §6 #48.
  run_scenario(
      [] {
        Tensor base = leaf({3, 3}, 7, false);
        return ScenarioInputs{{base.slice(0, 0, 2), base.slice(0, 1, 3)}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(-1.0);
        return TensorList{a[1].t(), x};
      });
}

TEST(ScenarioInputAlias, OutputsViewTwoAliasedInputsNoMutation) {
  // Reference §6 #56: each output is regenerated from the right input.
  run_scenario(
      [] {
        Tensor base = leaf({4, 2}, 8);
        return ScenarioInputs{{base.slice(0, 0, 3), base.slice(0, 1, 4)}, {base}};
      },
      [](const TensorList& a) {
        return TensorList{a[0].t(), a[1].t(), a[0] * a[1]};
      });
}

TEST(ScenarioInputAlias, TwoAliasGroupsOutOfOrder) {
  // Reference §6 #51: two bases, their views interleaved in the argument list.
  run_scenario(
      [] {
        Tensor b1 = leaf({4}, 9, false), b2 = leaf({4}, 10, false);
        return ScenarioInputs{
            {b2.slice(0, 0, 3), b1.slice(0, 1, 4), b2.slice(0, 1, 4), b1.slice(0, 0, 2)}, {b1, b2}};
      },
      [](const TensorList& a) {
        Tensor p = a[1], q = a[2];
        p.add_(1.0);
        q.mul_(3.0);
        return TensorList{a[0] + 0.0, a[3] + 0.0};
      });
}

TEST(ScenarioInputAlias, TransposedAndPlainViewsOfOneBaseMutated) {
  run_scenario(
      [] {
        Tensor base = leaf({3, 3}, 11, false);
        return ScenarioInputs{{base.t(), base.view({9})}, {base}};
      },
      [](const TensorList& a) {
        Tensor t = a[0];
        t.select(0, 0).fill_(7.0);
        return a[1] * 2.0;
      });
}

TEST(ScenarioInputAlias, DetachedOverlappingViewsWithoutCommonBase) {
  // No _base to share (detach() drops it): the runtime must build a base from the storage.
  run_scenario(
      [] {
        Tensor base = leaf({6}, 12, false);
        return ScenarioInputs{{base.slice(0, 0, 4).detach(), base.slice(0, 2, 6).detach()}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.add_(1.0);
        return a[1] * 2.0;
      });
}

// ---- non-overlapping views of one storage (false aliasing) ----

TEST(ScenarioInputAlias, DisjointColumnsOneMutated) {
  run_scenario(
      [] {
        Tensor base = leaf({4, 3}, 1, false);
        return ScenarioInputs{{base.select(1, 0), base.select(1, 1)}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return a[1].sum();
      });
}

TEST(ScenarioInputAlias, InterleavedStridedViewsOneMutatedTraining) {
  // Even and odd elements of one storage never overlap, though their extents do.
  run_scenario(
      [] {
        Tensor l = leaf({8}, 2);
        Tensor base = l * 1.0;
        return ScenarioInputs{{base.slice(0, 0, 8, 2), base.slice(0, 1, 8, 2)}, {base, l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(a[1]);
        return a[1].exp();
      });
}

TEST(ScenarioInputAlias, AdjacentSlicesBothMutated) {
  run_scenario(
      [] {
        Tensor base = leaf({6}, 3, false);
        return ScenarioInputs{{base.slice(0, 0, 3), base.slice(0, 3, 6)}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0], y = a[1];
        x.add_(y);
        y.zero_();
        return x + 0.0;
      });
}

TEST(ScenarioInputAlias, DisjointViewOfABaseWrittenWithGradThroughAnotherInputRequiresGrad) {
  // AotProgramFuzz, seed 2214047. A write with grad on through one view gives the caller's base a
  // history (CopySlices), and its other views then require grad (torch 1.13: (a2 * 1)
  // .requires_grad is True, eagerly and under AOTAutograd); their gradient reaches nothing.
  // Compiled, the other view was a graph input of its own that did not require grad.
  auto make = [](bool twice) {
    return [twice] {
      Tensor r0 = leaf({6}, 31, false), r1 = leaf({4}, 32);
      Tensor a2 = r0.slice(0, 3, 4);
      TensorList args{r1.select(0, 2), r0.select(0, 4), a2};
      if (twice) args.push_back(a2);
      return ScenarioInputs{args, {r0, r1}};
    };
  };
  auto body = [](const TensorList& a) {
    Tensor a1 = a[1];
    Tensor before = a[2].slice(0, 0, 1);  // a view made before the write, used after it
    Tensor unused = a[2] * 1.0;           // read before the write: no grad, as eager
    a1.add_(a[0]);
    return TensorList{a[2] * 1.0, before.exp(), unused, a[2].detach() * 1.0};
  };
  run_scenario(make(false), body);
  run_scenario(make(true), body);
  // The program as drawn: the view passed twice, written under no_grad, then with grad on.
  run_scenario(
      [] {
        Tensor r0 = leaf({6}, 33, false), r1 = leaf({4}, 34);
        Tensor a2 = r0.slice(0, 3, 6, 2).slice(0, 0, 1, 1);
        return ScenarioInputs{{r1.select(0, 2), r0.select(0, 4), a2, a2}, {r0, r1}};
      },
      [](const TensorList& a) {
        Tensor a1 = a[1], a2 = a[2], a3 = a[3];
        a1.add_(a[0]);
        {
          ag::NoGradGuard no_grad;
          a2.sub_(a2);
        }
        Tensor v4 = a2.sub(-1.5);
        a3.add_(v4);
        return TensorList{a2.mean({0}, true), v4.contiguous() * -3.0};
      });
}

TEST(ScenarioInputAlias, ViewsOfOneBaseAndOfTwoBasesAreSpecializedApart) {
  // The same shapes and strides, the second input a view of the first's base or of another
  // tensor: whether the output requires grad differs, so the calls must not share a graph.
  auto f = [](const TensorList& a) {
    Tensor x = a[0];
    x.add_(a[2]);
    return a[1] * 2.0;
  };
  auto compiled = ag::aot_function(f);
  Tensor w = leaf({1}, 35);
  for (bool shared : {false, true, false, true}) {
    Tensor b0 = leaf({4}, 36, false), b1 = leaf({4}, 37, false);
    Tensor out = compiled(TensorList{b0.slice(0, 0, 1), (shared ? b0 : b1).slice(0, 2, 3), w});
    EXPECT_EQ(out.requires_grad(), shared) << "shared base: " << shared;
  }
  EXPECT_EQ(compiled.num_compilations(), 2u);
}

TEST(ScenarioInputAlias, OverlappingViewsNoMutation) {
  run_scenario(
      [] {
        Tensor base = leaf({5}, 4);
        return ScenarioInputs{{base.slice(0, 0, 3), base.slice(0, 2, 5)}, {base}};
      },
      [](const TensorList& a) { return (a[0] * a[1]).sum(); });
}

TEST(ScenarioInputAlias, AliasedInputsNotRequiringGradOneMutatedByTensorThatRequiresGrad) {
  // Found by AotProgramFuzz (seeds 1862, 2216): the synthetic base's member fakes were recorded
  // with grad mode off (they need no grad), so the trace called them no_grad views and refused
  // the write eager allows; and a member regenerated after the write did not require grad.
  run_scenario(
      [] {
        Tensor base = leaf({6}, 23, false);
        Tensor w = leaf({1}, 24);
        return ScenarioInputs{{base.slice(0, 0, 3), w, base.unsqueeze(1)}, {base, w}};
      },
      [](const TensorList& a) {
        Tensor x = a[2];
        x.mul_(a[1]);
        return TensorList{a[0] + 1.0, x.t() * 2.0};
      });
}

TEST(ScenarioInputAlias, WholeBaseInputOverwrittenWhileAViewOfItIsAnInput) {
  // Found by AotProgramFuzz (seed 1985): eager's fill_ of x gives x's history no gradient, so
  // the leaf's .grad() stays undefined; the compiled backward gave zeros through the synthetic
  // base's as_strided_scatter.
  run_scenario(
      [] {
        Tensor l = leaf({5, 6}, 28);
        Tensor x = l * 1.0;
        return ScenarioInputs{{x, x.slice(0, 1, 4, 2)}, {l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.fill_(1.0);
        return x;
      });
}

// ---- a synthetic base's own geometry (found by RespecializeFuzz, seed 17) ----

// Overlapping slices whose members have the same guards but whose shared base (or storage) has
// more rows the second time: the specialization traced with the smaller base must not be reused
// (it threw "expected f32[4, 2], got f32[5, 2]" under the interpreter, and read a base of the
// wrong size under the code generator).
TEST(ScenarioInputAlias, OverlappingSlicesOfALargerBaseRecompile) {
  for (bool common_base : {true, false}) {
    auto fn = [](const Tensor& x, const Tensor& y) {
      Tensor a = x;
      a.add_(1.0);
      return y * 2.0;
    };
    auto f = ag::aot_function(fn);
    for (int64_t rows : {4, 5, 4}) {
      auto call = [&](auto&& g) {
        Tensor base = leaf({rows, 2}, 5, false);
        Tensor other = common_base ? base : base.detach();
        Tensor out = g(base.slice(0, 0, 3), other.slice(0, 1, 4));
        return std::pair{out, base};
      };
      auto [got, got_base] = call(f);
      auto [want, want_base] = call(fn);
      std::string what = std::string(common_base ? "common base" : "storage") + ", " +
                         std::to_string(rows) + " rows";
      EXPECT_TRUE(ag::testing::allclose(got, want, 0, 0)) << what;
      EXPECT_TRUE(ag::testing::allclose(got_base, want_base, 0, 0)) << what;
    }
    EXPECT_EQ(f.num_compilations(), 2u) << common_base;
  }
}

TEST(ScenarioInputAlias, WrittenInputLyingInAnotherGroupsBaseJoinsIt) {
  // Found by AotProgramFuzz (seed 507443): the overlapping slices a[1], a[2] are passed as their
  // common base, which also holds a[0]; a[0] was a plain graph input, and the base's write-back
  // put a[0]'s old element over its new one. An input lying in a group's base joins the group.
  run_scenario(
      [] {
        Tensor r = leaf({2}, 49, false);
        return ScenarioInputs{{r.slice(0, 0, 1), r.slice(0, 1, 2), r.select(0, 1)}, {r}};
      },
      [](const TensorList& a) {
        Tensor x = a[0], y = a[1];
        x.add_(y);
        y.copy_(x);
        return TensorList{a[2] * 1.0};
      });
}

// Found by AotProgramFuzz (seed 932326). Two inputs alias (a tensor that requires no grad and a
// view of it): a write with grad on through the first gives their base a history, then a view of
// the second made under no_grad is used with grad on. Eager's view requires grad through its base
// (PyTorch 1.13 too: with torch.no_grad(): v = a3[1:3]; v.requires_grad is True), so the result
// requires grad. The tracer asked the fake's _base, the synthetic base as bound at the call,
// which had no history: the output did not require grad.
TEST(ScenarioInputAlias, NoGradViewOfAnInputWhoseBaseGainedAHistoryRequiresGrad) {
  auto fn = [](const TensorList& a) {
    Tensor x = a[0];
    x.sub_(a[1]);
    Tensor v;
    {
      ag::NoGradGuard no_grad;
      v = a[2].slice(0, 1, 3);
    }
    return v.neg();
  };
  auto make = [] {
    Tensor r = leaf({4, 2, 2}, 1, false);
    Tensor w = leaf({5}, 2);
    return ScenarioInputs{{r, w.select(0, 2), r.select(0, 0).view({-1})}, {w}};
  };
  ScenarioInputs in = make();
  Tensor out = ag::aot_function(fn)(in.args);
  EXPECT_TRUE(out.requires_grad());
  EXPECT_FALSE(out.is_leaf());
  EXPECT_TRUE(in.args[0].requires_grad());
  run_scenario(make, fn);
}

// Found by AotProgramFuzz (seed 1221546): one tensor passed three times and a view of it, the view
// transposed under no_grad, a view of another of the three returned after its own transpose_.
// The returned view was taken for one made from the transposed input (the ops of the chains
// matched, not their arguments) and replayed on it: transpose(1, 2) of a 2-dim tensor raised.
TEST(ScenarioInputAlias, ViewOfAnotherAliasIsNotReplayedFromAnInputWhoseGeometryChanged) {
  run_scenario(
      [] {
        Tensor r = leaf({3, 6, 4}, 5, false);
        return ScenarioInputs{{r, r, r.slice(1, 4, 5, 2).select(2, -1)}, {r}};
      },
      [](const TensorList& a) {
        Tensor x = a[2];
        {
          ag::NoGradGuard no_grad;
          ag::transpose_(x, 1, 0);
        }
        Tensor v = a[1].transpose(1, 2);
        Tensor y = a[0];
        y.add_(1.0);
        ag::transpose_(v, 1, 2);
        return TensorList{v, a[1]};
      });
}

// Inputs that share the caller's storage through graph inputs of their own (disjoint views of one
// base) share eager's version counter: a write to one, even under no_grad, invalidates what a VJP
// saved from another, and eager's backward raises. The compiled backward ran (a second reading of
// c76b44a; older than it).
TEST(ScenarioInputAlias, AWriteToOneInputInvalidatesWhatWasSavedFromAnotherOfItsStorage) {
  auto make = [] {
    Tensor l = leaf({3, 4}, 30);
    Tensor b = l * 1.0;
    return ScenarioInputs{{b.select(0, 0), b.select(0, 1), leaf({4}, 31)}, {l, b}};
  };
  run_scenario(make, [](const TensorList& a) {
    Tensor r = a[0] * a[2];
    {
      ag::NoGradGuard no_grad;
      Tensor(a[1]).mul_(2.0);
    }
    return TensorList{r};
  });
  run_scenario(make, [](const TensorList& a) {
    Tensor r = a[0] * a[2];
    Tensor(a[1]).mul_(a[2]);
    return TensorList{r, a[1] * 1.0};
  });
}
