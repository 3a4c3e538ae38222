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
