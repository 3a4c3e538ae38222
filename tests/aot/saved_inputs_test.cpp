// What the backward node of a compiled call keeps of the inputs it saves (aot/runtime.cpp,
// CompiledBackward): the caller's tensor itself, as PyTorch's SavedVariable keeps a saved input
// that is not an output of its node. It is held exactly as long as the graph, still checked
// against in-place writes, and never makes a reference cycle with the outputs.
#include <gtest/gtest.h>

#include <string>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

Tensor sin_of_product(const Tensor& a, const Tensor& b) { return (a * b).sin().sum(); }

}  // namespace

// The backward needs a and b (mul's VJP): the node holds the callers' tensors, not aliases of
// them, and lets go of them when the backward has run.
TEST(SavedInputs, TheCallersTensorsAreHeldUntilTheBackwardRuns) {
  Tensor a = ag::testing::test_input({8}, -1, 1, 1).requires_grad_();
  Tensor b = ag::testing::test_input({8}, -1, 1, 2).requires_grad_();
  auto f = ag::aot_function(sin_of_product);
  const long before_a = a.impl_ptr().use_count(), before_b = b.impl_ptr().use_count();
  Tensor out = f(a, b);
  EXPECT_GT(a.impl_ptr().use_count(), before_a) << f.graphs().saved_report;
  EXPECT_GT(b.impl_ptr().use_count(), before_b) << f.graphs().saved_report;
  out.backward();
  EXPECT_EQ(a.impl_ptr().use_count(), before_a);
  EXPECT_EQ(b.impl_ptr().use_count(), before_b);
  Tensor ea = ag::testing::test_input({8}, -1, 1, 1).requires_grad_();
  Tensor eb = ag::testing::test_input({8}, -1, 1, 2).requires_grad_();
  sin_of_product(ea, eb).backward();
  EXPECT_TRUE(ag::testing::allclose(a.grad(), ea.grad(), 1e-6, 1e-6));
  EXPECT_TRUE(ag::testing::allclose(b.grad(), eb.grad(), 1e-6, 1e-6));
}

// Dropping the output without a backward frees the node and with it the saved inputs.
TEST(SavedInputs, DroppingTheOutputReleasesThem) {
  Tensor a = ag::testing::test_input({8}, -1, 1, 3).requires_grad_();
  Tensor b = ag::testing::test_input({8}, -1, 1, 4);
  auto f = ag::aot_function(sin_of_product);
  const long before = b.impl_ptr().use_count();
  { Tensor out = f(a, b); }
  EXPECT_EQ(a.impl_ptr().use_count(), 1);
  EXPECT_EQ(b.impl_ptr().use_count(), before);
}

// A saved input written in place after the call fails the backward with eager's version error,
// naming the saved value.
TEST(SavedInputs, AnInPlaceWriteAfterTheCallIsStillCaught) {
  Tensor a = ag::testing::test_input({8}, -1, 1, 5).requires_grad_();
  Tensor b = ag::testing::test_input({8}, -1, 1, 6);
  auto f = ag::aot_function(sin_of_product);
  Tensor out = f(a, b);
  {
    ag::NoGradGuard no_grad;  // b is a leaf that requires grad
    b.mul_(2.0);
  }
  try {
    out.backward();
    FAIL() << "expected the version error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("has been modified by an inplace operation"),
              std::string::npos)
        << e.what();
  }
}

// An input the call both saves for the backward and returns a view of: the view's history is
// the input's, not the node's, and once every result is gone no reference to the input is
// left (no cycle between the node and the caller's tensor).
TEST(SavedInputs, AnInputThatIsAlsoAResultMakesNoCycle) {
  Tensor leaf = ag::testing::test_input({4}, -1, 1, 7).requires_grad_();
  Tensor x = leaf * 1.5;  // a non-leaf: the call's outputs may alias it
  auto f = ag::aot_function([](const Tensor& t) {
    return std::make_tuple(t.view({2, 2}), (t * t).sin());
  });
  {
    auto [view, y] = f(x);
    EXPECT_TRUE(view.is_view());
    (ag::sum(view) + ag::sum(y)).backward();
    Tensor expected = 1.0 + ag::cos(x.detach() * x.detach()) * 2.0 * x.detach();
    EXPECT_TRUE(ag::testing::allclose(leaf.grad(), expected * 1.5, 1e-5, 1e-5));
  }
  EXPECT_EQ(x.impl_ptr().use_count(), 1);
  EXPECT_EQ(leaf.impl_ptr().use_count(), 1);
}
