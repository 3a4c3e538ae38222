// aten.erf's op row: values as PyTorch gives them, the gradient 2/sqrt(pi) exp(-x^2) against
// finite differences, and the compiled function equal to eager (forward and gradient).
#include <gtest/gtest.h>

#include <cmath>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

Tensor erf(const Tensor& x) {
  static const ag::ops::OpDef& row = ag::ops::lookup("aten.erf.default");
  return ag::ops::call1(row, {x});
}

}  // namespace

TEST(ErfRow, ValuesMatchPyTorch) {
  // torch.erf(torch.tensor([-1.5, -0.3, 0.0, 0.7, 2.0, 5.0])) in PyTorch 1.13 (f32).
  Tensor x = ag::from_vector(std::vector<float>{-1.5f, -0.3f, 0.0f, 0.7f, 2.0f, 5.0f}, {6});
  Tensor y = erf(x);
  EXPECT_EQ(y.dtype(), ag::DType::f32);
  std::vector<float> want = {-0.9661051f, -0.3286268f, 0.0f, 0.6778012f, 0.9953223f, 1.0f};
  EXPECT_TRUE(ag::testing::allclose(y, ag::from_vector(want, {6}), 1e-6, 1e-6));
  // An integral input computes in the default float, as torch.erf(torch.tensor([1])) does.
  Tensor i = erf(ag::testing::i64({1, -2}, {2}));
  EXPECT_EQ(i.dtype(), ag::DType::f32);
  EXPECT_NEAR(i.to_vector<double>()[0], 0.8427008, 1e-6);
}

TEST(ErfRow, GradientIsTwoOverSqrtPiExpMinusXSquared) {
  Tensor x = ag::testing::test_input({7}, -2.0, 2.0);
  EXPECT_TRUE(ag::testing::gradcheck([](const std::vector<Tensor>& in) { return erf(in[0]); },
                                     {x}));
  erf(x).sum().backward();
  std::vector<double> xs = x.to_vector<double>(), g = x.grad().to_vector<double>();
  for (size_t k = 0; k < xs.size(); ++k)
    EXPECT_NEAR(g[k], 2.0 / std::sqrt(M_PI) * std::exp(-xs[k] * xs[k]), 1e-12) << xs[k];
}

TEST(ErfRow, CompiledEqualsEager) {
  auto fn = [](const Tensor& a) { return (erf(a) * a).sum(); };
  Tensor a = ag::testing::test_input({3, 4}, -1.5, 1.5, 2, false).to(ag::DType::f32);
  Tensor e = a.detach().requires_grad_(), c = a.detach().requires_grad_();
  Tensor eager = fn(e);
  eager.backward();
  auto compiled = ag::aot_function(fn);
  Tensor out = compiled(c);
  out.backward();
  EXPECT_TRUE(ag::testing::allclose(out, eager, 1e-6, 1e-6));
  EXPECT_TRUE(ag::testing::allclose(c.grad(), e.grad(), 1e-6, 1e-6));
  EXPECT_NE(compiled.graphs().forward.find("aten.erf.default"), std::string::npos)
      << compiled.graphs().forward;
}
