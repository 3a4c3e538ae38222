// Scenarios (issue 4, reference §6 "Output aliasing"): outputs that are inputs, views of inputs,
// views of intermediates, outputs aliasing each other, one tensor returned twice, view chains,
// views made under no_grad, detach() mixes and multi-output views (split / unbind / chunk).
// Every scenario runs eager and compiled under every partitioner configuration (scenario.h).
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/indexing.h"
#include "testing/scenario.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::leaf;
using ag::testing::run_scenario;
using ag::testing::ScenarioInputs;
using ag::testing::TensorList;

// ---- outputs that are inputs, or views of inputs ----

TEST(ScenarioOutputAlias, InputReturnedAsIs) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1)};
      },
      [](const TensorList& a) { return a[0]; });
}

TEST(ScenarioOutputAlias, InputReturnedWithComputedOutput) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1), leaf({3}, 2, false)};
      },
      [](const TensorList& a) {
        return TensorList{a[1], a[0].sin() + a[1], a[0]};
      });
}

TEST(ScenarioOutputAlias, InputReturnedTwice) {
  run_scenario([] { return TensorList{leaf({4}, 3)}; },
               [](const TensorList& a) {
                 return TensorList{a[0], a[0], a[0] * 2.0};
               });
}

TEST(ScenarioOutputAlias, TransposeOfInput) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 4)};
      },
      [](const TensorList& a) { return a[0].t(); });
}

TEST(ScenarioOutputAlias, SeveralViewsOfOneInput) {
  run_scenario(
      [] {
        return TensorList{leaf({4, 3}, 5)};
      },
      [](const TensorList& a) {
        return TensorList{a[0].slice(0, 1, 3), a[0].select(1, 2), a[0].view({12}), a[0].exp()};
      });
}

TEST(ScenarioOutputAlias, ViewsOfTwoDifferentInputs) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 2}, 6), leaf({2, 2}, 7, false)};
      },
      [](const TensorList& a) {
        return TensorList{a[1].t(), a[0].select(0, 1)};
      });
}

TEST(ScenarioOutputAlias, ViewOfInputNotRequiringGradInference) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 2}, 8, false)};
      },
      [](const TensorList& a) {
        return TensorList{a[0].unsqueeze(0), a[0] + 1.0};
      },
      {.expect_inference = true});
}

TEST(ScenarioOutputAlias, ViewChainOfInput) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 6}, 9)};
      },
      [](const TensorList& a) {
        return a[0].view({3, 4}).transpose(0, 1).slice(0, 1, 3).select(1, 2);
      });
}

TEST(ScenarioOutputAlias, AliasAndAsStridedOfInput) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 3}, 10)};
      },
      [](const TensorList& a) {
        return TensorList{ag::alias(a[0]), a[0].as_strided({2, 2}, {3, 1}, 4)};
      });
}

TEST(ScenarioOutputAlias, ExpandOfInput) {
  // In-place on the outputs afterwards raises in eager (an expanded view): the compiled outputs
  // must raise too.
  run_scenario(
      [] {
        return TensorList{leaf({3, 1}, 11)};
      },
      [](const TensorList& a) {
        return a[0].expand({3, 4});
      });
}

TEST(ScenarioOutputAlias, ContiguousOfContiguousInputIsTheInput) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 12)};
      },
      [](const TensorList& a) {
        return TensorList{a[0].contiguous(), a[0].t().contiguous()};
      });
}

TEST(ScenarioOutputAlias, ReshapeViewsOrCopies) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 13)};
      },
      [](const TensorList& a) {
        return TensorList{a[0].reshape({3, 2}), a[0].t().reshape({6})};
      });
}

// ---- views of intermediates ----

TEST(ScenarioOutputAlias, SingleViewOfIntermediate) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1)};
      },
      [](const TensorList& a) { return (a[0] * 2.0).t(); });
}

TEST(ScenarioOutputAlias, TwoViewsOfOneIntermediate) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 2)};
      },
      [](const TensorList& a) {
        Tensor y = a[0].exp();
        return TensorList{y.t(), y.select(0, 0)};
      });
}

TEST(ScenarioOutputAlias, IntermediateAndItsView) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 3)};
      },
      [](const TensorList& a) {
        Tensor y = a[0].exp();
        return TensorList{y, y.slice(1, 0, 2)};
      });
}

TEST(ScenarioOutputAlias, ViewOfIntermediateThenIntermediate) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 4)};
      },
      [](const TensorList& a) {
        Tensor y = a[0].exp();
        return TensorList{y.view({6}), y};
      });
}

TEST(ScenarioOutputAlias, IntermediateViewIntermediate) {
  run_scenario([] { return TensorList{leaf({3}, 5)}; },
               [](const TensorList& a) {
                 Tensor y = a[0] * a[0];
                 return TensorList{y, y.view({3, 1}), y};
               });
}

TEST(ScenarioOutputAlias, SameIntermediateReturnedTwice) {
  run_scenario([] { return TensorList{leaf({3}, 6)}; },
               [](const TensorList& a) {
                 Tensor y = a[0].sin();
                 return TensorList{y, y};
               });
}

TEST(ScenarioOutputAlias, ViewChainOfIntermediate) {
  run_scenario(
      [] {
        return TensorList{leaf({4, 3}, 7)};
      },
      [](const TensorList& a) {
        Tensor y = a[0].tanh();
        Tensor v = y.t().slice(1, 1, 3).unsqueeze(0);
        return TensorList{v, v.squeeze(0).select(0, 1)};
      });
}

TEST(ScenarioOutputAlias, ViewsOfTwoIntermediates) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 2}, 8), leaf({2, 2}, 9)};
      },
      [](const TensorList& a) {
        Tensor y = a[0] + a[1], z = a[0] * a[1];
        return TensorList{y.t(), z.t(), y.select(0, 1), z.select(1, 0)};
      });
}

TEST(ScenarioOutputAlias, ViewOfIntermediateNotRequiringGrad) {
  // Reference §6 #70: the intermediate comes only from inputs that do not require grad.
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 10), leaf({2, 3}, 11, false)};
      },
      [](const TensorList& a) {
        Tensor c = a[1] * 2.0;
        return TensorList{c.t(), c.select(0, 0), a[0] * c};
      });
}

TEST(ScenarioOutputAlias, ViewsOfIntermediateInference) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 12, false)};
      },
      [](const TensorList& a) {
        Tensor y = a[0].exp();
        return TensorList{y.t(), y, y.view({6})};
      },
      {.expect_inference = true});
}

// ---- no_grad and detach() mixes ----

TEST(ScenarioOutputAlias, ViewOfInputMadeUnderNoGrad) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1)};
      },
      [](const TensorList& a) {
        Tensor v;
        {
          ag::NoGradGuard no_grad;
          v = a[0].t();
        }
        return TensorList{v, a[0] * 2.0};
      });
}

TEST(ScenarioOutputAlias, ViewOfIntermediateMadeUnderNoGrad) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 2)};
      },
      [](const TensorList& a) {
        Tensor y = a[0].exp();
        Tensor v;
        {
          ag::NoGradGuard no_grad;
          v = y.select(0, 1);
        }
        return TensorList{y, v};
      });
}

TEST(ScenarioOutputAlias, ViewOfInputUnderOuterNoGradStillRequiresGrad) {
  // Reference §6 #14: a view of an input that requires grad, returned from a call under no_grad.
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 3)};
      },
      [](const TensorList& a) {
        return TensorList{a[0].t(), a[0] * 2.0};
      },
      {.no_grad = true, .expect_inference = true});
}

TEST(ScenarioOutputAlias, DetachOfInputAndComputedOutput) {
  run_scenario([] { return TensorList{leaf({3}, 4)}; },
               [](const TensorList& a) {
                 return TensorList{a[0].detach(), a[0] * 2.0};
               });
}

TEST(ScenarioOutputAlias, DetachedAndAttachedViewsOfIntermediate) {
  // Reference §6 #69: both alias one intermediate; only one requires grad.
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 5)};
      },
      [](const TensorList& a) {
        Tensor y = a[0].exp();
        return TensorList{y.t(), y.detach()};
      });
}

TEST(ScenarioOutputAlias, OutputAndItsDetach) {
  run_scenario([] { return TensorList{leaf({3}, 6)}; },
               [](const TensorList& a) {
                 Tensor y = a[0].sin();
                 return TensorList{y, y.detach()};
               });
}

TEST(ScenarioOutputAlias, DetachTakenBeforeInputMutated) {
  // Reference §6 #76: tmp = a.detach(); a.mul_(2); return a, tmp.
  run_scenario(
      [] {
        Tensor l = leaf({3}, 7);
        return ScenarioInputs{{l * 1.0}, {l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        Tensor tmp = x.detach();
        x.mul_(2.0);
        return TensorList{x, tmp};
      });
}

// ---- input mutation together with aliased outputs ----

TEST(ScenarioOutputAlias, ViewOfMutatedInput) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1, false), leaf({3}, 2)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.add_(1.0);
        return TensorList{x.select(0, 1), x.t(), x.sum() * a[1]};
      });
}

TEST(ScenarioOutputAlias, ViewOfMutatedNonLeafInput) {
  run_scenario(
      [] {
        Tensor l = leaf({2, 3}, 3);
        return ScenarioInputs{{l.exp()}, {l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        return x.t();
      });
}

TEST(ScenarioOutputAlias, MutatedViewOfInputReturned) {
  run_scenario([] { return TensorList{leaf({4}, 4, false)}; },
               [](const TensorList& a) {
                 Tensor v = a[0].slice(0, 1, 3);
                 v.add_(1.0);
                 return v;
               });
}

TEST(ScenarioOutputAlias, ViewOfDuplicatedInputReturned) {
  run_scenario(
      [] {
        Tensor x = leaf({2, 3}, 6);
        return TensorList{x, x};
      },
      [](const TensorList& a) {
        return TensorList{a[1].t(), a[0] * 2.0};
      });
}

TEST(ScenarioOutputAlias, AllAliasKindsTogether) {
  // Reference §6 #54 / #75: a mutated input, a view of it, a view of another input, and views
  // of an intermediate aliasing each other.
  run_scenario(
      [] {
        Tensor l = leaf({2, 2}, 5);
        return ScenarioInputs{{leaf({2, 2}, 4, false), l * 1.0}, {l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0], y = a[1];
        x.add_(y);
        Tensor z = (x * y).exp();
        return TensorList{x.t(), y.view({4}), z.t(), z.select(0, 0), x};
      });
}

// ---- multi-output views ----

TEST(ScenarioOutputAlias, SplitOfInputReturned) {
  run_scenario(
      [] {
        return TensorList{leaf({5, 2}, 1)};
      },
      [](const TensorList& a) { return ag::split(a[0], 2); });
}

TEST(ScenarioOutputAlias, UnbindOfIntermediateReturned) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 2}, 2)};
      },
      [](const TensorList& a) { return ag::unbind(a[0].exp(), 1); });
}

TEST(ScenarioOutputAlias, ChunkOfIntermediateWithIntermediate) {
  run_scenario(
      [] {
        return TensorList{leaf({4, 3}, 3)};
      },
      [](const TensorList& a) {
        Tensor y = a[0] * 3.0;
        TensorList pieces = ag::chunk(y, 2, 0);
        pieces.push_back(y);
        return pieces;
      });
}

TEST(ScenarioOutputAlias, PieceOfSplitMutatedWritesInput) {
  run_scenario(
      [] {
        return TensorList{leaf({4, 2}, 4, false)};
      },
      [](const TensorList& a) {
        TensorList pieces = ag::split(a[0], 2);
        pieces[1].mul_(10.0);
        return a[0] + 1.0;
      });
}

TEST(ScenarioOutputAlias, PieceOfUnbindOfIntermediateMutated) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 2}, 5)};
      },
      [](const TensorList& a) {
        Tensor y = a[0] * 2.0;
        TensorList rows = ag::unbind(y, 0);
        {
          // With grad mode on, eager forbids writing a piece of unbind (autograd_view_rules_test).
          ag::NoGradGuard no_grad;
          rows[2].add_(1.0);
        }
        return TensorList{y.sum(), rows[0]};
      });
}

TEST(ScenarioOutputAlias, SplitWithSizesPiecesUsedAndOneReturned) {
  run_scenario([] { return TensorList{leaf({6}, 6)}; },
               [](const TensorList& a) {
                 TensorList p = ag::split_with_sizes(a[0], {1, 2, 3});
                 return TensorList{p[2], p[0] * p[1].sum()};
               });
}

TEST(ScenarioOutputAlias, TwoEqualDotProductsAreTwoTensors) {
  // Found by AotProgramFuzz (seed 58182): 1-D matmul is a squeeze of an mm; min_cut's CSE kept
  // the two squeezes (graph outputs) but merged the two mms, so both outputs viewed one tensor.
  run_scenario([] { return TensorList{leaf({3}, 32)}; },
               [](const TensorList& a) {
                 return TensorList{a[0].matmul(a[0]), a[0].matmul(a[0])};
               });
}

TEST(ScenarioOutputAlias, NoGradViewOfIntermediateWrittenThroughAnotherReturnedView) {
  // Found by AotProgramFuzz (seeds 104554, 124949): the base's new value is a view op's result in
  // the graph, a view of the backend's buffer; the no_grad view replayed from it asked that
  // buffer whether it requires grad, and was returned with requires_grad() false.
  run_scenario(
      [] {
        return TensorList{leaf({3}, 5)};
      },
      [](const TensorList& a) {
        Tensor y = a[0] * 2.0;
        Tensor r = y.reshape({3, 1});
        ag::tanh_(r);
        Tensor v;
        {
          ag::NoGradGuard no_grad;
          v = y.unsqueeze(1);
        }
        return TensorList{v, r};
      });
}

// ---- one view returned twice ----

// Eager returns the very tensor twice. The runtime regenerated each output on its own, so the
// compiled function returned two views (PyTorch's AOTAutograd does too); now capture records an
// output that is an earlier one (OutputAliasInfo::same_as) and the runtime returns that one again:
// a metadata change or requires_grad_ on one is seen on the other, as in eager.
TEST(ScenarioOutputAlias, ViewOfAnInputReturnedTwiceIsOneTensor) {
  run_scenario(
      [] {
        Tensor l = leaf({2, 6, 3}, 3);
        return ScenarioInputs{{l}, {l}};
      },
      [](const TensorList& a) {
        Tensor v = a[0].select(0, 1);
        return TensorList{v, v};
      });
}

TEST(ScenarioOutputAlias, ViewsOfAnIntermediateReturnedTwiceAreOneTensorEach) {
  run_scenario(
      [] {
        Tensor l = leaf({2, 6, 3}, 3);
        return ScenarioInputs{{l}, {l}};
      },
      [](const TensorList& a) {
        Tensor y = a[0] * 2.0;
        Tensor v = y.select(0, 1);
        Tensor w = v.t();
        return TensorList{v, w, v, y, w, y.view({-1})};
      });
}

// Views made after an input's geometry changed under no_grad (OutputAliasInfo::own_views_of_input,
// MetadataMutation.AsStridedOfAViewInputAfterItsGeometryChangedUnderNoGradReadsTheNewGeometry):
// returned twice, of an input that is no view, of an input passed twice.
TEST(ScenarioOutputAlias, ViewsMadeAfterAnInputGeometryChangedUnderNoGrad) {
  run_scenario(
      [] {
        Tensor l = leaf({2, 6, 3}, 3);
        return ScenarioInputs{{l.slice(2, 1, 2)}, {l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        {
          ag::NoGradGuard no_grad;
          ag::unsqueeze_(x, 1);
        }
        Tensor v = x.as_strided({2, 2}, {2, 1});
        return TensorList{v, v, v.t(), x.select(2, 1)};
      });
  run_scenario(
      [] {
        Tensor l = leaf({3, 3}, 3);
        return ScenarioInputs{{l * 2.0}, {l}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        {
          ag::NoGradGuard no_grad;
          ag::t_(x);
        }
        Tensor u = x.select(0, 1);
        return TensorList{u, x.as_strided({2, 2}, {1, 3}, 1), u * 2.0};
      });
  run_scenario(
      [] {
        Tensor l = leaf({3, 4}, 3);
        Tensor y = l * 2.0;
        return ScenarioInputs{{y, y}, {l}};
      },
      [](const TensorList& a) {
        Tensor x = a[1];
        {
          ag::NoGradGuard no_grad;
          ag::t_(x);
        }
        return TensorList{a[0].select(0, 1), x.slice(0, 1, 3)};
      });
}

// A root-like output (an intermediate after as_strided_) and a view of it whose chain a write
// rebased onto an as_strided of the root: both chains start with as_strided, with other
// arguments, so the view is no view of the output by its steps (matched by op alone, it was
// regenerated as t() of the output, with the wrong geometry).
TEST(ScenarioOutputAlias, ViewRebasedAfterAWriteIsNotDerivedFromARootLikeOutputByOpAlone) {
  // With the write (the chain rebased) and without it (the chain extends the output's).
  for (bool write : {true, false})
    run_scenario(
        [] {
          return TensorList{leaf({4, 4}, 3)};
        },
        [write](const TensorList& a) {
          Tensor y = a[0] * 2.0;
          ag::as_strided_(y, {2, 2}, {4, 1}, 0);
          Tensor o = y.as_strided({2, 2}, {1, 4}, 5).t();
          if (write) y.add_(1.0);
          return TensorList{y, o};
        });
}

// ---- a detach() result changed in place, returned ----

// Eager's detach() result has no _base, nor does it gain one from an in-place geometry op; its
// fake is a view of the storage's root, so the runtime returned a view (AotProgramFuzz seeds
// 100684, 102227, 104880, found once the oracle compared is_view and identity too). The tracer
// marks such steps (ViewStep::plain); the runtime drops the base they would give, and capture
// returns a lone one as a plain graph output.
TEST(ScenarioOutputAlias, DetachedTensorChangedInPlaceIsNoView) {
  run_scenario(
      [] {
        Tensor l = leaf({3}, 3);
        return ScenarioInputs{{l}, {l}};
      },
      [](const TensorList& a) {
        Tensor d = a[0].detach();
        ag::unsqueeze_(d, 1);
        return TensorList{d, ag::where(d.gt(0.0), d, a[0]), d.sum({0}, true)};
      });
  run_scenario(
      [] {
        Tensor l = leaf({6, 2}, 4, false);
        return ScenarioInputs{{(l * 1.0).view({6, 2, 1})}, {l}};
      },
      [](const TensorList& a) {
        Tensor c = a[0].clone();
        Tensor d = (c + a[0].sum({0}, true)).detach();
        ag::relu_(d);
        ag::transpose_(d, 1, 2);
        return TensorList{d, c, a[0]};
      });
}

// Found by AotProgramFuzz (seed 833509) once a view returned twice became one tensor: the
// gradient of a permuted view of an intermediate reaches the intermediate's tangent permuted, and
// the backward graph, traced with a contiguous tangent, ran view's VJP (a view) on it and raised.
// The runtime now lays each tangent out as the backward graph was traced for (PyTorch's runtime
// makes tangents contiguous).
TEST(ScenarioOutputAlias, PermutedViewOfAnIntermediateGivesAContiguousTangent) {
  run_scenario(
      [] {
        Tensor l = leaf({4}, 3);
        return ScenarioInputs{{l}, {l}};
      },
      [](const TensorList& a) {
        Tensor p = (a[0].view({2, 2}) + 2.0).permute({1, 0});
        return TensorList{p, p};
      });
}
