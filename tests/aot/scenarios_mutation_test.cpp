// Scenarios (issue 4, reference §6 "Input data mutation"): the function mutates its inputs, or
// views of them, with grad on, under no_grad or through detach(); batch-norm running statistics.
// Every scenario runs eager and compiled under every partitioner configuration (scenario.h).
#include <gtest/gtest.h>

#include "aot/eager_oracle.h"
#include "aotgrad/aotgrad.h"
#include "aotgrad/conv.h"
#include "testing/scenario.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::expect_unsupported;
using ag::testing::leaf;
using ag::testing::nonleaf_setup;
using ag::testing::run_scenario;
using ag::testing::ScenarioInputs;
using ag::testing::ScenarioOptions;
using ag::testing::TensorList;

// ---- plain data mutation of an input ----

TEST(ScenarioMutation, AddScalarInPlaceInference) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 2}, 1, false)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.add_(1.0);
        return x * 2.0;
      },
      {.expect_inference = true});
}

TEST(ScenarioMutation, WrittenInputIsClonedInItsOwnLayoutForTheGraphsViews) {
  // AotProgramFuzz, seed 1714260: the forward graph views a transpose of a transposed input (a
  // view that exists in the caller's layout only); a written input was passed to it as a
  // contiguous clone, and the graph's view raised. Dense inputs in several layouts, and one
  // with gaps (a copy of its whole storage).
  auto body = [](const TensorList& a) {
    Tensor flat = a[0].t().reshape({-1});  // a view exactly when a[0].t() is contiguous
    flat.mul_(flat);
    return TensorList{a[0] * 2.0, flat};
  };
  run_scenario(
      [] {
        Tensor l = leaf({2, 3}, 3);
        return ScenarioInputs{{(l * 1.0).t()}, {l}};
      },
      body);
  run_scenario(
      [] {
        Tensor l = leaf({6, 2}, 3);
        return ScenarioInputs{{(l * 1.0).slice(0, 4, 6).t()}, {l}};
      },
      body);
  run_scenario(
      [] {
        Tensor l = leaf({3, 2, 4}, 3);
        return ScenarioInputs{{(l * 1.0).permute({2, 0, 1}).select(2, 1)}, {l}};
      },
      body);
}

TEST(ScenarioMutation, MulInPlaceOfInputNotRequiringGradTraining) {
  run_scenario(
      [] {
        return TensorList{leaf({4}, 1, false), leaf({4}, 2)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return (x * a[1]).sum();
      },
      {.expect_inference = false});
}

TEST(ScenarioMutation, CopyInPlaceFromInputThatRequiresGrad) {
  // x did not require grad; after copy_ from y it does (reference §6 #30).
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1, false), leaf({2, 3}, 2)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.copy_(a[1]);
        return x.sin();
      });
}

TEST(ScenarioMutation, AddInPlaceOfTensorThatRequiresGradMakesInputRequireGrad) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 1, false), leaf({3}, 2)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.add_(a[1]);
        return x * 3.0;
      });
}

TEST(ScenarioMutation, FillInPlace) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 2}, 1, false), leaf({2, 2}, 2)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.fill_(3.0);
        return x + a[1];
      });
}

TEST(ScenarioMutation, ZeroInPlaceOfIntermediateKeepsRequiringGrad) {
  // Found by AotProgramFuzz (seed 1669): zero_ was functionalized as zeros_like, a factory
  // without a VJP, so the zeroed tensor came back not requiring grad and as a leaf.
  run_scenario(
      [] {
        return TensorList{leaf({3, 4}, 8)};
      },
      [](const TensorList& a) {
        Tensor y = a[0] + a[0];
        y.zero_();
        return TensorList{y, y.t() * a[0].t()};
      });
}

TEST(ScenarioMutation, ZeroInPlaceOfUnusedInput) {
  run_scenario(
      [] {
        return TensorList{leaf({5}, 1, false), leaf({5}, 2)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.zero_();
        return a[1].exp();
      });
}

TEST(ScenarioMutation, SeveralInputsMutatedInOrder) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 1, false), leaf({3}, 2, false), leaf({3}, 3)};
      },
      [](const TensorList& a) {
        Tensor x = a[0], y = a[1];
        y.add_(x);  // the second input is mutated first
        x.mul_(2.0);
        return x + y + a[2];
      });
}

TEST(ScenarioMutation, MutatedInputReturnedInference) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1, false)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return x;
      });
}

TEST(ScenarioMutation, MutatedNonLeafReturnedWithComputedOutput) {
  run_scenario(
      [] {
        return nonleaf_setup({2, 3}, 1);
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return TensorList{x, x.sin()};
      });
}

TEST(ScenarioMutation, NonLeafThatRequiresGradMutated) {
  run_scenario([] { return nonleaf_setup({4}, 3); },
               [](const TensorList& a) {
                 Tensor x = a[0];
                 x.mul_(3.0);
                 return x.sin().sum();
               });
}

TEST(ScenarioMutation, NonLeafMulInPlaceByTensor) {
  // The gradient of the other factor needs the input's value from before the mutation.
  run_scenario(
      [] {
        ScenarioInputs s = nonleaf_setup({3}, 11);
        s.args.push_back(leaf({3}, 12));
        return s;
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(a[1]);
        return a[1].exp();
      });
}

TEST(ScenarioMutation, NonLeafMutatedWithTensorThatRequiresGradAndAlpha) {
  run_scenario(
      [] {
        ScenarioInputs s = nonleaf_setup({2, 2}, 4);
        s.args.push_back(leaf({2, 2}, 5));
        return s;
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.add_(a[1] * a[1], 0.5);
        return x.exp();
      });
}

TEST(ScenarioMutation, InputMutatedTwiceIntermediateValueUsed) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 1, false), leaf({3}, 2)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        Tensor mid = x * a[1];
        x.add_(mid);
        return TensorList{mid, x.cos()};
      });
}

TEST(ScenarioMutation, CopyFromZeroDimSourceBroadcasts) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1, false), leaf({}, 2)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.copy_(a[1]);
        return x * 2.0;
      });
}

TEST(ScenarioMutation, NonContiguousInputMutated) {
  // A transposed input (strides {1, 3}) mutated in place: the caller's strides must survive.
  run_scenario(
      [] {
        Tensor base = leaf({2, 3}, 1, false);
        return ScenarioInputs{{base.t()}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.add_(1.0);
        return x.sum(std::vector<int64_t>{0});
      });
}

// ---- mutation of a view of an input ----

TEST(ScenarioMutation, SliceOfInputMutated) {
  run_scenario(
      [] {
        return TensorList{leaf({4, 2}, 1, false)};
      },
      [](const TensorList& a) {
        Tensor v = a[0].slice(0, 1, 3);
        v.mul_(2.0);
        return a[0].sum();
      });
}

TEST(ScenarioMutation, SliceOfNonLeafInputMutatedTraining) {
  run_scenario(
      [] {
        return nonleaf_setup({4, 2}, 2);
      },
      [](const TensorList& a) {
        Tensor v = a[0].slice(0, 1, 3);
        v.mul_(2.0);
        return (a[0] * a[0]).sum();
      });
}

TEST(ScenarioMutation, SelectOfInputMutatedWithTensor) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 4}, 1, false), leaf({4}, 2)};
      },
      [](const TensorList& a) {
        Tensor row = a[0].select(0, 2);
        row.add_(a[1]);
        return a[0] * 2.0;
      });
}

TEST(ScenarioMutation, TransposeOfInputMutated) {
  run_scenario(
      [] {
        return nonleaf_setup({2, 3}, 3);
      },
      [](const TensorList& a) {
        Tensor t = a[0].transpose(0, 1);
        t.mul_(ag::arange(3.0).view({3, 1}) + 1.0);
        return a[0].exp();
      });
}

TEST(ScenarioMutation, ReshapingViewOfInputMutated) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 6}, 4, false)};
      },
      [](const TensorList& a) {
        Tensor v = a[0].view({3, 4});
        v.select(1, 0).fill_(-1.0);
        return a[0].sum(std::vector<int64_t>{1});
      });
}

TEST(ScenarioMutation, AsStridedViewOfInputMutated) {
  run_scenario(
      [] {
        return nonleaf_setup({3, 3}, 5);
      },
      [](const TensorList& a) {
        Tensor diag = a[0].as_strided({3}, {4}, 0);  // the diagonal
        diag.zero_();
        return a[0].sin();
      });
}

TEST(ScenarioMutation, AsStridedOfTransposedInputAfterItWasMutated) {
  // Found by AotProgramFuzz (seed 2033): the input's new value is row-major while its storage
  // is not, so as_strided read other elements than eager's (refused for a while). The window is
  // now read from the input's dims taken in storage order (Tracer::rebased_as_strided).
  run_scenario(
      [] {
        return TensorList{leaf({3, 2}, 26, false).t()};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return x.as_strided({2}, {1}) * 1.0;
      });
}

TEST(ScenarioMutation, AsStridedOfSliceInputAfterItWasMutatedReadsPastIt) {
  // The window reaches past the input's 4 elements into its base's storage: it reads an image of
  // the caller's storage with the input's new value in it (refused until Tracer::storage_image).
  run_scenario(
      [] {
        return TensorList{leaf({4, 2}, 27, false).slice(0, 0, 2)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return x.as_strided({6}, {1}) * 1.0;
      });
}

TEST(ScenarioMutation, PermuteUnsqueezeSqueezeChainMutated) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3, 2}, 6, false), leaf({3, 2, 2}, 7)};
      },
      [](const TensorList& a) {
        Tensor v = a[0].permute({1, 0, 2}).unsqueeze(0).squeeze(0);
        v.mul_(a[1]);
        return a[0] + 1.0;
      });
}

TEST(ScenarioMutation, ViewOfViewOfViewMutatedThenOriginalViewRead) {
  run_scenario(
      [] {
        return nonleaf_setup({4, 3}, 8);
      },
      [](const TensorList& a) {
        Tensor v1 = a[0].slice(0, 1, 4);
        Tensor v2 = v1.t();
        Tensor v3 = v2.select(0, 1);
        v3.add_(10.0);
        return TensorList{v1 * 2.0, a[0].sum()};
      });
}

TEST(ScenarioMutation, ViewTakenBeforeMutationSeesIt) {
  run_scenario(
      [] {
        return TensorList{leaf({4}, 9, false), leaf({2}, 10)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        Tensor v = x.slice(0, 0, 2);
        x.mul_(3.0);
        return v * a[1];
      });
}

// ---- mutations hidden from autograd: under no_grad, through detach() ----

TEST(ScenarioMutation, LeafThatRequiresGradMutatedUnderNoGrad) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 1), leaf({3}, 2)};
      },
      [](const TensorList& a) {
        Tensor w = a[0];
        {
          ag::NoGradGuard no_grad;
          w.mul_(0.5);
        }
        return (w * a[1]).sum();
      });
}

TEST(ScenarioMutation, SliceOfLeafMutatedUnderNoGrad) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 2}, 3), leaf({3, 2}, 4)};
      },
      [](const TensorList& a) {
        {
          ag::NoGradGuard no_grad;
          a[0].slice(0, 0, 1).zero_();
        }
        return (a[0].exp() * a[1]).sum();
      });
}

// Found by AotProgramFuzz (seeds 1147 and 1979): eager gives a detach()ed alias written in place
// with grad on by a tensor that requires grad a history of its own (d requires grad, a[1] gets a
// gradient through it), while the input a[0] keeps none. The trace treated the write as hidden
// from every alias, so the compiled d * 2 needed no grad and a[1] got nothing.
TEST(ScenarioMutation, DetachedAliasWrittenByTensorThatRequiresGradGetsAHistory) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 30, false), leaf({3}, 31)};
      },
      [](const TensorList& a) {
        Tensor d = a[0].detach();
        d.sub_(a[1]);
        return d * 2.0;
      });
}

TEST(ScenarioMutation, InputReadAfterAWriteThroughItsDetachedAliasHasNoHistory) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 32, false), leaf({3}, 33)};
      },
      [](const TensorList& a) {
        a[0].detach().add_(a[1]);
        return a[0] * 2.0;
      });
}

TEST(ScenarioMutation, DetachedAliasWithAHistoryReturnedWithItsViews) {
  // Seed 1979's shape: the alias is returned, so it is regenerated over the input's storage and
  // takes the history the graph computed; its views share it as their _base, as in eager.
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 34), leaf({2, 3}, 35)};
      },
      [](const TensorList& a) {
        Tensor d;
        {
          ag::NoGradGuard no_grad;
          d = a[0].detach();
        }
        d.sub_(a[1]);
        return TensorList{d, d.unsqueeze(0), d.select(1, 2), a[0] * 1.0};
      });
}

TEST(ScenarioMutation, ViewOfADetachedAliasWrittenByATensorThatRequiresGrad) {
  // Seed 1147's shape: the write goes through a view of the alias, which gets the history too.
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 36, false), leaf({2, 1, 1}, 37)};
      },
      [](const TensorList& a) {
        Tensor v = a[0].detach().unsqueeze(1).slice(2, 0, 1);
        v.copy_(a[1]);
        return TensorList{v, a[0]};
      });
}

TEST(ScenarioMutation, DetachedAliasWithAHistoryThenWrittenThroughItsBase) {
  // The base's later write changes the alias's data, not its history.
  run_scenario(
      [] {
        return TensorList{leaf({4}, 38, false), leaf({4}, 39)};
      },
      [](const TensorList& a) {
        Tensor d = a[0].detach();
        d.mul_(a[1]);
        Tensor x = a[0];
        x.add_(1.0);
        return TensorList{d * d, d.slice(0, 1, 3)};
      });
}

TEST(ScenarioMutation, DetachedAliasOfAnIntermediateWrittenByATensorThatRequiresGrad) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 40), leaf({3}, 41)};
      },
      [](const TensorList& a) {
        Tensor c = a[0] * 2.0;
        Tensor d = c.detach();
        d.mul_(a[1]);
        return TensorList{d.unsqueeze(0), c * 1.0, d * 3.0};
      });
}

TEST(ScenarioMutation, LeafMutatedThroughDetach) {
  run_scenario([] { return TensorList{leaf({3}, 5)}; },
               [](const TensorList& a) {
                 Tensor d = a[0].detach();
                 d.mul_(2.0);
                 return (a[0] * a[0]).sum();
               });
}

TEST(ScenarioMutation, LeafWrittenOnlyThroughDetachGetsNoGradient) {
  // Nothing the caller gets depends on x, so eager's backward leaves x.grad() undefined; the
  // compiled backward gave the write's new value a tangent and x a gradient of zeros.
  run_scenario(
      [] {
        return TensorList{leaf({3}, 42), leaf({3}, 43)};
      },
      [](const TensorList& a) {
        a[0].detach().mul_(2.0);
        return (a[1] * 2.0).sum();
      });
}

TEST(ScenarioMutation, LeafWrittenOnlyUnderNoGradGetsNoGradient) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 44), leaf({3}, 45)};
      },
      [](const TensorList& a) {
        {
          ag::NoGradGuard no_grad;
          Tensor x = a[0];
          x.mul_(2.0);
        }
        return (a[1] * 2.0).sum();
      });
}

TEST(ScenarioMutation, NonLeafMutatedThroughDetach) {
  run_scenario([] { return nonleaf_setup({3}, 6); },
               [](const TensorList& a) {
                 a[0].detach().add_(1.0);
                 return a[0].sin();
               });
}

TEST(ScenarioMutation, SliceOfNonLeafMutatedThroughDetach) {
  run_scenario([] { return nonleaf_setup({4}, 13); },
               [](const TensorList& a) {
                 a[0].slice(0, 1, 3).detach().mul_(-1.0);
                 return a[0] * a[0];
               });
}

TEST(ScenarioMutation, DetachedUnderNoGradThenWrittenWithGradOn) {
  // Found by AotProgramFuzz (seed 2265): the trace made detach()'s result a view created under
  // no_grad and refused the write; eager's detach() result is no view, and the write is fine.
  run_scenario(
      [] {
        return nonleaf_setup({4, 5}, 25);
      },
      [](const TensorList& a) {
        Tensor c = a[0].cos();
        Tensor d;
        {
          ag::NoGradGuard no_grad;
          d = c.detach();
          ag::unsqueeze_(d, 2);
        }
        d.add_(d);
        return TensorList{d * 1.0, c};
      });
}

TEST(ScenarioMutation, MutatedUnderNoGradAndViewOfItReturned) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 14), leaf({2, 3}, 15)};
      },
      [](const TensorList& a) {
        {
          ag::NoGradGuard no_grad;
          Tensor w = a[0];
          w.add_(a[1]);
        }
        return TensorList{a[0].select(1, 2), a[0] * a[1]};
      });
}

TEST(ScenarioMutation, DetachedNoGradAndVisibleMutationsMixed) {
  // Reference §6 #27: only the autograd-visible mutation carries gradient.
  run_scenario(
      [] {
        Tensor lb = leaf({3}, 2);
        return ScenarioInputs{{leaf({3}, 1), lb * 2.0, leaf({3}, 3)}, {lb}};
      },
      [](const TensorList& a) {
        a[0].detach().mul_(2.0);
        Tensor b = a[1];
        b.mul_(3.0);
        {
          ag::NoGradGuard no_grad;
          Tensor c = a[2];
          c.mul_(4.0);
        }
        return a[0] + b + a[2];
      });
}

TEST(ScenarioMutation, MutationUnderNoGradOfInputReadBeforeAndAfter) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 2}, 7), leaf({2, 2}, 8, false)};
      },
      [](const TensorList& a) {
        Tensor before = a[0] * a[1];
        {
          ag::NoGradGuard no_grad;
          Tensor b = a[1];
          b.add_(a[0]);
        }
        return TensorList{before, a[0] * a[1]};
      });
}

TEST(ScenarioMutation, WholeFunctionUnderNoGradMutatesLeafThatRequiresGrad) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 1), leaf({3}, 2)};
      },
      [](const TensorList& a) {
        Tensor w = a[0];
        w.add_(a[1]);
        return w * 2.0;
      },
      {.no_grad = true, .expect_inference = true});
}

TEST(ScenarioMutation, NonLeafMutatedWithGradThenUnderNoGrad) {
  // Only some of the mutations are visible to autograd.
  run_scenario([] { return nonleaf_setup({3}, 9); },
               [](const TensorList& a) {
                 Tensor x = a[0];
                 x.mul_(2.0);
                 {
                   ag::NoGradGuard no_grad;
                   x.add_(1.0);
                 }
                 return x.exp();
               });
}

TEST(ScenarioMutation, InputCopiedFromItsOwnTranspose) {
  // The source overlaps the destination: every element must be read before it is written.
  run_scenario(
      [] {
        return TensorList{leaf({3, 3}, 10, false)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.copy_(x.t());
        return x + 0.0;
      });
}

TEST(ScenarioMutation, EmptyInputMutated) {
  run_scenario(
      [] {
        return TensorList{leaf({0, 2}, 11, false), leaf({2}, 12)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.add_(1.0);
        return TensorList{x, a[1] * 2.0};
      });
}

// ---- batch-norm running statistics ----

TEST(ScenarioMutation, ManualRunningStatsUpdatedUnderNoGrad) {
  run_scenario(
      [] {
        return TensorList{leaf({5, 3}, 1), leaf({3}, 2, false)};
      },
      [](const TensorList& a) {
        Tensor running = a[1];
        Tensor m = a[0].mean(std::vector<int64_t>{0});
        {
          ag::NoGradGuard no_grad;
          running.mul_(0.9).add_(m.detach() * 0.1);
        }
        return (a[0] - m).pow(2).sum();
      });
}

TEST(ScenarioMutation, BatchNormTrainingUpdatesRunningStats) {
  run_scenario(
      [] {
        return TensorList{leaf({4, 3, 2, 2}, 1), leaf({3}, 2), leaf({3}, 3),
                          ag::zeros({3}, ag::DType::f64), ag::ones({3}, ag::DType::f64)};
      },
      [](const TensorList& a) {
        return ag::batch_norm(a[0], a[1], a[2], a[3], a[4], /*training=*/true, 0.1, 1e-5);
      });
}

TEST(ScenarioMutation, NativeBatchNormTrainingReturnsSavedStats) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 2, 3}, 4), leaf({2}, 5), leaf({2}, 6), leaf({2}, 7, false),
                          ag::ones({2}, ag::DType::f64)};
      },
      [](const TensorList& a) {
        auto [out, mean, invstd] =
            ag::native_batch_norm(a[0], a[1], a[2], a[3], a[4], /*training=*/true, 0.2, 1e-5);
        return TensorList{out, mean, invstd};
      });
}

TEST(ScenarioMutation, BatchNormTrainingWithoutAffineInference) {
  run_scenario(
      [] {
        return TensorList{leaf({4, 2}, 8, false), ag::zeros({2}, ag::DType::f64),
                          ag::ones({2}, ag::DType::f64)};
      },
      [](const TensorList& a) {
        return ag::batch_norm(a[0], Tensor(), Tensor(), a[1], a[2], /*training=*/true);
      },
      {.expect_inference = true});
}

TEST(ScenarioMutation, BatchNormEvalDoesNotMutate) {
  run_scenario(
      [] {
        return TensorList{leaf({4, 3}, 9), leaf({3}, 10), leaf({3}, 11), leaf({3}, 12, false),
                          ag::full({3}, 2.0, ag::DType::f64)};
      },
      [](const TensorList& a) {
        return ag::batch_norm(a[0], a[1], a[2], a[3], a[4], /*training=*/false);
      });
}

// ---- mutation of intermediates, and what autograd saved ----

TEST(ScenarioMutation, ViewOfIntermediateMutatedThenBaseReturned) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 4}, 1)};
      },
      [](const TensorList& a) {
        Tensor y = a[0] * 2.0;
        y.select(0, 1).mul_(3.0);
        return y;
      });
}

TEST(ScenarioMutation, TransposedViewOfIntermediateMutatedThenBaseReturned) {
  // Found by AotProgramFuzz: t's scatter is a t, so the graph's new value of y was laid out as
  // the written view ([1, 3] strides) while eager's y keeps its own ([2, 1]).
  run_scenario(
      [] {
        return TensorList{leaf({3, 2}, 1)};
      },
      [](const TensorList& a) {
        Tensor y = a[0] * 2.0;
        y.t().mul_(2.0);
        return y;
      });
}

TEST(ScenarioMutation, TransposedViewOfIntermediateMutatedThenReturned) {
  // Found by AotProgramFuzz (seed 7): the returned view was regenerated from a base with the
  // wrong layout, so it came back contiguous instead of transposed.
  run_scenario(
      [] {
        return TensorList{leaf({3, 2}, 2, false)};
      },
      [](const TensorList& a) {
        Tensor v = (a[0] * 2.0).t();
        v.mul_(2.0);
        return v;
      });
}

TEST(ScenarioMutation, PermutedUnsqueezedViewOfIntermediateMutatedThenViewReturned) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3, 2}, 3)};
      },
      [](const TensorList& a) {
        Tensor y = a[0].mean({0}, true);
        Tensor v = y.unsqueeze(3).permute({0, 2, 1, 3});
        ag::sigmoid_(v);
        return TensorList{v.squeeze(3), y};
      });
}

TEST(ScenarioMutation, IntermediateSavedOnlyByDeadValueThenMutated) {
  // Found by AotProgramFuzz (seeds 17, 38): eager's backward never runs the VJP of a value
  // nothing returned depends on, so its saved input may be overwritten; the compiled backward
  // raised eager's version error anyway.
  run_scenario([] { return TensorList{leaf({3}, 4)}; },
               [](const TensorList& a) {
                 Tensor x = a[0] * 1.0;
                 Tensor dead = x * x;
                 ag::sigmoid_(x);
                 return x;
               });
}

TEST(ScenarioMutation, IntermediateSavedByValueNoGradientReachesThenMutated) {
  run_scenario([] { return TensorList{leaf({3}, 5)}; },
               [](const TensorList& a) {
                 Tensor x = a[0] * 1.0;
                 Tensor positive = (x * x).gt(0.5);
                 x.mul_(2.0);
                 return TensorList{x, positive};
               });
}

TEST(ScenarioMutation, ResultSavedByItsOpThenOverwrittenByFill) {
  // Found by AotProgramFuzz (seed 1000 range): sigmoid saves its result, fill_ overwrites it.
  // fill's VJP gives self zeros (as PyTorch's), so eager's backward runs sigmoid's and raises
  // its version error; the compiled backward must raise it too, deciding by the VJPs the joint
  // graph runs.
  run_scenario(
      [] {
        return TensorList{leaf({3}, 6), leaf({3}, 7)};
      },
      [](const TensorList& a) {
        Tensor y = (a[0] * 2.0).sigmoid();
        y.fill_(0.5);
        Tensor z = (a[1] * 1.0).tanh();
        z.copy_(a[0]);
        return TensorList{y, z};
      });
}

TEST(ScenarioMutation, SavedInputWrittenWhenOnlyANoGradViewReachesItsVjp) {
  // Found by AotProgramFuzz (seed 500054): sin saves x, relu_ overwrites it, and sin's result
  // reaches the caller only through a view made under no_grad. Eager makes that view require
  // grad without a grad_fn, so no gradient reaches sin's VJP and nothing raises; the compiled
  // backward flowed the (always zero) tangent of the view's intermediate base to sin's VJP and
  // raised eager's version error. The oracle's backward goes through (v * w).sum(), as a user's
  // loss would (a backward() rooted at v itself raises on both sides).
  ag::testing::expect_like_eager(
      [] {
        Tensor l = leaf({4}, 46);
        return ag::testing::OracleSetup{{l * 1.0}, {l}};
      },
      [](std::vector<Tensor> a) {
        Tensor x = a[0];
        Tensor s = x.sin();
        ag::relu_(x);
        Tensor m = s * 2.0;
        Tensor v;
        {
          ag::NoGradGuard no_grad;
          v = m.view({2, 2});
        }
        return TensorList{v};
      });
}

TEST(ScenarioMutation, FillThroughAViewCoveringTheWholeInputGivesItsHistoryZeros) {
  // Found by AotProgramFuzz (seed 506290): eager's CopySlices gives x's history zeros (defined),
  // as PyTorch; the functional graph wrote the whole input back through unsqueeze's inverse,
  // where fill's VJP gave self nothing, and the leaf's gradient was undefined. Now every
  // overwrite (fill_, zero_, copy_) gives self zeros_like(grad), as derivatives.yaml does.
  run_scenario(
      [] {
        return nonleaf_setup({4}, 47);
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.unsqueeze(1).fill_(-1.5);
        return TensorList{x * 2.0};
      });
}

TEST(ScenarioMutation, ZeroThroughAWholeSliceOfASyntheticBaseGivesItsHistoryZeros) {
  // Found by AotProgramFuzz (seed 500443): the member's write is an as_strided_scatter over the
  // whole synthetic base, whose VJP gave the base no gradient; eager's CopySlices gives zeros.
  run_scenario(
      [] {
        Tensor l = leaf({2, 2}, 48);
        Tensor n = l * 1.0;
        return ScenarioInputs{{n, n.slice(1, 0, 2)}, {l}};
      },
      [](const TensorList& a) {
        Tensor v = a[1];
        v.zero_();
        return TensorList{a[0] * 2.0};
      });
}

TEST(ScenarioMutation, IntermediateSavedForBackwardThenMutatedFailsAtBackward) {
  // Eager's version check fires at backward; so must the compiled one (both sides throw).
  run_scenario([] { return TensorList{leaf({3}, 2)}; },
               [](const TensorList& a) {
                 Tensor y = a[0].exp();
                 Tensor z = y.sum();
                 y.mul_(2.0);
                 return z;
               });
}

TEST(ScenarioMutation, InputMutatedAfterBeingSavedForBackward) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 3, false), leaf({3}, 4)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        Tensor p = x * a[1];  // mul's backward needs x for a[1]'s gradient
        x.add_(1.0);
        return p;
      });
}

TEST(ScenarioMutation, DetachedAliasOfADetachedAliasGetsAHistoryOfItsOwn) {
  // e's write is hidden from d, as d's is from a[0].
  run_scenario(
      [] {
        return TensorList{leaf({3}, 50, false), leaf({3}, 51)};
      },
      [](const TensorList& a) {
        Tensor d = a[0].detach();
        d.mul_(a[1]);
        Tensor e = d.detach();
        e.add_(a[1]);
        return TensorList{d * 1.0, e * 1.0, e, d};
      });
}
TEST(ScenarioMutation, DetachedAliasWithAHistoryWrittenUnderNoGrad) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 52, false), leaf({3}, 53)};
      },
      [](const TensorList& a) {
        Tensor d = a[0].detach();
        d.mul_(a[1]);
        {
          ag::NoGradGuard no_grad;
          d.add_(1.0);
        }
        return TensorList{d * d};
      });
}
TEST(ScenarioMutation, DetachedAliasWithAHistoryReturnedBesideItsIntermediate) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 54), leaf({3}, 55)};
      },
      [](const TensorList& a) {
        Tensor c = a[0] * 2.0;
        Tensor d = c.detach();
        d.mul_(a[1]);
        return TensorList{c, d, d.unsqueeze(1)};
      });
}
TEST(ScenarioMutation, DetachedAliasOfATransposedInputWrittenThroughASelect) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 56, false), leaf({3}, 57)};
      },
      [](const TensorList& a) {
        Tensor d = a[0].t().detach();
        d.select(1, 0).mul_(a[1]);
        return TensorList{d, a[0], d.t() * 1.0};
      });
}

TEST(ScenarioMutation, TransposedInputWrittenThenViewedRowMajor) {
  // Found by AotProgramFuzz (seeds 125116, 128523): eager writes the input's storage in place, so
  // after the write the input (transposed back by transpose_, or a view made of it before) is
  // still row-major and view(-1) of it is allowed. The new value in the graph had the layout of
  // the op that computed it, and the tracer refused the view.
  run_scenario(
      [] {
        Tensor l = leaf({5, 4}, 1);
        return ScenarioInputs{{(l * 1.5).permute({1, 0})}, {l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(0.25);
        ag::transpose_(x, 1, 0);
        return TensorList{x.view({-1}) * 2.0};
      });
  run_scenario(
      [] {
        Tensor l = leaf({3, 6, 6}, 2);
        return ScenarioInputs{{(l * 1.5).select(0, 1)}, {l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        Tensor flat = x.view({-1});
        {
          ag::NoGradGuard no_grad;
          ag::t_(x);
          x.add_(1.0);
        }
        return TensorList{flat.view({-1}) * 2.0};
      });
}

TEST(ScenarioMutation, InputWithGapsWrittenThenViewedAsEager) {
  // Found by AotProgramFuzz (seed 3325012): an input that is not dense (strides (3, 15) on
  // [5, 6], a select and t() of the caller's tensor) is written through a view, and views of it
  // made after are viewed again. Eager's input keeps its strides, so t().view(-1) of a slice of it
  // is allowed; the new value in the graph was contiguous, and the tracer refused the view.
  auto setup = [] {
    Tensor l = leaf({6, 5, 3}, 4, false);
    return ScenarioInputs{{leaf({3, 6, 5}, 5), l.select(2, 1).t()}, {l}};
  };
  run_scenario(setup, [](const TensorList& a) {
    Tensor v;
    {
      ag::NoGradGuard no_grad;
      v = a[1].slice(1, 3, 5, 1);
    }
    Tensor flat = v.t().view({-1});
    {
      ag::NoGradGuard no_grad;
      flat.unsqueeze(1).add_(2.0);
    }
    return TensorList{flat * 1.0, a[1].t().reshape({-1}) * a[0].sum()};
  });
  // The input requires grad (a non-leaf), written with grad on: the gradient passes the buffer's
  // as_strided and as_strided_scatter back to the leaf, and to the other input.
  run_scenario(
      [] {
        Tensor l = leaf({6, 5, 3}, 7);
        return ScenarioInputs{{leaf({5}, 8), (l * 1.5).select(2, 1).t()}, {l}};
      },
      [](const TensorList& a) {
        Tensor flat = a[1].slice(1, 3, 5, 1).t().view({-1});
        flat.unsqueeze(1).mul_(a[0].sum());
        return TensorList{flat * 1.0, a[1].t().reshape({-1}).sin(), a[1]};
      });
}

TEST(ScenarioMutation, WriteThroughDetachOfANoGradViewGivesTheAliasTheWritesHistory) {
  // Found by AotProgramFuzz (seed 707555): d = v.detach() of a view v made under no_grad of an
  // intermediate, written with grad on, is returned with the write's history (the gradient of
  // x.sum(0) reaches x). The tracer dropped the output's gradient because a step of its chain
  // before the detach() was made under no_grad; the detach()ed alias's history is its own.
  run_scenario(
      [] {
        return TensorList{leaf({3, 4}, 3)};
      },
      [](const TensorList& a) {
        Tensor y = a[0].add(-3.0);
        Tensor v;
        {
          ag::NoGradGuard no_grad;
          v = y.t();
        }
        Tensor d = v.detach();
        d.copy_(a[0].sum({1}, false));
        return TensorList{d};
      });
}

// ---- writes through an expanded view ----
// Eager lets fill_ and zero_ write through a view that overlaps itself, and any in-place op write
// through a view of an expanded tensor that overlaps nothing (a select of it). The functional graph
// puts the written elements at the positions of the expand's input they are (index_put).

TEST(ScenarioMutation, FillThroughAnExpandedViewOfAnInputWritesItsElements) {
  run_scenario(
      [] {
        return TensorList{leaf({1, 3}, 41, false)};
      },
      [](const TensorList& a) {
        Tensor e = a[0].expand({2, 3});
        e.fill_(5.0);
        return TensorList{a[0] * 2.0, e};
      });
  run_scenario(
      [] {
        return TensorList{leaf({3, 1}, 42, false)};
      },
      [](const TensorList& a) {
        a[0].expand({2, 3, 4}).zero_();
        return a[0] + 1.0;
      });
}

TEST(ScenarioMutation, FillThroughAnExpandedViewOfAnIntermediateUnderNoGrad) {
  // PyTorch 1.13: y's history is untouched, so a.grad() is y's new value plus 2a.
  run_scenario([] { return TensorList{leaf({3}, 43)}; },
               [](const TensorList& a) {
                 Tensor y = a[0] * 2.0;
                 {
                   ag::NoGradGuard no_grad;
                   y.expand({2, 3}).fill_(7.0);
                 }
                 return y * a[0];
               });
}

TEST(ScenarioMutation, WriteThroughASelectOfAnExpandedViewWithGrad) {
  // Only the selected column of the expand is written, the elements of y it is (PyTorch 1.13:
  // y = [2, 6, 12] for a = [1, 2, 3], b = [2, 3, 4]; InplaceAutograd pins the gradients).
  run_scenario(
      [] {
        return TensorList{leaf({3, 1}, 44), leaf({3}, 45)};
      },
      [](const TensorList& a) {
        Tensor y = a[0] * 1.0;
        y.expand({3, 2}).select(1, 1).mul_(a[1]);
        return y;
      });
  // The same through a transpose, and an expand of a slice of an input (a new leading dim).
  run_scenario(
      [] {
        return TensorList{leaf({3, 1}, 46, false), leaf({3}, 47)};
      },
      [](const TensorList& a) {
        a[0].expand({3, 4}).t().select(0, 2).copy_(a[1]);
        return a[0] * 1.0;
      });
  run_scenario(
      [] {
        return TensorList{leaf({4, 3}, 48, false)};
      },
      [](const TensorList& a) {
        a[0].slice(0, 1, 2).expand({2, 1, 3}).select(0, 1).add_(100.0);
        return a[0] * 1.0;
      });
}

TEST(ScenarioRaises, FillWithGradThroughAnExpandedViewOfATensorThatRequiresGradIsRefused) {
  // Eager's forward runs and its backward raises (InplaceAutograd); the compiled function says so
  // at the call.
  expect_unsupported([] { return TensorList{leaf({3}, 49)}; },
                     [](const TensorList& a) {
                       Tensor y = a[0] * 2.0;
                       y.expand({2, 3}).fill_(7.0);
                       return y;
                     },
                     "eager's backward raises there");
}

TEST(ScenarioMutation, WriteThroughASelectOfADetachedExpandedView) {
  // d = x.expand(..).detach() overlaps itself; a select of it does not, so mul_ may write it.
  // Without a history the write lands on x's elements (PyTorch 1.13: x = [[0, 10, 40]] for
  // x = [[0, 1, 2]], w = [5, 10, 20]).
  run_scenario(
      [] {
        return TensorList{leaf({1, 3}, 50, false), leaf({3}, 51, false)};
      },
      [](const TensorList& a) {
        Tensor d = a[0].expand({2, 3}).detach();
        d.select(0, 1).mul_(a[1]);
        return TensorList{a[0] * 1.0, d * 1.0};
      });
  // With a factor that requires grad, eager's backward raises at d's CopySlices (d's gradient
  // laid out in d's overlapping geometry); the compiled function refuses at the call.
  expect_unsupported(
      [] {
        return TensorList{leaf({1, 3}, 52, false), leaf({3}, 53)};
      },
      [](const TensorList& a) {
        Tensor d = a[0].expand({2, 3}).detach();
        d.select(0, 1).mul_(a[1]);
        return TensorList{a[0] * 1.0, d * 1.0};
      },
      "eager's backward raises there");
}

TEST(ScenarioMutation, DetachedAliasWrittenWithGradRunsNoVjpOfTheTensorItAliases) {
  // Seed 2839395's shape: y's VJP would read x, which is then written in place, so a backward
  // through y would fail eager's version check. The returned d = y.detach() takes its history
  // from the copy_, never from y: eager's backward runs no VJP of y, and the compiled function
  // must not either (it raised the version error: y's storage, an intermediate base, had counted
  // as reached by the gradient of d).
  run_scenario([] { return TensorList{leaf({2}, 891905)}; },
               [](const TensorList& a) {
                 Tensor x = a[0] * 1.5;
                 Tensor w = a[0] + a[0];
                 Tensor y = w.matmul(x);
                 x.sub_(y);
                 Tensor d = y.detach();
                 d.copy_(w.select(0, 1));
                 return TensorList{d, d};
               });
  // The same with the alias made under no_grad and a no-grad output beside it.
  run_scenario([] { return TensorList{leaf({3}, 891906)}; },
               [](const TensorList& a) {
                 Tensor x = a[0].sub(a[0]);
                 Tensor w = a[0].add(a[0]);
                 Tensor y = w.matmul(x);
                 x.sub_(y);
                 Tensor s, d;
                 {
                   ag::NoGradGuard no_grad;
                   s = y.sum();
                   d = y.detach();
                 }
                 d.copy_(w.select(0, 1));
                 return TensorList{d, d, s};
               });
}
TEST(ScenarioMutation, AsStridedOfADetachedAliasAtAnOffsetWrittenWithGradAsEager) {
  // Found by AotProgramFuzz (seed 3328589): d = v.detach() of a caller's view at offset 1, an
  // as_strided of d at its own offset written with grad on, then read. The graph stood for d's new
  // value by aotgrad.hidden_update, whose result was laid out from offset 0: the as_strided after
  // it addressed a gap between d's elements, and the gradient of r0 was lost.
  auto setup = [] {
    Tensor r0 = leaf({2, 2}, 1);
    Tensor r1 = leaf({6}, 2);
    return ScenarioInputs{{r0, r1, r1.slice(0, 1, 4, 2)}, {r0, r1}};
  };
  run_scenario(setup, [](const TensorList& a) {
    Tensor d = a[2].detach();
    Tensor w = d.as_strided({1, 1}, {1, 1});
    w.add_(a[0].sum());
    return TensorList{w * 1.0, d.as_strided({2}, {2}) * 2.0, a[1], a[2]};
  });
}
