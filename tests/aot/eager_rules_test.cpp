// Eager autograd rules where our eager once differed from PyTorch 1.13, compiled: the eager
// engine now follows PyTorch, and the compiled function must follow eager (eager_oracle.h:
// outputs, aliasing, inputs after the call, version counters, gradients), under the interpreter
// and the cpp code generator with every partitioner.
#include <gtest/gtest.h>

#include "aot/eager_oracle.h"
#include "aot/program_fuzz.h"
#include "aotgrad/aotgrad.h"
#include "testing/scenario.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::expect_like_eager;
using ag::testing::leaf;
using ag::testing::like_eager_under_both_compilers;
using ag::testing::OracleSetup;
namespace pf = ag::testing::program_fuzz;

// v * v of a view v made under no_grad of a tensor that requires grad, then v written under
// no_grad: PyTorch's MulBackward0 has no edge to follow, so it saved neither input and its
// backward runs (the gradient goes nowhere). Eager raised the saved-value version error; the
// tracer, mirroring it, raised it in the compiled backward.
TEST(EagerRules, ANodeWhoseInputsAreAllNoGradViewsSavesNothingToCheck) {
  like_eager_under_both_compilers(
      [] {
        Tensor x = leaf({3}, 41);
        return OracleSetup{{x}, {x}};
      },
      [](std::vector<Tensor> a) {
        Tensor v;
        {
          ag::NoGradGuard no_grad;
          v = a[0].view({3});
        }
        Tensor out = v * v;
        {
          ag::NoGradGuard no_grad;
          v.add_(1.0);
        }
        return std::vector<Tensor>{out, a[0] * 3.0};
      });
  like_eager_under_both_compilers(
      [] {
        Tensor l = leaf({3}, 42);
        return OracleSetup{{l * 1.5}, {l}};
      },
      [](std::vector<Tensor> a) {
        Tensor y = a[0] * 2.0;
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
        return std::vector<Tensor>{o, y};
      });
}

// squeeze_ of a dim that is not 1 under no_grad changes no geometry, yet bumps the version. The
// compiled function bumps it after regenerating its outputs, so a returned view taken with grad
// on of a view made under no_grad looked stale and got its base's history (its gradient reached
// the input, eager's reaches nothing). AotProgramFuzz, seed 106881.
TEST(EagerRules, AViewOfANoGradViewReturnedAfterANoOpMetadataWriteGivesItsBaseNoGradient) {
  like_eager_under_both_compilers(
      [] {
        Tensor x = leaf({3, 4}, 43);
        return OracleSetup{{x}, {x}};
      },
      [](std::vector<Tensor> a) {
        Tensor v;
        {
          ag::NoGradGuard no_grad;
          ag::squeeze_(a[0], 0);
          v = a[0].view({3, 4});
        }
        return std::vector<Tensor>{v.slice(0, 0, 1, 1)};
      });
}

// AotProgramFuzz programs this branch fixed, replayed as drawn (8 attempts per seed, as
// program_fuzz_test.cpp draws them), under both compilers.
TEST(EagerRules, FuzzSeedsFixedOnBranchEagerRules) {
  for (uint64_t seed : {106881, 718510}) {
    SCOPED_TRACE(seed);
    int discarded = 0;
    std::optional<pf::Program> p = pf::draw_program(seed, 8, &discarded);
    ASSERT_TRUE(p);
    auto program = std::make_shared<const pf::Program>(*p);
    ag::testing::OracleTolerances tol;
    if (p->dtype == ag::DType::f32) tol = {1e-5, 1e-4};
    for (const char* compiler : {"interpreter", "cpp"}) {
      SCOPED_TRACE(compiler);
      ag::AotConfig config;
      config.fw_compiler = compiler;
      expect_like_eager([program] { return program->make(); },
                        [program](std::vector<Tensor> a) { return program->run(a); }, config, tol);
    }
  }
}

// y * w with only y requiring grad, then y written in place: PyTorch's MulBackward0 saves y only
// for w's gradient, which is not wanted, so backward runs (torch 1.13: x.grad = 1.5 * w's
// weights). Eager raised the saved-value version error, and the tracer mirrored it.
TEST(EagerRules, MulSavesSelfOnlyForOthersGradient) {
  like_eager_under_both_compilers(
      [] {
        Tensor x = leaf({3}, 44);
        Tensor w = leaf({3}, 45, false);
        return OracleSetup{{x, w}, {x}};
      },
      [](std::vector<Tensor> a) {
        Tensor y = a[0] * 1.5;
        Tensor o = y * a[1];
        y.add_(1.0);
        return std::vector<Tensor>{o, y};
      });
}

// mm(y, W) with only y requiring grad, then y and a plain input written in place: MmBackward0
// saves W (read by y's gradient) but not y (torch 1.13 runs backward); the plain input `b`
// written is addmm's mat1 via linear with only the bias requiring grad, which saves neither
// matrix.
TEST(EagerRules, MmAndAddmmSaveEachMatrixOnlyForTheOthersGradient) {
  like_eager_under_both_compilers(
      [] {
        Tensor x = leaf({2, 3}, 46);
        Tensor w = leaf({3, 4}, 47, false);
        Tensor m = leaf({2, 3}, 48, false);
        Tensor bias = leaf({4}, 49);
        return OracleSetup{{x, w, m, bias}, {x, bias}};
      },
      [](std::vector<Tensor> a) {
        Tensor y = a[0] * 2.0;
        Tensor o = ag::mm(y, a[1]);
        y.mul_(3.0);
        Tensor l = ag::linear(a[2], ag::t(a[1]).contiguous(), a[3]);
        a[2].add_(1.0);
        return std::vector<Tensor>{o, y, l};
      });
}

// index_add with only self requiring grad keeps its index as metadata only (read by source's
// gradient only): writing the index afterwards is no error (torch 1.13).
TEST(EagerRules, IndexAddSavesTheIndexOnlyForTheSourcesGradient) {
  like_eager_under_both_compilers(
      [] {
        Tensor x = leaf({4}, 50);
        Tensor idx = ag::from_vector(std::vector<int64_t>{0, 2}, {2});
        Tensor src = leaf({2}, 51, false);
        return OracleSetup{{x, idx, src}, {x}};
      },
      [](std::vector<Tensor> a) {
        Tensor o = ag::index_add(a[0] * 2.0, 0, a[1], a[2]);
        a[1].add_(1);
        return std::vector<Tensor>{o};
      });
}

// An autograd::grad without retain_graph inside the function through addmm with only the bias
// requiring grad: the node kept neither matrix, so nothing was freed and the caller's backward
// through it runs (torch 1.13). The compiled backward raised that the grad() freed it.
TEST(EagerRules, AGradInsideThroughAnAddmmThatSavedNothingFreesNothing) {
  like_eager_under_both_compilers(
      [] {
        Tensor x = leaf({2, 3}, 52, false);
        Tensor w = leaf({4, 3}, 53, false);
        Tensor bias = leaf({4}, 54);
        return OracleSetup{{x, w, bias}, {bias}};
      },
      [](std::vector<Tensor> a) {
        Tensor l = ag::linear(a[0], a[1], a[2]);
        Tensor g = ag::autograd::grad({l.sum()}, {a[2]})[0];
        return std::vector<Tensor>{l, g};
      });
}
