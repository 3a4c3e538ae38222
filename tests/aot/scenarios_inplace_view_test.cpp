// Scenarios (issue 4, reference §6 "Input metadata mutation"): in-place view ops (t_, transpose_,
// unsqueeze_, squeeze_, as_strided_) on inputs and intermediates, alone and mixed with data
// mutations, duplicated and aliased inputs, and aliased outputs.
// Every scenario runs eager and compiled under every partitioner configuration (scenario.h).
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/inplace_view.h"
#include "testing/scenario.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::expect_raises_like_eager;
using ag::testing::expect_unsupported;
using ag::testing::leaf;
using ag::testing::nonleaf_setup;
using ag::testing::run_scenario;
using ag::testing::ScenarioInputs;
using ag::testing::TensorList;

TEST(ScenarioInplaceView, TransposeOfInputInPlace) {
  // Reference §6 #33: metadata only; the caller's tensor gets the new geometry.
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1, false)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::t_(x);
        return x * 2.0;
      });
}

TEST(ScenarioInplaceView, TransposeOfNonLeafInPlaceTraining) {
  run_scenario(
      [] {
        return nonleaf_setup({2, 3}, 2);
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::transpose_(x, 0, 1);
        return x.sin();
      });
}

TEST(ScenarioInplaceView, UnsqueezeThenSqueezeOfInput) {
  run_scenario(
      [] {
        return TensorList{leaf({3}, 3, false), leaf({3}, 4)};
      },
      [](const TensorList& a) {
        Tensor x = a[0], y = a[1];
        ag::unsqueeze_(x, 0);
        Tensor out = x * y;
        ag::squeeze_(x, 0);  // back to the original geometry: no metadata change left
        return out;
      });
}

TEST(ScenarioInplaceView, SqueezeOfDimThatIsNotOneChangesNothing) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 5, false)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::squeeze_(x, 0);
        return x + 1.0;
      });
}

TEST(ScenarioInplaceView, AsStridedOfInputInPlace) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 3}, 6, false)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::as_strided_(x, {2, 2}, {1, 3}, 1);
        return x.exp();
      });
}

TEST(ScenarioInplaceView, MetadataThenDataMutationOfInput) {
  // Reference §6 #34.
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 7, false), leaf({3, 2}, 8)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::t_(x);
        x.select(0, 1).mul_(2.0);
        return x * a[1];
      });
}

TEST(ScenarioInplaceView, DataThenMetadataMutationOfNonLeaf) {
  run_scenario(
      [] {
        return nonleaf_setup({2, 2}, 9);
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(3.0);
        ag::t_(x);
        return x.select(0, 0) * 1.0;
      });
}

TEST(ScenarioInplaceView, TransposeOfOneInputViewsOfOthersReturned) {
  // Reference §6 #35.
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 10, false), leaf({2, 2}, 11), leaf({4}, 12)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::t_(x);
        return TensorList{a[1].t(), a[2].view({2, 2}), x + 0.0};
      });
}

TEST(ScenarioInplaceView, MetadataMutatedInputReturnedAndViewed) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 13, false)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::transpose_(x, 0, 1);
        return TensorList{x, x.select(0, 2)};
      });
}

TEST(ScenarioInplaceView, TransposeInPlaceOfIntermediate) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 14)};
      },
      [](const TensorList& a) {
        Tensor y = a[0].exp();
        ag::t_(y);
        return TensorList{y, y.select(0, 0)};
      });
}

TEST(ScenarioInplaceView, UnsqueezeInPlaceOfViewOfIntermediate) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 2}, 15)};
      },
      [](const TensorList& a) {
        Tensor y = a[0] * 2.0;
        Tensor v = y.select(1, 0);
        ag::unsqueeze_(v, 1);
        v.mul_(-1.0);
        return TensorList{y, v};
      });
}

TEST(ScenarioInplaceView, DuplicateInputTransposedInPlace) {
  // Reference §6 #59: every handle of the one tensor sees the new geometry.
  run_scenario(
      [] {
        Tensor x = leaf({2, 3}, 16, false);
        return TensorList{x, x};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::t_(x);
        return a[1] * 1.0;
      });
}

TEST(ScenarioInplaceView, AliasedInputsOneMetadataMutated) {
  // Reference §6 #49: a metadata mutation needs no synthetic base.
  run_scenario(
      [] {
        Tensor base = leaf({3, 3}, 17, false);
        return ScenarioInputs{{base.slice(0, 0, 2), base.slice(0, 1, 3)}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::t_(x);
        return TensorList{x * 2.0, a[1] * 1.0};
      });
}

TEST(ScenarioInplaceView, AliasedInputsDataAndMetadataMutated) {
  // Reference §6 #53.
  run_scenario(
      [] {
        Tensor base = leaf({3, 3}, 18, false);
        return ScenarioInputs{{base.slice(0, 0, 2), base.slice(0, 1, 3)}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0], y = a[1];
        x.mul_(2.0);
        ag::t_(y);
        return y + 0.0;
      });
}

TEST(ScenarioInplaceView, LeafThatRequiresGradTransposedUnderNoGrad) {
  // Eager gives the leaf's gradient its new geometry: its AccumulateGrad, made at the use, takes
  // the [3, 2] gradient. Refused until the graph passed it as it is (geometry_update, fit=False).
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 19), leaf({3, 2}, 20)};
      },
      [](const TensorList& a) {
        Tensor w = a[0];
        {
          ag::NoGradGuard no_grad;
          ag::t_(w);
        }
        return (w * a[1]).sum();
      });
}

TEST(ScenarioInplaceView, LeafNotRequiringGradTransposedUnderNoGrad) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 19, false), leaf({3, 2}, 20)};
      },
      [](const TensorList& a) {
        Tensor w = a[0];
        {
          ag::NoGradGuard no_grad;
          ag::t_(w);
        }
        return (w * a[1]).sum();
      });
}

TEST(ScenarioInplaceView, TransposeTwiceCancels) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 21, false), leaf({2, 3}, 22)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::t_(x);
        ag::t_(x);
        return x * a[1];
      });
}

TEST(ScenarioRaises, TransposeInPlaceOfLeafThatRequiresGradRaisesLikeEager) {
  expect_raises_like_eager(
      [] {
        return TensorList{leaf({2, 3}, 23)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        ag::t_(x);
        return x;
      },
      "leaf");
}

TEST(ScenarioInplaceView, TransposeInPlaceOfViewOfInputMovesItsVersion) {
  // Found by AotProgramFuzz (seed 2696): the version counter lives on the storage, so eager's
  // transpose_ of a view of the input moves the input's counter; the compiled call did not.
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 21, false)};
      },
      [](const TensorList& a) {
        Tensor v = a[0].slice(0, 0, 2);
        ag::transpose_(v, 0, 1);
        return v * 2.0;
      });
}

TEST(ScenarioInplaceView, UnsqueezeInPlaceOfDetachedInputUnderNoGradMovesItsVersion) {
  run_scenario([] { return TensorList{leaf({6}, 22)}; },
               [](const TensorList& a) {
                 Tensor d = a[0].detach();
                 {
                   ag::NoGradGuard no_grad;
                   ag::unsqueeze_(d, 0);
                 }
                 return TensorList{d * 3.0, a[0] * 2.0};
               });
}
