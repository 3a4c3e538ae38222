// Eager autograd rules where our eager once differed from PyTorch 1.13, compiled: the eager
// engine now follows PyTorch, and the compiled function must follow eager (eager_oracle.h:
// outputs, aliasing, inputs after the call, version counters, gradients), under the interpreter
// and the cpp code generator with every partitioner.
#include <gtest/gtest.h>

#include "aot/eager_oracle.h"
#include "aotgrad/aotgrad.h"
#include "testing/scenario.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::expect_like_eager;
using ag::testing::leaf;
using ag::testing::OracleSetup;

namespace {

void like_eager_under_both_compilers(const std::function<OracleSetup()>& make,
                                     const ag::testing::OracleFn& fn) {
  for (const char* compiler : {"interpreter", "cpp"}) {
    SCOPED_TRACE(compiler);
    ag::AotConfig config;
    config.fw_compiler = compiler;
    expect_like_eager(make, fn, config);
  }
}

}  // namespace

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
