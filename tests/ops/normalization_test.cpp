// Normalization ops: native_layer_norm (values against PyTorch 1.13, statistics shapes, one and
// two normalized dims, with and without weight / bias, strided and 16-bit inputs), its backward
// row (output_mask), native_dropout (seeded determinism, p = 0 and 1, eval mode, the gradient is
// mask * scale), finite-difference gradients, and compiled == eager for a layer norm + GELU +
// dropout block with the seed set before each run.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::gradcheck;
using testing::test_input;

Tensor f32(std::vector<float> v, const IntList& sizes) {
  return from_vector(v, sizes);
}

// The inputs of the torch reference script: a [2, 3] input, weight, bias and an output gradient.
Tensor ln_a() {
  return f32({0.5, -1.25, 2.0, 3.0, 0.0, -0.5}, {2, 3});
}
Tensor ln_w() {
  return f32({1.5, -0.5, 2.0}, {3});
}
Tensor ln_b() {
  return f32({0.1, 0.2, -0.3}, {3});
}
Tensor ln_g() {
  return f32({1.0, 2.0, -1.0, 0.5, -0.5, 0.25}, {2, 3});
}

std::vector<Tensor> layer_norm_backward_row(const Tensor& g, const Tensor& x, const Tensor& mean,
                                            const Tensor& rstd, const Tensor& w, const Tensor& b,
                                            IntList mask) {
  auto opt = [](const Tensor& t) { return t.defined() ? ops::Arg(t) : ops::Arg(std::monostate{}); };
  return ops::dispatch(ops::lookup("aten.native_layer_norm_backward.default"),
                       {g, x, IntList{x.size(-1)}, mean, rstd, opt(w), opt(b), mask});
}

// ---- native_layer_norm ----

TEST(NormalizationLayerNorm, ValuesWithWeightAndBias) {
  auto [out, mean, rstd] = native_layer_norm(ln_a(), {3}, ln_w(), ln_b(), 1e-5);
  EXPECT_TRUE(allclose(out,
                       f32({0.19411808252334595f, 0.8274540305137634f, 2.0843253135681152f,
                            2.2027347087860107f, 0.46958136558532715f, -2.0253207683563232f},
                           {2, 3}),
                       1e-6));
  EXPECT_EQ(mean.sizes(), (IntList{2, 1}));
  EXPECT_EQ(rstd.sizes(), (IntList{2, 1}));
  EXPECT_TRUE(allclose(mean, f32({0.4166666865348816f, 0.8333333134651184f}, {2, 1}), 1e-7));
  EXPECT_TRUE(allclose(rstd, f32({0.752944827079773f, 0.6469953060150146f}, {2, 1}), 1e-7));
  EXPECT_TRUE(allclose(layer_norm(ln_a(), {3}),
                       f32({0.06274539232254028f, -1.2549080848693848f, 1.1921626329421997f,
                            1.4018231630325317f, -0.5391627550125122f, -0.8626604080200195f},
                           {2, 3}),
                       1e-6));
  EXPECT_TRUE(allclose(layer_norm(ln_a(), {3}, Tensor(), Tensor(), 0.5),
                       f32({0.05538487434387207f, -1.107697606086731f, 1.0523127317428589f,
                            1.2747548818588257f, -0.4902903139591217f, -0.7844644784927368f},
                           {2, 3}),
                       1e-6));
}

TEST(NormalizationLayerNorm, TwoNormalizedDims) {
  Tensor c = sin(view(arange(0.0, 24.0), {2, 3, 4}));
  auto [out, mean, rstd] = native_layer_norm(c, {3, 4}, Tensor(), Tensor(), 1e-5);
  EXPECT_EQ(mean.sizes(), (IntList{2, 1, 1}));
  EXPECT_TRUE(allclose(mean, f32({0.03426649048924446f, 0.04738399013876915f}, {2, 1, 1}), 1e-6));
  EXPECT_TRUE(allclose(rstd, f32({1.4156959056854248f, 1.4528586864471436f}, {2, 1, 1}), 1e-6));
  EXPECT_TRUE(allclose(out,
                       f32({-0.04851093143224716f, 1.1427561044692993f,   1.2387776374816895f,
                            0.15127207338809967f,  -1.119913101196289f,   -1.4060561656951904f,
                            -0.4440782964229584f,  0.8815823197364807f,   1.3521194458007812f,
                            0.5349235534667969f,   -0.8186793923377991f,  -1.4641929864883423f,
                            -0.8484069108963013f,  0.5416010618209839f,   1.3703702688217163f,
                            0.8759341239929199f,   -0.48712506890296936f, -1.4656169414520264f,
                            -1.159920573234558f,   0.14890815317630768f,  1.2575381994247437f,
                            1.146700143814087f,    -0.08170194178819656f, -1.2982808351516724f},
                           {2, 3, 4}),
                       1e-5));
}

TEST(NormalizationLayerNorm, StridedAndEdgeShapes) {
  Tensor x = test_input({5, 4}, -2, 2, 3, false);
  Tensor xt = transpose(x, 0, 1);  // [4, 5], strides {1, 4}
  EXPECT_TRUE(allclose(layer_norm(xt, {5}), layer_norm(contiguous(xt), {5}), 1e-14));
  // No rows: empty results. Empty rows: mean 0, rstd NaN, as torch.
  auto [o0, m0, r0] = native_layer_norm(zeros({0, 3}), {3}, Tensor(), Tensor(), 1e-5);
  EXPECT_EQ(o0.sizes(), (IntList{0, 3}));
  EXPECT_EQ(m0.sizes(), (IntList{0, 1}));
  auto [o1, m1, r1] = native_layer_norm(zeros({2, 0}), {0}, Tensor(), Tensor(), 1e-5);
  EXPECT_EQ(m1.to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_TRUE(std::isnan(r1.to_vector<float>()[0]));
  // A single element per row normalizes to 0 (+ bias).
  EXPECT_TRUE(allclose(layer_norm(f32({3, -7}, {2, 1}), {1}, Tensor(), f32({0.5}, {1})),
                       f32({0.5, 0.5}, {2, 1})));
}

TEST(NormalizationLayerNorm, Errors) {
  EXPECT_THROW(layer_norm(ln_a(), {2}), std::invalid_argument);
  EXPECT_THROW(layer_norm(ln_a(), {2, 3, 1}), std::invalid_argument);
  EXPECT_THROW(layer_norm(ln_a(), {}), std::invalid_argument);
  EXPECT_THROW(layer_norm(ln_a(), {3}, f32({1, 1}, {2})), std::invalid_argument);
  EXPECT_THROW(layer_norm(ln_a(), {3}, Tensor(), to(ln_b(), DType::f64)), std::invalid_argument);
  EXPECT_THROW(layer_norm(from_vector(std::vector<int64_t>{1, 2}, {2}), {2}),
               std::invalid_argument);
  try {
    layer_norm(ln_a(), {4});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("normalized_shape [4]"), std::string::npos) << e.what();
  }
}

TEST(NormalizationLayerNorm, SixteenBitComputesInF32) {
  Tensor xb = to(ln_a(), DType::bf16);
  auto [out, mean, rstd] =
      native_layer_norm(xb, {3}, to(ln_w(), DType::bf16), to(ln_b(), DType::bf16), 1e-5);
  EXPECT_EQ(out.dtype(), DType::bf16);
  EXPECT_EQ(mean.dtype(), DType::f32);  // statistics keep full precision
  EXPECT_EQ(rstd.dtype(), DType::f32);
  Tensor ref = layer_norm(to(xb, DType::f32), {3}, to(to(ln_w(), DType::bf16), DType::f32),
                          to(to(ln_b(), DType::bf16), DType::f32));
  EXPECT_TRUE(allclose(to(out, DType::f32), to(to(ref, DType::bf16), DType::f32), 0, 0));
  Tensor xh = to(ln_a(), DType::f16);
  EXPECT_TRUE(allclose(to(layer_norm(xh, {3}), DType::f32), layer_norm(ln_a(), {3}), 2e-3, 2e-3));
}

TEST(NormalizationLayerNorm, BackwardRowAndOutputMask) {
  auto [out, mean, rstd] = native_layer_norm(ln_a(), {3}, ln_w(), ln_b(), 1e-5);
  std::vector<Tensor> all =
      layer_norm_backward_row(ln_g(), ln_a(), mean, rstd, ln_w(), ln_b(), {1, 1, 1});
  EXPECT_TRUE(allclose(all[0],
                       f32({1.522193431854248f, -0.7025489807128906f, -0.8196444511413574f,
                            0.015047013759613037f, -0.10532504320144653f, 0.09027805924415588f},
                           {2, 3}),
                       1e-6));
  EXPECT_TRUE(allclose(
      all[1], f32({0.7636569738388062f, -2.240234851837158f, -1.4078277349472046f}, {3}), 1e-6));
  EXPECT_TRUE(allclose(all[2], f32({1.5f, 1.5f, -0.75f}, {3}), 1e-7));
  // A false mask entry gives an empty placeholder (ATen: undefined).
  std::vector<Tensor> only_input =
      layer_norm_backward_row(ln_g(), ln_a(), mean, rstd, ln_w(), ln_b(), {1, 0, 0});
  EXPECT_TRUE(allclose(only_input[0], all[0], 0, 0));
  EXPECT_EQ(only_input[1].sizes(), (IntList{0}));
  EXPECT_EQ(only_input[2].sizes(), (IntList{0}));
  // A mask of another length is one line that names the op and the three gradients.
  try {
    layer_norm_backward_row(ln_g(), ln_a(), mean, rstd, ln_w(), ln_b(), {1, 1});
    ADD_FAILURE() << "a 2-entry output_mask was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "aten.native_layer_norm_backward.default: output_mask must have 3 entries "
                 "(grad_input, grad_weight, grad_bias), got 2");
  }
  std::vector<Tensor> params =
      layer_norm_backward_row(ln_g(), ln_a(), mean, rstd, ln_w(), ln_b(), {0, 1, 1});
  EXPECT_EQ(params[0].sizes(), (IntList{0}));
  EXPECT_TRUE(allclose(params[1], all[1], 0, 0));
  // Without weight, grad_input of the plain normalization.
  auto [o2, m2, r2] = native_layer_norm(ln_a(), {3}, Tensor(), Tensor(), 1e-5);
  std::vector<Tensor> plain =
      layer_norm_backward_row(ln_g(), ln_a(), m2, r2, Tensor(), Tensor(), {1, 0, 0});
  EXPECT_TRUE(allclose(plain[0],
                       f32({0.308292031288147f, -0.1422823667526245f, -0.166009783744812f,
                            0.04137853533029556f, -0.28964361548423767f, 0.24826505780220032f},
                           {2, 3}),
                       1e-6));
}

TEST(NormalizationLayerNorm, Gradcheck) {
  Tensor x = test_input({4, 5}, -2, 2, 1);
  Tensor w = test_input({5}, 0.5, 1.5, 2);
  Tensor b = test_input({5}, -1, 1, 3);
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}, in[1], in[2]); },
                {x, w, b}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}, in[1]); },
                        {x, w}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}, Tensor(), in[1]); },
      {x, b}));
  // Two normalized dims, a strided input, and parameters only (input does not require grad).
  Tensor x3 = test_input({2, 3, 4}, -2, 2, 4);
  Tensor w2 = test_input({3, 4}, 0.5, 1.5, 5);
  Tensor b2 = test_input({3, 4}, -1, 1, 6);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return layer_norm(in[0], {3, 4}, in[1], in[2]);
      },
      {x3, w2, b2}));
  Tensor xs = test_input({5, 4}, -2, 2, 7);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) { return layer_norm(transpose(in[0], 0, 1), {5}, in[1]); },
      {xs, w}));
  Tensor fixed = test_input({4, 5}, -2, 2, 8, /*requires_grad=*/false);
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) { return layer_norm(fixed, {5}, in[0], in[1]); }, {w, b}));
}

TEST(NormalizationLayerNorm, StatisticsDoNotNeedGradients) {
  // Using mean / rstd as outputs too: their (absent) gradients are ignored, as in PyTorch.
  Tensor x = test_input({3, 4}, -1, 1, 9);
  auto [out, mean, rstd] = native_layer_norm(x, {4}, Tensor(), Tensor(), 1e-5);
  EXPECT_TRUE(mean.requires_grad());
  sum(out).backward();
  ASSERT_TRUE(x.grad().defined());
  // sum over a normalized row has zero derivative.
  EXPECT_TRUE(allclose(x.grad(), zeros({3, 4}, DType::f64), 1e-12));
}

// ---- native_dropout ----

TEST(NormalizationDropout, SameSeedSameMask) {
  Tensor x = ones({64, 33});
  manual_seed(123);
  auto [o1, m1] = native_dropout(x, 0.3, true);
  auto [o2, m2] = native_dropout(x, 0.3, true);  // the generator moved on
  manual_seed(123);
  auto [o3, m3] = native_dropout(x, 0.3, true);
  EXPECT_EQ(m1.dtype(), DType::b8);
  EXPECT_EQ(m1.to_vector<int64_t>(), m3.to_vector<int64_t>());
  EXPECT_TRUE(allclose(o1, o3, 0, 0));
  EXPECT_NE(m1.to_vector<int64_t>(), m2.to_vector<int64_t>());
  manual_seed(124);
  auto [o4, m4] = native_dropout(x, 0.3, true);
  EXPECT_NE(m1.to_vector<int64_t>(), m4.to_vector<int64_t>());
  // The mask depends only on the seed and the element's position, not on the dtype.
  manual_seed(123);
  auto [o5, m5] = native_dropout(to(x, DType::f64), 0.3, std::nullopt);
  EXPECT_EQ(m1.to_vector<int64_t>(), m5.to_vector<int64_t>());
}

TEST(NormalizationDropout, KeepsAboutOneMinusPAndScales) {
  manual_seed(7);
  Tensor x = test_input({100, 100}, 0.5, 1.5, 1, false);
  auto [out, mask] = native_dropout(x, 0.3, true);
  const double kept = sum(mask).item<double>() / 10000.0;
  EXPECT_NEAR(kept, 0.7, 0.02);
  // out = x * mask / (1 - p) exactly.
  EXPECT_TRUE(allclose(out, div(mul(x, mask), 0.7), 1e-15));
  // A strided input: element k of the output belongs to logical element k.
  manual_seed(8);
  Tensor xt = transpose(x, 0, 1);
  auto [ot, mt] = native_dropout(xt, 0.5, true);
  EXPECT_TRUE(allclose(ot, mul(mul(xt, mt), 2.0), 1e-15));
}

TEST(NormalizationDropout, EdgeProbabilitiesAndEval) {
  Tensor x = test_input({5, 6}, -1, 1, 2, false);
  auto [o0, m0] = native_dropout(x, 0.0, true);
  EXPECT_TRUE(allclose(o0, x, 0, 0));
  EXPECT_EQ(sum(m0).item<int64_t>(), 30);
  auto [o1, m1] = native_dropout(x, 1.0, true);
  EXPECT_TRUE(allclose(o1, zeros({5, 6}, DType::f64), 0, 0));
  EXPECT_EQ(sum(m1).item<int64_t>(), 0);
  // Eval: a copy and an all-true mask, no random numbers drawn.
  manual_seed(5);
  auto [oe, me] = native_dropout(x, 0.5, false);
  EXPECT_TRUE(allclose(oe, x, 0, 0));
  EXPECT_FALSE(oe.is_same(x));
  EXPECT_EQ(sum(me).item<int64_t>(), 30);
  EXPECT_EQ(default_generator().offset(), 0u);
  // The functional form returns its input when nothing is dropped.
  EXPECT_TRUE(dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0).is_same(x));
  EXPECT_THROW(dropout(x, 1.5), std::invalid_argument);
  EXPECT_THROW(native_dropout(x, -0.1, true), std::invalid_argument);
  EXPECT_THROW(native_dropout(from_vector(std::vector<int64_t>{1}, {1}), 0.5, true),
               std::invalid_argument);
}

TEST(NormalizationDropout, GradientIsMaskTimesScale) {
  for (double p : {0.25, 1.0}) {
    Tensor x = test_input({6, 7}, -1, 1, 3);
    manual_seed(99);
    auto [out, mask] = native_dropout(x, p, true);
    EXPECT_FALSE(mask.requires_grad());
    Tensor g = test_input({6, 7}, -1, 1, 4, false);
    out.backward(g);
    const double scale = p == 1.0 ? 0.0 : 1.0 / (1.0 - p);
    EXPECT_TRUE(allclose(x.grad(), mul(mul(g, mask), scale), 1e-15)) << "p = " << p;
  }
  // Eval mode passes the gradient through.
  Tensor y = test_input({3}, -1, 1, 5);
  std::get<0>(native_dropout(y, 0.5, false)).backward(ones({3}, DType::f64));
  EXPECT_TRUE(allclose(y.grad(), ones({3}, DType::f64), 0, 0));
}

TEST(NormalizationDropout, Gradcheck) {
  // Seeding inside the function gives every evaluation the same mask, so it is linear in x.
  Tensor x = test_input({4, 5}, -1, 1, 6);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        manual_seed(2024);
        return dropout(in[0], 0.4);
      },
      {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        manual_seed(2025);
        return mul(dropout(transpose(in[0], 0, 1), 0.5), 3.0);
      },
      {x}));
}

// ---- meta agrees with the kernel ----

TEST(NormalizationMeta, MatchesKernelOutputs) {
  using ops::Arg;
  const Arg none = std::monostate{};
  auto [out, mean, rstd] = native_layer_norm(ln_a(), {3}, ln_w(), ln_b(), 1e-5);
  Tensor x3 = test_input({2, 3, 4}, -1, 1, 1, false), xb = to(ln_a(), DType::bf16);
  Tensor mask = from_vector(std::vector<bool>{true, false, true, true, false, true}, {2, 3});
  const std::vector<std::pair<std::string_view, ops::OpArgs>> calls = {
      {"aten.native_layer_norm.default", {ln_a(), IntList{3}, ln_w(), ln_b(), 1e-5}},
      {"aten.native_layer_norm.default", {x3, IntList{3, 4}, none, none, 1e-5}},
      {"aten.native_layer_norm.default", {transpose(x3, 0, 2), IntList{2}, none, none, 1e-5}},
      {"aten.native_layer_norm.default", {xb, IntList{3}, none, none, 1e-5}},
      {"aten.native_layer_norm_backward.default",
       {ln_g(), ln_a(), IntList{3}, mean, rstd, ln_w(), ln_b(), IntList{1, 1, 1}}},
      {"aten.native_layer_norm_backward.default",
       {ln_g(), ln_a(), IntList{3}, mean, rstd, none, ln_b(), IntList{0, 0, 1}}},
      {"aten.native_layer_norm_backward.default",
       {ln_g(), ln_a(), IntList{3}, mean, rstd, none, none, IntList{1, 1, 0}}},
      {"aten.native_dropout.default", {x3, 0.5, true}},
      {"aten.native_dropout.default", {transpose(x3, 0, 1), 0.5, false}},
      {"aten.native_dropout.default", {xb, 0.1, none}},
      {"aten.native_dropout_backward.default", {ln_g(), mask, 2.0}},
  };
  for (const auto& [name, call] : calls) {
    const ops::OpDef& op = ops::lookup(name);
    ops::OpArgs args = call;
    ops::normalize(op, args);
    std::vector<ops::TensorMeta> meta = op.meta(args);
    std::vector<Tensor> results = op.kernel(args);
    ASSERT_EQ(meta.size(), results.size()) << name;
    for (size_t i = 0; i < results.size(); ++i) {
      EXPECT_EQ(dtype_name(meta[i].dtype), dtype_name(results[i].dtype())) << name << " " << i;
      EXPECT_EQ(meta[i].sizes, results[i].sizes()) << name << " result " << i;
      EXPECT_EQ(meta[i].strides, results[i].strides()) << name << " result " << i;
    }
  }
}

// ---- compiled == eager ----

TEST(NormalizationCompiled, LayerNormMatchesEager) {
  auto with_affine = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return sum(mul(layer_norm(x, {6}, w, b), x));
  };
  auto g = testing::expect_compiled_matches_eager(
      with_affine, testing::inputs(test_input({4, 6}, -1, 1, 11), test_input({6}, 0.5, 1.5, 12),
                                   test_input({6}, -1, 1, 13)));
  EXPECT_NE(g.backward.find("aten.native_layer_norm_backward.default"), std::string::npos)
      << g.backward;
  auto two_dims = [](const Tensor& x) { return gelu(layer_norm(x, {3, 4})); };
  testing::expect_compiled_matches_eager(two_dims,
                                         testing::inputs(test_input({2, 3, 4}, -1, 1, 14)));
}

// LayerNorm -> GELU -> dropout -> Linear: compiled and eager draw the same mask when the seed is
// set before each run (tracing draws nothing).
TEST(NormalizationCompiled, LayerNormGeluDropoutBlock) {
  auto block = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& proj) {
    Tensor h = dropout(gelu(layer_norm(x, {8}, w, b), "tanh"), 0.25);
    return mm(h, proj);
  };
  Tensor x = test_input({6, 8}, -1, 1, 21), w = test_input({8}, 0.5, 1.5, 22);
  Tensor b = test_input({8}, -1, 1, 23), proj = test_input({8, 3}, -1, 1, 24);
  Tensor grad_out = test_input({6, 3}, -1, 1, 25, false);
  auto run = [&](auto&& fn) {
    std::vector<Tensor> leaves;
    for (const Tensor& t : {x, w, b, proj}) leaves.push_back(t.detach().clone().requires_grad_());
    manual_seed(31337);
    Tensor out = fn(leaves[0], leaves[1], leaves[2], leaves[3]);
    out.backward(grad_out);
    leaves.insert(leaves.begin(), out.detach());
    return leaves;
  };
  auto compiled = aot_function(block);
  std::vector<Tensor> eager = run(block);
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> comp = run(compiled);
    EXPECT_TRUE(allclose(comp[0], eager[0], 1e-12, 1e-10)) << "output, call " << call;
    for (size_t i = 1; i < eager.size(); ++i)
      EXPECT_TRUE(allclose(comp[i].grad(), eager[i].grad(), 1e-12, 1e-10))
          << "grad of input " << i - 1 << ", call " << call;
  }
  EXPECT_EQ(compiled.num_compilations(), 1u);
  const CompiledGraphs g = compiled.graphs();
  // Traced dropout is functional: the mask is drawn from the (seed, offset) graph inputs.
  EXPECT_NE(g.forward.find("aotgrad.philox_dropout_mask.default"), std::string::npos) << g.forward;
  EXPECT_NE(g.backward.find("aten.native_dropout_backward.default"), std::string::npos)
      << g.backward;
  EXPECT_NE(g.backward.find("b8["), std::string::npos) << "the mask is saved: " << g.backward;
  testing::compare_detail::expect_graph_text_round_trips(g.forward, "forward");
  testing::compare_detail::expect_graph_text_round_trips(g.backward, "backward");
}

}  // namespace
}  // namespace aotgrad
