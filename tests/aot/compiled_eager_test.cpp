// Compiled == eager (the second oracle): every function here runs eagerly and through
// aot_function via expect_compiled_matches_eager, which compares outputs, autograd metadata,
// input gradients and checks every produced graph text. Each test also states something about
// the graphs the compiler chose (inference or training, what is saved, what was functionalized).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "aotgrad/aotgrad.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::DType;
using ag::Tensor;
using ag::testing::contains;
using ag::testing::expect_compiled_matches_eager;
using ag::testing::inputs;
using ag::testing::kF32Tolerances;
using ag::testing::test_input;

namespace {

// Deterministic f64 input in [lo, hi); requires grad unless `rg` is false.
Tensor in(const ag::IntList& sizes, uint64_t seed, double lo = -1.0, double hi = 1.0,
          bool rg = true) {
  return test_input(sizes, lo, hi, seed, rg);
}
Tensor constant(const ag::IntList& sizes, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return test_input(sizes, lo, hi, seed, false);
}
Tensor as_f32(const Tensor& t, bool rg = true) {
  Tensor r = t.detach().to(DType::f32);
  if (rg) r.requires_grad_();
  return r;
}
Tensor longs(std::vector<int64_t> v, ag::IntList sizes) {
  return ag::from_vector(v, sizes);
}

}  // namespace

// ---- broadcasting and type promotion ----

TEST(CompiledEager, BroadcastRowAndColumn) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& row, const Tensor& col) {
        return (x + row) * col - x / (col + 2.0);
      },
      inputs(in({3, 4}, 1), in({4}, 2), in({3, 1}, 3, 0.5, 1.5)));
  EXPECT_FALSE(g.is_inference);
  // Broadcast gradients are summed back to the input shapes in the backward graph.
  EXPECT_TRUE(contains(g.backward, "aten.sum")) << g.backward;
}

TEST(CompiledEager, BroadcastZeroDimAndOneElementTensors) {
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& s, const Tensor& one, const Tensor& one11) {
        return x * s + s.exp() - x / one + one11;
      },
      inputs(in({2, 3}, 4), in({}, 5), in({1}, 6, 1.0, 2.0), in({1, 1}, 7)));
}

TEST(CompiledEager, BroadcastBothSidesAndAlpha) {
  expect_compiled_matches_eager(
      [](const Tensor& a, const Tensor& b) { return ag::sub(ag::add(a, b, 2.0), b * a, 0.5); },
      inputs(in({4, 1, 3}, 8), in({2, 1}, 9)));
}

TEST(CompiledEager, PromotesF32WithF64ZeroDim) {
  // A 0-dim f64 tensor does not promote an f32 tensor: the result is f32, the 0-dim gradient f64.
  auto fn = [](const Tensor& x, const Tensor& s) { return (x * s + s).tanh(); };
  Tensor x = as_f32(in({2, 3}, 10)), s = in({}, 11);
  {
    ag::NoGradGuard no_grad;
    EXPECT_EQ(fn(x, s).dtype(), DType::f32);
  }
  expect_compiled_matches_eager(fn, inputs(x, s), kF32Tolerances);
}

TEST(CompiledEager, PromotesIntInputsThatDoNotRequireGrad) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& i) { return (x + i) * (i * 0.5) + x * x; },
      inputs(in({2, 3}, 12), longs({1, -2, 3, 0, 5, -1}, {2, 3})));
  EXPECT_TRUE(contains(g.forward, "i64[2,3]")) << g.forward;
}

TEST(CompiledEager, F32MixedWithF64Tensors) {
  expect_compiled_matches_eager(
      [](const Tensor& a, const Tensor& b) { return (a * b).sum(0) + a.sum(); },
      inputs(as_f32(in({3, 2}, 13)), in({3, 2}, 14)), kF32Tolerances);
}

// ---- unary ops and activations ----

TEST(CompiledEager, EveryUnaryOpAndActivation) {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> fn;
    bool positive;  // domain needs x > 0
    size_t saved;   // one saved tensor (input or output), none for neg
  };
  const std::vector<Case> cases = {
      {"exp", [](const Tensor& x) { return x.exp(); }, false, 1},
      {"log", [](const Tensor& x) { return x.log(); }, true, 1},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }, true, 1},
      {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }, true, 1},
      {"sin", [](const Tensor& x) { return x.sin(); }, false, 1},
      {"cos", [](const Tensor& x) { return x.cos(); }, false, 1},
      {"tanh", [](const Tensor& x) { return x.tanh(); }, false, 1},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, false, 1},
      {"relu", [](const Tensor& x) { return x.relu(); }, false, 1},
      {"gelu", [](const Tensor& x) { return ag::gelu(x); }, false, 1},
      {"gelu_tanh", [](const Tensor& x) { return ag::gelu(x, "tanh"); }, false, 1},
      {"pow3", [](const Tensor& x) { return x.pow(3); }, false, 1},
      {"pow_half", [](const Tensor& x) { return x.pow(0.5); }, true, 1},
      {"pow_neg", [](const Tensor& x) { return x.pow(-1.5); }, true, 1},
      {"neg", [](const Tensor& x) { return -x; }, false, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = c.positive ? in({3, 4}, 20, 0.2, 3.0) : in({3, 4}, 21, -2.0, 2.0);
    auto g = expect_compiled_matches_eager(c.fn, inputs(x));
    EXPECT_FALSE(g.is_inference);
    EXPECT_EQ(g.num_saved, c.saved) << g.saved_report;
  }
}

TEST(CompiledEager, UnaryChainInF32) {
  expect_compiled_matches_eager(
      [](const Tensor& x) { return (ag::gelu(x.sin()) + x.sigmoid() * x.exp()).relu().sqrt(); },
      inputs(as_f32(in({4, 5}, 22, -2.0, 2.0))), kF32Tolerances);
}

// ---- reductions ----

TEST(CompiledEager, SumAllDimsKeepdimNegative) {
  expect_compiled_matches_eager(
      [](const Tensor& x) {
        return std::make_tuple(x.sum(), x.sum({0, 2}), x.sum(1, true), x.sum(-1),
                               x.sum({-3, -1}, true));
      },
      inputs(in({2, 3, 4}, 30)));
}

TEST(CompiledEager, MeanAllAndDims) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x) {
        return x.mean() + x.mean(1, true).sum() + x.mean({-1, 0}).sum();
      },
      inputs(in({3, 4, 2}, 31)));
  EXPECT_EQ(g.num_saved, 0u) << g.saved_report;  // mean's backward needs only shapes
}

TEST(CompiledEager, AmaxWithTies) {
  Tensor x = ag::from_vector(std::vector<double>{1.0, 3.0, 3.0, -1.0, 2.0, 2.0, 2.0, 0.5}, {2, 4})
                 .requires_grad_();
  expect_compiled_matches_eager(
      [](const Tensor& x) {
        return std::make_tuple(x.amax({1}), x.amax({0, 1}), x.amax({-1}, true) * x);
      },
      inputs(x));
}

// ---- matmul and linear ----

TEST(CompiledEager, MatmulChain2D) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& a, const Tensor& b, const Tensor& c) {
        return ag::matmul(ag::matmul(a, b).tanh(), c);
      },
      inputs(in({4, 3}, 40), in({3, 5}, 41), in({5, 2}, 42)));
  EXPECT_TRUE(contains(g.forward, "aten.mm.default")) << g.forward;
}

TEST(CompiledEager, MatmulBatchedAndBroadcast) {
  expect_compiled_matches_eager([](const Tensor& a, const Tensor& b,
                                   const Tensor& w) { return ag::matmul(ag::matmul(a, b), w); },
                                inputs(in({2, 3, 4}, 43), in({2, 4, 5}, 44), in({5, 3}, 45)));
}

TEST(CompiledEager, MatmulVectorCases) {
  expect_compiled_matches_eager(
      [](const Tensor& v, const Tensor& m, const Tensor& u) {
        return std::make_tuple(ag::matmul(v, m), ag::matmul(m, u), ag::matmul(v, v));
      },
      inputs(in({3}, 46), in({3, 4}, 47), in({4}, 48)));
}

TEST(CompiledEager, MatmulVectorTimesBatch) {
  expect_compiled_matches_eager(
      [](const Tensor& v, const Tensor& b) { return ag::matmul(v, b).sum(0); },
      inputs(in({3}, 49), in({2, 3, 4}, 50)));
}

TEST(CompiledEager, LinearWithAndWithoutBias) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w, const Tensor& b) {
        return std::make_tuple(ag::linear(x, w, b), ag::linear(x, w),
                               ag::linear(x.unsqueeze(0), w, b));
      },
      inputs(in({4, 3}, 51), in({5, 3}, 52), in({5}, 53)));
  EXPECT_FALSE(g.is_inference);
}

TEST(CompiledEager, MatmulInF32) {
  expect_compiled_matches_eager(
      [](const Tensor& a, const Tensor& b) { return ag::matmul(a, b).relu().sum(); },
      inputs(as_f32(in({2, 4, 3}, 54)), as_f32(in({3, 6}, 55))), kF32Tolerances);
}

// ---- softmax and losses ----

TEST(CompiledEager, SoftmaxAndLogSoftmaxOnEachDim) {
  expect_compiled_matches_eager(
      [](const Tensor& x) {
        return std::make_tuple(ag::softmax(x, 0), ag::softmax(x, -1), ag::log_softmax(x, 1),
                               ag::log_softmax(x, -3));
      },
      inputs(in({2, 3, 4}, 60, -3.0, 3.0)));
}

TEST(CompiledEager, CrossEntropyEachReduction) {
  Tensor target = longs({2, 0, 4, 1}, {4});
  for (const char* reduction : {"mean", "sum", "none"}) {
    SCOPED_TRACE(reduction);
    std::string r = reduction;
    expect_compiled_matches_eager(
        [r](const Tensor& logits, const Tensor& t) { return ag::cross_entropy(logits, t, r); },
        inputs(in({4, 5}, 61, -2.0, 2.0), target));
  }
}

TEST(CompiledEager, NllLossEachReduction) {
  Tensor target = longs({1, 2, 0}, {3});
  for (const char* reduction : {"mean", "sum", "none"}) {
    SCOPED_TRACE(reduction);
    std::string r = reduction;
    auto g = expect_compiled_matches_eager(
        [r](const Tensor& x, const Tensor& t) { return ag::nll_loss(ag::log_softmax(x, 1), t, r); },
        inputs(in({3, 4}, 62), target));
    EXPECT_TRUE(contains(g.backward, "aten.nll_loss_backward.default")) << g.backward;
  }
}

TEST(CompiledEager, MseLossEachReduction) {
  for (const char* reduction : {"mean", "sum", "none"}) {
    SCOPED_TRACE(reduction);
    std::string r = reduction;
    expect_compiled_matches_eager(
        [r](const Tensor& a, const Tensor& b) { return ag::mse_loss(a, b, r); },
        inputs(in({3, 4}, 63), in({3, 4}, 64)));
    // A target that does not require grad gets no gradient.
    expect_compiled_matches_eager(
        [r](const Tensor& a, const Tensor& b) { return ag::mse_loss(a.tanh(), b, r); },
        inputs(in({5}, 65), constant({5}, 66)));
  }
}

TEST(CompiledEager, CrossEntropyInF32) {
  expect_compiled_matches_eager(
      [](const Tensor& logits, const Tensor& t) { return ag::cross_entropy(logits * 2.0, t); },
      inputs(as_f32(in({3, 6}, 67)), longs({5, 0, 3}, {3})), kF32Tolerances);
}

// ---- multiple outputs ----

TEST(CompiledEager, TupleOfOutputs) {
  expect_compiled_matches_eager(
      [](const Tensor& a, const Tensor& b) {
        return std::make_tuple((a * b).sum(), a.exp(), b - a);
      },
      inputs(in({3}, 70), in({3}, 71)));
}

TEST(CompiledEager, VectorOfOutputsFromVectorOfInputs) {
  expect_compiled_matches_eager(
      [](const std::vector<Tensor>& xs) {
        return std::vector<Tensor>{xs[0] + xs[1], xs[1] * xs[2], (xs[0] * xs[2]).sum()};
      },
      inputs(std::vector<Tensor>{in({2, 2}, 72), in({2, 2}, 73), in({2, 2}, 74)}));
}

TEST(CompiledEager, SameTensorReturnedTwice) {
  expect_compiled_matches_eager(
      [](const Tensor& a) {
        Tensor y = a.sin() * a;
        return std::make_tuple(y, y);
      },
      inputs(in({4}, 75)));
}

TEST(CompiledEager, OutputWithoutGradNextToOneWithGrad) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& a, const Tensor& c) {
        return std::make_tuple(a.tanh(), c.exp(), a.gt(0.0), (a * c).sum());
      },
      inputs(in({3}, 76), constant({3}, 77)));
  EXPECT_FALSE(g.is_inference);
  // Tangents only for the two outputs that require grad.
  EXPECT_TRUE(contains(g.backward, "tangent(output(0))")) << g.backward;
  EXPECT_FALSE(contains(g.backward, "tangent(output(1))")) << g.backward;
  EXPECT_FALSE(contains(g.backward, "tangent(output(2))")) << g.backward;
  EXPECT_TRUE(contains(g.backward, "tangent(output(3))")) << g.backward;
}

TEST(CompiledEager, PairResult) {
  expect_compiled_matches_eager(
      [](const Tensor& a) { return std::make_pair(a.cos().sum(), a * 3.0); },
      inputs(in({2, 3}, 78)));
}

// ---- which inputs get gradients ----

TEST(CompiledEager, InputsThatDoNotRequireGrad) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w, const Tensor& b) {
        return (ag::matmul(x, w) + b).tanh().sum();
      },
      inputs(constant({4, 3}, 80), in({3, 2}, 81), constant({2}, 82)));
  EXPECT_FALSE(contains(g.backward, "grad(input(0))")) << g.backward;
  EXPECT_TRUE(contains(g.backward, "grad(input(1))")) << g.backward;
  EXPECT_FALSE(contains(g.backward, "grad(input(2))")) << g.backward;
}

TEST(CompiledEager, ResultIndependentOfOneInput) {
  // `unused` requires grad but the output does not depend on it: its .grad() stays undefined.
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& unused) {
        (void)unused;
        return (x * x).sum();
      },
      inputs(in({3}, 83), in({3}, 84)));
  EXPECT_FALSE(contains(g.backward, "grad(input(1))")) << g.backward;
}

TEST(CompiledEager, InputUsedOnlyByANonDifferentiablePath) {
  // y's gradient through gt is none, so y gets no gradient although it requires grad.
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& y) { return ag::where(y.gt(0.0), x, x * 2.0).sum(); },
      inputs(in({5}, 85), in({5}, 86)));
}

TEST(CompiledEager, NonContiguousInput) {
  Tensor xt = constant({3, 2}, 87).t();  // strides {1, 2}
  xt.requires_grad_();
  ASSERT_FALSE(xt.is_contiguous());
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w) { return ag::mm(x, w).exp().sum(); },
      inputs(xt, in({3, 4}, 88)));
  EXPECT_TRUE(contains(g.forward, "f64[2,3]{1,2}")) << g.forward;
}

TEST(CompiledEager, NumberArgument) {
  expect_compiled_matches_eager([](const Tensor& x, double s) { return (x * s).pow(2).sum(); },
                                inputs(in({3}, 89), 1.5));
}

// ---- views, in-place, factories inside the function ----

TEST(CompiledEager, ViewsOfIntermediates) {
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& v) {
        Tensor h = x * 2.0;                                             // [2, 3, 4]
        Tensor a = h.view({6, 4}).t();                                  // [4, 6]
        Tensor b = h.reshape({2, 12}).permute({1, 0});                  // [12, 2]
        Tensor c = h.transpose(0, 2).slice(0, 1, 4, 2);                 // [2, 3, 2]
        Tensor d = h.select(1, 2).unsqueeze(0).squeeze(0);              // [2, 4]
        Tensor e = v.unsqueeze(1).expand({4, 3}) * h.select(0, 1).t();  // [4, 3]
        return a.sum(1) + b.sum() + c.sum() + d.sum(0) + e.sum(1);
      },
      inputs(in({2, 3, 4}, 90), in({4}, 91)));
}

TEST(CompiledEager, OutputIsAViewOfAnIntermediate) {
  expect_compiled_matches_eager(
      [](const Tensor& x) { return std::make_tuple((x * 2.0).t(), x.exp().select(0, 1)); },
      inputs(in({2, 3}, 92)));
}

TEST(CompiledEager, InPlaceOnFreshIntermediatesIsFunctionalized) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w) {
        Tensor h = x * 2.0;
        h.add_(w);
        h.mul_(x);
        h.add_(w, 0.5);
        h.mul_(3.0);
        Tensor buf = ag::zeros({3}, DType::f64);
        buf.copy_(h.sin());
        Tensor z = x * 1.0;
        z.zero_();
        z.add_(w.exp());
        Tensor f = w * 1.0;
        f.fill_(2.0);
        return buf * f + z;
      },
      inputs(in({3}, 93), in({3}, 94)));
  for (const char* mutating : {"add_.", "mul_.", "copy_.", "zero_.", "fill_."}) {
    EXPECT_FALSE(contains(g.forward, mutating)) << mutating << "\n" << g.forward;
    EXPECT_FALSE(contains(g.backward, mutating)) << mutating << "\n" << g.backward;
  }
}

TEST(CompiledEager, FactoriesInsideTheFunction) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x) {
        Tensor r = ag::arange(3).to(DType::f64);              // i64 arange cast to f64
        Tensor s = ag::arange(0.0, 1.5, 0.5).to(DType::f64);  // f32 arange
        return x * ag::ones({2, 3}, DType::f64) + ag::zeros({3}, DType::f64) +
               ag::full({2, 1}, 2.5, DType::f64) * x + r * s + x.pow(2) * r;
      },
      inputs(in({2, 3}, 95)));
  EXPECT_TRUE(contains(g.forward, "aten.arange.start_step")) << g.forward;
  EXPECT_TRUE(contains(g.forward, "aten.full.default")) << g.forward;
}

TEST(CompiledEager, WhereAndComparisons) {
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& y) {
        Tensor a = ag::where(x.gt(y), x.exp(), y * y);
        Tensor b = ag::where(x.lt(0.0), -x, x.sin());
        Tensor c = ag::where(x.eq(y), x, ag::zeros_like(y));
        Tensor mask = x.gt(0.25);
        return std::make_tuple(a + b + c, mask, x.lt(y));
      },
      inputs(in({3, 4}, 100), in({4}, 101)));
}

TEST(CompiledEager, WhereWithBroadcastConditionAndScalarTensor) {
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& s) {
        return ag::where(x.gt(s), x * s, s.expand({2, 3})).sum();
      },
      inputs(in({2, 3}, 102), in({}, 103)));
}

// ---- training step shapes ----

TEST(CompiledEager, ThreeLayerMlpLoss) {
  auto mlp = [](const Tensor& x, const Tensor& target, const Tensor& w1, const Tensor& b1,
                const Tensor& w2, const Tensor& b2, const Tensor& w3, const Tensor& b3) {
    Tensor h = ag::linear(x, w1, b1).relu();
    h = ag::linear(h, w2, b2).tanh();
    return ag::cross_entropy(ag::linear(h, w3, b3), target);
  };
  auto g = expect_compiled_matches_eager(
      mlp, inputs(constant({8, 6}, 110), longs({0, 1, 2, 3, 0, 1, 2, 3}, {8}),
                  in({10, 6}, 111, -0.5, 0.5), in({10}, 112), in({7, 10}, 113, -0.5, 0.5),
                  in({7}, 114), in({4, 7}, 115, -0.5, 0.5), in({4}, 116)));
  EXPECT_FALSE(g.is_inference);
  for (int p : {2, 3, 4, 5, 6, 7})
    EXPECT_TRUE(contains(g.backward, "grad(input(" + std::to_string(p) + "))")) << g.backward;
  EXPECT_GT(g.saved_activation_bytes, 0u) << g.saved_report;
}

TEST(CompiledEager, MseRegressionStepInF32) {
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& y, const Tensor& w, const Tensor& b) {
        return ag::mse_loss(ag::linear(x, w, b).sigmoid(), y);
      },
      inputs(as_f32(in({5, 3}, 117), false), as_f32(in({5, 2}, 118), false),
             as_f32(in({2, 3}, 119)), as_f32(in({2}, 120))),
      kF32Tolerances);
}

// ---- grad mode ----

TEST(CompiledEager, DetachInsideTheFunction) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w) {
        return (x * x.detach() + (w * x).detach() * w).sum();
      },
      inputs(in({4}, 130), in({4}, 131)));
  EXPECT_FALSE(g.is_inference);
}

TEST(CompiledEager, NoGradGuardInsideTheFunction) {
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w) {
        Tensor c;
        {
          ag::NoGradGuard no_grad;
          c = (x * w).exp();  // a constant for autograd
        }
        return (x * c + w).sum();
      },
      inputs(in({4}, 132), in({4}, 133)));
}

TEST(CompiledEager, EverythingUnderNoGradGuardInsideTheFunction) {
  // Nothing the function returns requires grad although its inputs do: an inference graph.
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x) {
        ag::NoGradGuard no_grad;
        return x.exp().sum();
      },
      inputs(in({4}, 134)));
  EXPECT_TRUE(g.is_inference);
}

TEST(CompiledEager, CalledUnderNoGradGuardUsesTheInferenceGraph) {
  ag::NoGradGuard no_grad;
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w) {
        return std::make_tuple(ag::matmul(x, w).tanh(), x.sum());
      },
      inputs(in({3, 4}, 135), in({4, 2}, 136)));
  EXPECT_TRUE(g.is_inference);
  EXPECT_FALSE(g.inference.empty());
  EXPECT_TRUE(g.forward.empty());
  EXPECT_TRUE(g.backward.empty());
  EXPECT_EQ(g.num_saved, 0u);
}

TEST(CompiledEager, GradModeOnButNoInputRequiresGrad) {
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w) { return (ag::matmul(x, w) + 1.0).relu(); },
      inputs(constant({3, 4}, 137), constant({4, 2}, 138)));
  EXPECT_TRUE(g.is_inference);
  EXPECT_TRUE(contains(g.inference, "aten.mm.default")) << g.inference;
}

TEST(CompiledEager, EnableGradInsideNoGradCall) {
  // The caller is under no_grad, the function turns grad mode back on: eager records, so must
  // the compiled function.
  ag::NoGradGuard no_grad;
  auto g = expect_compiled_matches_eager(
      [](const Tensor& x) {
        ag::EnableGradGuard enable;
        return (x * x).sum();
      },
      inputs(in({3}, 139)));
  EXPECT_FALSE(g.is_inference);
}

// ---- what is saved ----

TEST(CompiledEager, AdditionSavesNothingExpSavesItsOutput) {
  auto add =
      expect_compiled_matches_eager([](const Tensor& a, const Tensor& b) { return (a + b).sum(); },
                                    inputs(in({3}, 140), in({3}, 141)));
  EXPECT_EQ(add.num_saved, 0u) << add.saved_report;
  auto ex = expect_compiled_matches_eager([](const Tensor& a) { return a.exp().sum(); },
                                          inputs(in({3}, 142)));
  EXPECT_EQ(ex.num_saved, 1u) << ex.saved_report;
  EXPECT_TRUE(contains(ex.saved_report, "aten.exp.default")) << ex.saved_report;
  EXPECT_EQ(ex.saved_activation_bytes, 3u * 8u) << ex.saved_report;
}

// ---- shapes at the edges ----

TEST(CompiledEager, ZeroDimInputAndOutput) {
  auto g = expect_compiled_matches_eager([](const Tensor& s) { return (s * s).exp() - s.sin(); },
                                         inputs(in({}, 150)));
  EXPECT_TRUE(contains(g.forward, "f64[]")) << g.forward;
}

TEST(CompiledEager, EmptyTensor) {
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& w) {
        return std::make_tuple((x * w).sum(), ag::matmul(x, w.unsqueeze(1)));
      },
      inputs(in({0, 3}, 151), in({3}, 152)));
}

TEST(CompiledEager, LargeEnoughForParallelKernels) {
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& b) { return ((x + b).tanh() * x.exp()).sum(1); },
      inputs(in({300, 200}, 153), in({200}, 154)));
}

TEST(CompiledEager, OutputFromFactoryOnly) {
  // An output that depends on no input never requires grad, next to one that does.
  expect_compiled_matches_eager(
      [](const Tensor& x) {
        return std::make_tuple(ag::full({2}, 3.0, DType::f64), x.sum() * 2.0);
      },
      inputs(in({3}, 155)));
}

// ---- behaviours outside the helper: duplicate inputs, mutation of outputs after the call ----

TEST(CompiledEager, SameTensorPassedTwice) {
  auto fn = [](const Tensor& a, const Tensor& b) { return (a * b.exp()).sum(); };
  Tensor x = in({4}, 160), x_ref = in({4}, 160);
  auto f = ag::aot_function(fn);
  Tensor out = f(x, x);
  Tensor ref = fn(x_ref, x_ref);
  EXPECT_TRUE(ag::testing::allclose(out, ref, 1e-12, 1e-12));
  out.backward();
  ref.backward();
  EXPECT_TRUE(ag::testing::allclose(x.grad(), x_ref.grad(), 1e-12, 1e-12));  // e^x (1 + x)
}

TEST(CompiledEager, ModifyingASavedOutputBeforeBackwardIsAnErrorLikeEager) {
  auto fn = [](const Tensor& a) { return a.exp(); };  // exp's output is saved for backward
  auto f = ag::aot_function(fn);
  for (bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    Tensor a = in({3}, 161);
    Tensor y = compiled ? f(a) : fn(a);
    y.mul_(2.0);
    try {
      y.sum().backward();
      ADD_FAILURE() << "expected a version-counter error";
    } catch (const std::runtime_error& e) {
      EXPECT_TRUE(contains(e.what(), "modified by an inplace operation")) << e.what();
    }
  }
}

TEST(CompiledEager, InPlaceOnAnOutputThatIsNotSavedWorks) {
  // add saves nothing: changing the compiled output in place keeps backward valid, as in eager.
  auto fn = [](const Tensor& a, const Tensor& b) { return a + b; };
  Tensor a = in({3}, 162), b = in({3}, 163);
  Tensor a_ref = in({3}, 162), b_ref = in({3}, 163);
  auto f = ag::aot_function(fn);
  Tensor y = f(a, b), y_ref = fn(a_ref, b_ref);
  y.mul_(3.0);
  y_ref.mul_(3.0);
  EXPECT_TRUE(ag::testing::allclose(y, y_ref, 0, 0));
  y.sum().backward();
  y_ref.sum().backward();
  EXPECT_TRUE(ag::testing::allclose(a.grad(), a_ref.grad(), 0, 0));
  EXPECT_TRUE(ag::testing::allclose(b.grad(), b_ref.grad(), 0, 0));
}

// ---- compiled calls inside a larger eager graph ----

TEST(CompiledEager, EagerOpsAroundTheCompiledCall) {
  // Eager op -> compiled -> eager ops: the compiled node receives an expanded (stride-0)
  // gradient from sum, and its input is a non-leaf whose gradient flows on to the leaf.
  auto fn = [](const Tensor& h, const Tensor& w) { return ag::matmul(h, w).tanh(); };
  auto f = ag::aot_function(fn);
  Tensor x = in({3, 4}, 180), w = in({4, 2}, 181);
  Tensor x_ref = in({3, 4}, 180), w_ref = in({4, 2}, 181);
  Tensor out = (f(x.sin(), w) * 2.0).sum();
  Tensor ref = (fn(x_ref.sin(), w_ref) * 2.0).sum();
  EXPECT_TRUE(ag::testing::allclose(out, ref, 1e-12, 1e-12));
  out.backward();
  ref.backward();
  EXPECT_TRUE(ag::testing::allclose(x.grad(), x_ref.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(ag::testing::allclose(w.grad(), w_ref.grad(), 1e-12, 1e-12));
}

TEST(CompiledEager, NonContiguousAndOtherDtypeGradOutputs) {
  auto fn = [](const Tensor& a) { return a.exp() * a; };
  auto f = ag::aot_function(fn);
  Tensor a = in({2, 3}, 182), a_ref = in({2, 3}, 182);
  Tensor g = constant({3, 2}, 183).t();  // strides {1, 2}
  f(a).backward(g);
  fn(a_ref).backward(g);
  EXPECT_TRUE(ag::testing::allclose(a.grad(), a_ref.grad(), 1e-12, 1e-12));
  // An f32 compiled output used in f64 arithmetic gets an f64 gradient back through to().
  Tensor b = as_f32(in({3}, 184)), b_ref = as_f32(in({3}, 184));
  (f(b).to(DType::f64) * constant({3}, 185)).sum().backward();
  (fn(b_ref).to(DType::f64) * constant({3}, 185)).sum().backward();
  EXPECT_EQ(b.grad().dtype(), DType::f32);
  EXPECT_TRUE(ag::testing::allclose(b.grad(), b_ref.grad(), 1e-6, 1e-5));
}

TEST(CompiledEager, TwoCallsBeforeOneBackward) {
  auto fn = [](const Tensor& a, const Tensor& b) { return (a * b).sigmoid().sum(); };
  auto f = ag::aot_function(fn);
  Tensor a = in({4}, 186), b = in({4}, 187);
  Tensor a_ref = in({4}, 186), b_ref = in({4}, 187);
  Tensor y = f(a, b) + f(b, a) * 3.0;
  Tensor y_ref = fn(a_ref, b_ref) + fn(b_ref, a_ref) * 3.0;
  y.backward();
  y_ref.backward();
  EXPECT_EQ(f.num_compilations(), 1u);
  EXPECT_TRUE(ag::testing::allclose(a.grad(), a_ref.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(ag::testing::allclose(b.grad(), b_ref.grad(), 1e-12, 1e-12));
}

TEST(CompiledEager, InputsThatAreViewsOfOneLeaf) {
  auto fn = [](const Tensor& a, const Tensor& b) { return ag::matmul(a, b).sum(); };
  auto f = ag::aot_function(fn);
  Tensor x = in({3, 3}, 188), x_ref = in({3, 3}, 188);
  f(x, x.t()).backward();
  fn(x_ref, x_ref.t()).backward();
  EXPECT_TRUE(ag::testing::allclose(x.grad(), x_ref.grad(), 1e-12, 1e-12));
}

// ---- the oracle itself: it must notice when compiled and eager differ ----
// is_fake() is true only while tracing, so these functions compute something else when compiled.

namespace {

// The messages of the gtest failures `f` reports, intercepted so they do not fail the caller.
template <typename F>
std::string failures_of(F&& f) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    f();
  }
  std::string all;
  for (int i = 0; i < results.size(); ++i)
    all += std::string(results.GetTestPartResult(i).message()) + "\n";
  return all;
}

template <typename F>
::testing::AssertionResult reports(F&& f, const std::string& needle) {
  std::string all = failures_of(f);
  if (contains(all, needle)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no failure mentions \"" << needle << "\"; reported:\n"
                                       << all;
}

}  // namespace

TEST(CompiledEagerHelper, ReportsDifferentValuesAndGradients) {
  auto fn = [](const Tensor& x) { return x.is_fake() ? x * 2.0 : x * 3.0; };
  auto run = [&] { expect_compiled_matches_eager(fn, inputs(in({3}, 170))); };
  EXPECT_TRUE(reports(run, "output 0: values"));
  EXPECT_TRUE(reports(run, "grad of tensor input 0: values"));
}

TEST(CompiledEagerHelper, ReportsDifferentShapesAndDtypes) {
  EXPECT_TRUE(reports(
      [] {
        expect_compiled_matches_eager(
            [](const Tensor& x) { return x.is_fake() ? x.sum(0, true) : x.sum(0); },
            inputs(in({2, 3}, 171)));
      },
      "output 0: sizes"));
  EXPECT_TRUE(reports(
      [] {
        expect_compiled_matches_eager(
            [](const Tensor& x) { return x.is_fake() ? x.to(DType::f32) : x * 1.0; },
            inputs(in({2}, 172)));
      },
      "output 0: dtype"));
}

TEST(CompiledEagerHelper, ReportsAutogradDifferences) {
  auto fn = [](const Tensor& x) { return x.is_fake() ? (x * 2.0).detach() : x * 2.0; };
  auto run = [&] { expect_compiled_matches_eager(fn, inputs(in({2}, 173))); };
  EXPECT_TRUE(reports(run, "output 0: requires_grad"));
  EXPECT_TRUE(reports(run, "grad of tensor input 0"));
}

TEST(CompiledEagerHelper, ReportsAThrowingCompiledFunction) {
  auto fn = [](const Tensor& x) {
    if (x.is_fake()) throw std::runtime_error("refuses to trace");
    return x * 2.0;
  };
  EXPECT_TRUE(reports([&] { expect_compiled_matches_eager(fn, inputs(in({2}, 174))); },
                      "the compiled function threw"));
}

TEST(CompiledEagerHelper, ReportsNothingWhenTheyAgree) {
  EXPECT_EQ(failures_of([] {
              expect_compiled_matches_eager(
                  [](const Tensor& x) { return std::make_tuple(x.exp(), x.sum()); },
                  inputs(in({2}, 175)));
            }),
            "");
}

TEST(CompiledEagerHelper, InputsKeepGeometryAndRequiresGrad) {
  Tensor base = constant({4, 3}, 176);
  Tensor xt = base.t();
  xt.requires_grad_();
  Tensor c = constant({2}, 177);
  expect_compiled_matches_eager(
      [](const Tensor& x, const Tensor& k) {
        EXPECT_EQ(x.strides(), (ag::IntList{1, 3}));
        EXPECT_TRUE(x.requires_grad());
        EXPECT_FALSE(k.requires_grad());
        return (x.sum() * k).exp();
      },
      inputs(xt, c));
  // The caller's tensors are untouched: no gradient lands on them.
  EXPECT_FALSE(xt.grad().defined());
}
