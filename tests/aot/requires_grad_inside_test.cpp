// requires_grad_() inside a compiled function (issue 10, item 12; reference §6 #7 and #31,
// PyTorch's test_input_inplace_requires_grad_true and test_some_output_requires_grad_input_doesnt):
// on an input, the caller's tensor ends up requiring grad and receives its gradient; on an
// intermediate or a view, the tensor becomes a leaf of its own, through which no gradient flows.
// Everything as eager, under every partitioner.
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "testing/scenario.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::expect_raises_like_eager;
using ag::testing::expect_unsupported;
using ag::testing::leaf;
using ag::testing::run_scenario;
using ag::testing::TensorList;

TEST(RequiresGradInside, PyTorchsInputInplaceRequiresGradTrue) {
  run_scenario(
      [] {
        return TensorList{leaf({3, 3}, 1, false), leaf({3, 3}, 2)};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.requires_grad_(true);
        return TensorList{x * 3.0, a[1] * 4.0};
      });
}

TEST(RequiresGradInside, InputTurnedOnAfterAFirstUse) {
  // The use before the flip records nothing; the one after it does.
  run_scenario([] { return TensorList{leaf({3}, 3, false)}; },
               [](const TensorList& a) {
                 Tensor x = a[0];
                 Tensor before = x * 2.0;
                 x.requires_grad_();
                 return TensorList{before, x.sin(), x};
               });
}

TEST(RequiresGradInside, InputTurnedOffAfterAUse) {
  // Eager's AccumulateGrad skips a leaf that no longer requires grad: no gradient for the input.
  run_scenario([] { return TensorList{leaf({3}, 4)}; },
               [](const TensorList& a) {
                 Tensor x = a[0];
                 Tensor y = x * 2.0;
                 x.requires_grad_(false);
                 return TensorList{y, x * 3.0};
               });
}

TEST(RequiresGradInside, PyTorchsSomeOutputRequiresGradInputDoesnt) {
  auto f = [](const TensorList& a) {
    Tensor v = a[0].view({-1});
    v.requires_grad_(true);
    return v;
  };
  run_scenario([] { return TensorList{leaf({3, 3}, 5, false), leaf({3, 3}, 6)}; }, f);
  // The returned view is a leaf of its own: backward fills its .grad(), as eagerly.
  Tensor eager_out = f({leaf({3, 3}, 5, false), leaf({3, 3}, 6)});
  Tensor compiled_out = ag::aot_function(f)(TensorList{leaf({3, 3}, 5, false), leaf({3, 3}, 6)});
  for (Tensor out : {eager_out, compiled_out}) {
    EXPECT_TRUE(out.requires_grad());
    EXPECT_TRUE(out.is_leaf());
    EXPECT_TRUE(out.is_view());
    (out * 2.0).sum().backward();
    EXPECT_TRUE(ag::testing::allclose(out.grad(), ag::full({9}, 2.0, ag::DType::f64), 0, 0));
  }
}

TEST(RequiresGradInside, IntermediateMadeALeafAndReturned) {
  run_scenario([] { return TensorList{leaf({3}, 7, false)}; },
               [](const TensorList& a) {
                 Tensor y = a[0] * 2.0;
                 y.requires_grad_();
                 return TensorList{y, a[0] + 1.0};
               });
}

TEST(RequiresGradInside, IntermediateMadeALeafAndUsed) {
  // Gradients stop at the new leaf: none reaches the input the intermediate came from, even when
  // that input requires grad (the intermediate was made under no_grad).
  run_scenario(
      [] {
        return TensorList{leaf({3}, 8), leaf({3}, 9)};
      },
      [](const TensorList& a) {
        Tensor y;
        {
          ag::NoGradGuard no_grad;
          y = a[0] * 2.0;
        }
        y.requires_grad_();
        return TensorList{(y * y * a[1]).sum(), a[0] * 1.0};
      });
}

TEST(RequiresGradInside, LeafMadeInsideReturnedAndUsedIsRefused) {
  // Eager's backward would fill the returned tensor's .grad(); the compiled backward cannot.
  expect_unsupported([] { return TensorList{leaf({3}, 10, false)}; },
                     [](const TensorList& a) {
                       Tensor y = a[0] * 2.0;
                       y.requires_grad_();
                       return TensorList{y, y * 3.0};
                     },
                     "made a leaf that requires grad");
}

TEST(RequiresGradInside, EagersErrors) {
  // A non-leaf cannot be turned off; a leaf that requires grad cannot be written in place.
  expect_raises_like_eager([] { return TensorList{leaf({3}, 11)}; },
                           [](const TensorList& a) {
                             Tensor y = a[0] * 2.0;
                             y.requires_grad_(false);
                             return y;
                           },
                           "you can only change requires_grad flags of leaf variables");
  expect_raises_like_eager([] { return TensorList{leaf({3}, 12, false)}; },
                           [](const TensorList& a) {
                             Tensor y = a[0] * 2.0;
                             y.requires_grad_();
                             y.mul_(2.0);
                             return y;
                           },
                           "a leaf Variable that requires grad is being used in an in-place");
  expect_raises_like_eager([] { return TensorList{leaf({3}, 13, false)}; },
                           [](const TensorList& a) {
                             Tensor x = a[0];
                             x.requires_grad_();
                             x.mul_(2.0);
                             return x;
                           },
                           "a leaf Variable that requires grad is being used in an in-place");
}

TEST(RequiresGradInside, InputWrittenThenTurnedOnIsRefused) {
  expect_unsupported([] { return TensorList{leaf({3}, 14, false)}; },
                     [](const TensorList& a) {
                       Tensor x = a[0];
                       x.add_(1.0);
                       x.requires_grad_();
                       return x * 2.0;
                     },
                     "after the function wrote to it in place");
}

// Tensor::requires_grad() asked inside a compiled function answers as eager does. A traced view's
// _base is the root of its storage, so a view past a detach() (eager: a view of the detached
// tensor, which requires no grad) answered true; the tracer now answers for its views' bases.
// Code that branches on requires_grad() traced the other branch than eager runs.
TEST(RequiresGradInside, RequiresGradAskedInsideTheFunctionIsEagers) {
  std::vector<bool> answers;
  auto fn = [&answers](const Tensor& x) {
    Tensor d = x.detach();
    Tensor v;
    {
      ag::NoGradGuard no_grad;
      v = x.select(0, 1);  // made under no_grad: requires grad through its base
    }
    Tensor y = x * 2.0;
    answers = {
        d.requires_grad(), d.select(0, 1).requires_grad(), d.t().unsqueeze(0).requires_grad(),
        v.requires_grad(), y.detach().t().requires_grad(), y.select(1, 0).requires_grad()};
    return d.select(0, 1).requires_grad() ? y * 3.0 : y * 5.0;
  };
  Tensor x = leaf({3, 3}, 1);
  Tensor eager_out = fn(x);
  std::vector<bool> eager = answers;
  EXPECT_EQ(eager, (std::vector<bool>{false, false, false, true, false, true}));
  Tensor compiled_out = ag::aot_function(fn)(x);
  EXPECT_EQ(answers, eager);
  EXPECT_TRUE(ag::testing::allclose(compiled_out, eager_out, 0, 0));
}
