// Activations hardtanh, hardsigmoid, hardswish, silu and the in-place forms relu_, sigmoid_,
// tanh_, hardtanh_, hardsigmoid_, hardswish_, silu_: values and backward-op values against
// PyTorch 1.13 (numbers pasted from torch, boundary points included: x == -3, 3, min_val,
// max_val), dtype rules and errors, finite-difference gradients of the forward and of the
// backward ops (double backward), and compiled == eager under every partitioner, in-place forms
// included (the tracer records the functional op).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::f64;
using testing::gradcheck;
using testing::i64;
using testing::test_input;
using V = std::vector<double>;

Tensor call_row(const char* name, ops::OpArgs args) {
  return ops::call1(ops::lookup(name), std::move(args));
}

// The points where the piecewise activations change branch, and some in between.
Tensor points() {
  return f64({-4, -3, -1.5, -1, 0, 0.5, 1, 2.5, 3, 4}, {10});
}

void expect_values(const Tensor& got, const V& want, double tol = 1e-15) {
  std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
}

TEST(Activation, ForwardValuesMatchPyTorch) {
  expect_values(hardtanh(points()), {-1, -1, -1, -1, 0, 0.5, 1, 1, 1, 1});
  expect_values(hardtanh(points(), -2, 2.5), {-2, -2, -1.5, -1, 0, 0.5, 1, 2.5, 2.5, 2.5});
  expect_values(hardsigmoid(points()), {0.0, 0.0, 0.25, 0.3333333333333333, 0.5, 0.5833333333333334,
                                        0.6666666666666666, 0.9166666666666666, 1.0, 1.0});
  expect_values(hardswish(points()),
                {-0.0, -0.0, -0.375, -0.3333333333333333, 0.0, 0.2916666666666667,
                 0.6666666666666666, 2.2916666666666665, 3.0, 4.0});
  expect_values(silu(points()), {-0.07194483984836623, -0.14227761953270035, -0.2736382857095345,
                                 -0.2689414213699951, 0.0, 0.3112296656009273, 0.7310585786300049,
                                 2.3103545499468914, 2.8577223804672998, 3.928055160151634});
}

TEST(Activation, BackwardOpValuesMatchPyTorchAtTheBoundaries) {
  Tensor g = full({10}, 2.0, DType::f64);
  Tensor x = points();
  // hardtanh_backward passes nothing at exactly min_val or max_val, as ATen.
  expect_values(call_row("aten.hardtanh_backward.default", {g, x, Scalar(-1), Scalar(1)}),
                {0, 0, 0, 0, 2, 2, 0, 0, 0, 0});
  // ATen multiplies by 1/6 rounded to float even in f64: the same bits here.
  const double sixth_f = static_cast<double>(1.0f / 6.0f) * 2;
  expect_values(call_row("aten.hardsigmoid_backward.default", {g, x}),
                {0, 0, sixth_f, sixth_f, sixth_f, sixth_f, sixth_f, sixth_f, 0, 0}, 0);
  expect_values(call_row("aten.hardswish_backward.default", {g, x}),
                {0.0, -1.0, 0.0, 0.33333333333333337, 1.0, 1.3333333333333333, 1.6666666666666665,
                 2.666666666666667, 3.0, 2.0});
  expect_values(call_row("aten.silu_backward.default", {g, x}),
                {-0.10532922978214582, -0.17620821203033923, -0.08258830859828589,
                 0.1446589762570265, 1.0, 1.4799223746053038, 1.8553410237429737,
                 2.1988022226830535, 2.1762082120303385, 2.1053292297821455},
                1e-14);
}

TEST(Activation, DtypesAndErrors) {
  Tensor ints = i64({1, 5, -3}, {3});
  Tensor h = hardtanh(ints);
  EXPECT_EQ(h.dtype(), DType::i64);
  EXPECT_EQ(h.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, -1}));
  for (auto fn : {hardsigmoid, hardswish, silu}) {
    try {
      fn(ints);
      ADD_FAILURE() << "an integer input was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("must be a floating tensor"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(hardtanh(from_vector(std::vector<bool>{true}, {1})), std::invalid_argument);
  // f16 storage computes in f32 and rounds once.
  Tensor half = to(f64({-1.5, 0.5, 2.5}, {3}), DType::f16);
  Tensor s = silu(half);
  EXPECT_EQ(s.dtype(), DType::f16);
  EXPECT_TRUE(allclose(to(s, DType::f64), silu(f64({-1.5, 0.5, 2.5}, {3})), 2e-3, 2e-3));
  // NaN passes through every forward op.
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (auto fn : {hardsigmoid, hardswish, silu})
    EXPECT_TRUE(std::isnan(fn(f64({kNaN}, {1})).to_vector<double>()[0]));
  EXPECT_TRUE(std::isnan(hardtanh(f64({kNaN}, {1})).to_vector<double>()[0]));
}

TEST(Activation, StridedAndBroadcastInputs) {
  Tensor x = test_input({3, 4}, -5, 5, 41);
  Tensor xt = x.t();  // strides {1, 4}
  for (auto fn : {hardsigmoid, hardswish, silu})
    EXPECT_TRUE(allclose(fn(xt), fn(xt.contiguous()), 0, 0));
  // A backward op broadcasting grad_output against self.
  Tensor g = f64({1, 2, 3, 4}, {4});
  EXPECT_TRUE(allclose(call_row("aten.silu_backward.default", {g, x}),
                       call_row("aten.silu_backward.default", {g.expand({3, 4}).contiguous(), x}),
                       0, 0));
}

TEST(Activation, Gradcheck) {
  // Values kept away from the branch points, where the derivative jumps.
  Tensor x = f64({-4.2, -2.5, -0.7, -0.2, 0.3, 0.8, 1.7, 2.9, 3.4, 5}, {2, 5}).requires_grad_();
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return hardtanh(in[0]); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return hardtanh(in[0], -3, 2); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return hardsigmoid(in[0]); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return hardswish(in[0]); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return silu(in[0]); }, {x}));
}

TEST(Activation, BackwardOpsAreDifferentiable) {
  Tensor g = test_input({2, 5}, -1, 1, 15);
  Tensor x = f64({-4.2, -2.5, -0.7, -0.2, 0.3, 0.8, 1.7, 2.9, 3.4, 5}, {2, 5});
  using Fn = testing::Fn;
  std::vector<std::pair<const char*, Fn>> fns = {
      {"silu_backward",
       [](const std::vector<Tensor>& in) {
         return call_row("aten.silu_backward.default", {in[0], in[1]});
       }},
      {"hardswish_backward",
       [](const std::vector<Tensor>& in) {
         return call_row("aten.hardswish_backward.default", {in[0], in[1]});
       }},
      {"hardsigmoid_backward",
       [](const std::vector<Tensor>& in) {
         return call_row("aten.hardsigmoid_backward.default", {in[0], in[1]});
       }},
      {"hardtanh_backward",
       [](const std::vector<Tensor>& in) {
         return call_row("aten.hardtanh_backward.default", {in[0], in[1], Scalar(-1), Scalar(1)});
       }},
  };
  for (auto& [name, fn] : fns)
    EXPECT_TRUE(gradcheck(fn, {g.detach().requires_grad_(), x.detach().requires_grad_()})) << name;
}

TEST(Activation, InPlaceFormsEqualFunctionalAndDifferentiate) {
  using InPlace = Tensor& (*)(Tensor&);
  using Functional = Tensor (*)(const Tensor&);
  std::vector<std::tuple<const char*, InPlace, Functional>> pairs = {
      {"relu_", [](Tensor& t) -> Tensor& { return relu_(t); }, relu},
      {"sigmoid_", [](Tensor& t) -> Tensor& { return sigmoid_(t); }, sigmoid},
      {"tanh_", [](Tensor& t) -> Tensor& { return tanh_(t); }, tanh},
      {"hardtanh_", [](Tensor& t) -> Tensor& { return hardtanh_(t); },
       [](const Tensor& t) { return hardtanh(t); }},
      {"hardsigmoid_", [](Tensor& t) -> Tensor& { return hardsigmoid_(t); }, hardsigmoid},
      {"hardswish_", [](Tensor& t) -> Tensor& { return hardswish_(t); }, hardswish},
      {"silu_", [](Tensor& t) -> Tensor& { return silu_(t); }, silu},
  };
  Tensor base = f64({-4.2, -2.5, -0.7, -0.2, 0.3, 0.8, 1.7, 2.9, 3.4, 5}, {2, 5});
  for (auto& [name, inplace, functional] : pairs) {
    SCOPED_TRACE(name);
    // Values: in place on a plain tensor equals the functional op, and self is returned.
    Tensor t = base.clone();
    Tensor& r = inplace(t);
    EXPECT_EQ(&r, &t);
    EXPECT_TRUE(allclose(t, functional(base), 0, 0));
    // Gradients through a non-leaf that requires grad equal the functional op's.
    Tensor w1 = base.detach().requires_grad_(), w2 = base.detach().requires_grad_();
    Tensor y = w1 * 1.5;
    inplace(y);
    (y * y).sum().backward();
    (functional(w2 * 1.5) * functional(w2 * 1.5)).sum().backward();
    EXPECT_TRUE(allclose(w1.grad(), w2.grad(), 1e-14, 1e-14));
    // A leaf that requires grad is refused.
    Tensor leaf = base.detach().requires_grad_();
    EXPECT_THROW(inplace(leaf), std::exception);
  }
}

TEST(Activation, CompiledMatchesEagerUnderEveryPartitioner) {
  testing::run_scenario(
      [] {
        return testing::TensorList{testing::leaf({3, 4}, 1), testing::leaf({4}, 2)};
      },
      [](const testing::TensorList& a) {
        Tensor x = a[0] * 4.0, y = a[1] * 4.0;
        return testing::TensorList{hardtanh(x, -2, 1.5) * silu(y), hardswish(x) + hardsigmoid(y),
                                   silu(x).sum()};
      });
}

TEST(Activation, InPlaceFormsUnderTracingRecordFunctionalOps) {
  testing::run_scenario(
      [] {
        return testing::nonleaf_setup({2, 5}, 3);
      },
      [](const testing::TensorList& a) {
        Tensor x = a[0] * 4.0;
        Tensor y = x.clone();
        relu_(x);
        hardswish_(y);
        Tensor z = y * 2.0;
        silu_(z);
        hardtanh_(z, -1, 3);
        return testing::TensorList{x, z};
      });
  auto f = aot_function([](const Tensor& a) {
    Tensor x = a * 2.0;
    hardswish_(x);
    silu_(x);
    return x;
  });
  f(test_input({4}, -3, 3, 5).requires_grad_());
  const CompiledGraphs g = f.graphs();
  for (const char* op : {"aten.hardswish.default", "aten.silu.default"})
    EXPECT_NE(g.forward.find(op), std::string::npos) << g.forward;
  for (const char* op : {"aten.hardswish_backward.default", "aten.silu_backward.default"})
    EXPECT_NE(g.backward.find(op), std::string::npos) << g.backward;
  EXPECT_EQ(g.forward.find("hardswish_("), std::string::npos) << g.forward;
}

}  // namespace
}  // namespace aotgrad
