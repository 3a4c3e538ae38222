// PyTorch 1.13 as the oracle for a custom autograd Function: the straight-through clamp of
// tests/custom/torch_fixture/make_fixture.py, written with aotgrad::autograd::Function, gives
// PyTorch's outputs and gradients eagerly and compiled under both partitioners. Its backward is
// not the derivative of its forward (the clamp is passed straight through) and w's gradient is
// returned at x's shape, so the numbers hold only if the user's backward (and PyTorch's summing
// of a broadcast gradient down to its input) is what runs.
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/function.h"
#include "aotgrad/npy.h"
#include "testing/compare.h"

namespace aotgrad::testing {
namespace {

struct StraightThroughClamp : autograd::Function<StraightThroughClamp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w) {
    ctx->save_for_backward({x, w});
    return clamp(x * w, Scalar(-1.0), Scalar(1.0)) * sign(w);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    variable_list s = ctx->get_saved_variables();
    Tensor sw = sign(s[1]);
    return {grads[0] * sw * s[1], grads[0] * sw * s[0]};
  }
};

Tensor fixture(const std::string& name) {
  return read_npy(AOTGRAD_TEST_DATA "/../custom/torch_fixture/" + name + ".npy");
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-12) << what << " element " << i;
}

TEST(CustomFunctionTorch, MatchesPyTorchEagerAndCompiled) {
  auto fn = [](const Tensor& x, const Tensor& w) { return StraightThroughClamp::apply(x, w); };
  for (std::string mode : {"eager", "default", "min_cut"}) {
    SCOPED_TRACE(mode);
    Tensor x = fixture("x").requires_grad_(), w = fixture("w").requires_grad_();
    Tensor y;
    if (mode == "eager") {
      y = fn(x, w);
    } else {
      AotConfig c;
      c.partitioner = mode;
      y = aot_function(fn, c)(x, w);
    }
    expect_close(y, fixture("y"), "y");
    y.backward(fixture("g"));
    expect_close(x.grad(), fixture("dx"), "dx");
    expect_close(w.grad(), fixture("dw"), "dw");
  }
}

}  // namespace
}  // namespace aotgrad::testing
