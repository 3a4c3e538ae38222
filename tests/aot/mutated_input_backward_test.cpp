// Inputs the compiled call mutates: the backward reads their values from before the mutation
// (the runtime hands the forward a copy of each), under every partitioner and budget, and
// gradients match eager.
#include <gtest/gtest.h>

#include <string>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

struct Setting {
  std::string partitioner;
  double budget;
};
const Setting kSettings[] = {{"default", 1.0}, {"min_cut", 1.0}, {"min_cut", 0.5}, {"min_cut", 0.0}};

// Runs `fn` eagerly and compiled on identical non-leaf inputs (leaf * 1.5), backpropagates the
// sum of the first output, and compares outputs, the inputs after the call and leaf gradients.
void expect_matches_eager(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                          const std::vector<std::vector<int64_t>>& shapes) {
  for (const Setting& s : kSettings) {
    SCOPED_TRACE(s.partitioner + " at budget " + std::to_string(s.budget));
    std::vector<Tensor> eager_leaves, compiled_leaves, eager_in, compiled_in;
    for (size_t i = 0; i < shapes.size(); ++i) {
      eager_leaves.push_back(ag::testing::test_input(shapes[i], -1, 1, 30 + i));
      compiled_leaves.push_back(ag::testing::test_input(shapes[i], -1, 1, 30 + i));
      eager_in.push_back(eager_leaves.back() * 1.5);
      compiled_in.push_back(compiled_leaves.back() * 1.5);
    }
    auto compiled =
        ag::aot_function(fn, {.partitioner = s.partitioner, .activation_memory_budget = s.budget});
    Tensor eager_out = fn(eager_in)[0];
    Tensor compiled_out;
    ASSERT_NO_THROW(compiled_out = compiled(compiled_in)[0]);
    EXPECT_TRUE(ag::testing::allclose(compiled_out, eager_out, 1e-12, 1e-12));
    for (size_t i = 0; i < shapes.size(); ++i)
      EXPECT_TRUE(ag::testing::allclose(compiled_in[i], eager_in[i], 1e-12, 1e-12)) << "input " << i;
    ag::sum(eager_out).backward();
    ASSERT_NO_THROW(ag::sum(compiled_out).backward()) << compiled.graphs().saved_report;
    for (size_t i = 0; i < shapes.size(); ++i)
      EXPECT_TRUE(ag::testing::allclose(compiled_leaves[i].grad(), eager_leaves[i].grad(), 1e-12,
                                        1e-12))
          << "grad of leaf " << i << "\nbackward:\n" << compiled.graphs().backward;
  }
}

}  // namespace

// mul_'s VJP needs the old self for the gradient of `other`.
TEST(MutatedInputs, InPlaceMulThatNeedsTheOldValue) {
  expect_matches_eager(
      [](const std::vector<Tensor>& a) {
        Tensor x = a[0];
        x.mul_(a[1]);
        return std::vector<Tensor>{ag::exp(a[1]) + x};
      },
      {{3}, {3}});
}

// The old value feeds a pointwise chain that min_cut would like to recompute in the backward.
TEST(MutatedInputs, OldValueFeedsARecomputableChain) {
  expect_matches_eager(
      [](const std::vector<Tensor>& a) {
        Tensor x = a[0];
        Tensor y = ag::sin(x * 2.0) * a[1];
        x.mul_(a[1]);
        return std::vector<Tensor>{y + x};
      },
      {{2, 3}, {2, 3}});
}
