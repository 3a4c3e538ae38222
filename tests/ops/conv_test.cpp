// Convolution: values and gradients against PyTorch 1.13 (literals recorded with torch for the
// fixed pattern inputs below), oneDNN against the loop nest, finite-difference gradients
// (stride, padding, dilation, groups, non-contiguous inputs), the backward row's output_mask,
// dtypes, errors, and a ResNet block compiled == eager (running statistics included).
#include "kernels/conv.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::contains;
using testing::error_of;
using testing::f64;
using testing::gradcheck;
using testing::pattern;
using testing::test_input;

TEST(ConvValues, StridedPaddedWithBiasMatchesTorch) {
  for (DType dtype : {DType::f64, DType::f32}) {
    Tensor x = pattern({1, 2, 4, 4}, 37, 101, dtype).requires_grad_();
    Tensor w = pattern({3, 2, 3, 3}, 53, 97, dtype).requires_grad_();
    Tensor b = pattern({3}, 11, 7, dtype).requires_grad_();
    Tensor y = convolution(x, w, b, {2, 2}, {1, 1}, {1, 1}, false, {0, 0}, 1);
    const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
    EXPECT_TRUE(allclose(y,
                         f64({-1.7536, -2.95, -3.904, -2.1868, -0.1164, -2.3604, -0.9488, -0.5304,
                              -1.2188, 0.456, 0.8188, 1.2188},
                             {1, 3, 2, 2}),
                         tol));
    y.backward(pattern({1, 3, 2, 2}, 29, 31, dtype));
    EXPECT_TRUE(
        allclose(x.grad(),
                 f64({0.6964,  -0.0784, 0.3372,  -0.0716, -0.1372, 0.6236,  0.2324,  0.6348,
                      0.3748,  0.1772,  0.4124,  -0.0956, -0.4184, 1.2744,  -0.452,  1.2904,
                      0.0072,  0.5584,  -0.5096, 0.2068,  0.5188,  -0.4532, 0.8276,  -0.2056,
                      -0.5304, 0.7916,  -0.5512, 0.2212,  -0.1208, 0.3756,  -0.1352, 0.0164},
                     {1, 2, 4, 4}),
                 tol));
    EXPECT_TRUE(
        allclose(w.grad(),
                 f64({-0.34,   0.3276, -0.3828, 0.3092, 0.2236,  1.25,    -0.5556, 0.774,  -0.9872,
                      -0.2,    0.5964, -0.114,  0.5668, -1.13,   0.058,   -0.298,  0.4304, -0.3208,
                      -0.4488, 0.4332, -0.514,  0.4148, -0.5084, 1.4728,  -0.7508, 0.9928, -0.7832,
                      -0.264,  0.7916, -0.1556, 0.762,  -0.9272, -0.36,   -0.4036, 0.3316, -0.1112,
                      -0.5576, 0.5388, -0.6452, 0.5204, -0.6204, 1.8568,  -0.946,  1.2488, -1.0008,
                      -0.328,  0.9868, -0.1972, 0.9572, -1.1832, -0.4432, -0.5092, 0.4436, -0.1496},
                     {3, 2, 3, 3}),
                 tol));
    EXPECT_TRUE(allclose(b.grad(), f64({-2.38, -2.4, -3.04}, {3}), tol));
  }
}

TEST(ConvValues, GroupedDilatedAsymmetricMatchesTorch) {
  for (DType dtype : {DType::f64, DType::f32}) {
    Tensor x = pattern({2, 4, 5, 5}, 37, 101, dtype).requires_grad_();
    Tensor w = pattern({6, 2, 2, 3}, 53, 97, dtype).requires_grad_();
    Tensor y = convolution(x, w, Tensor(), {1, 2}, {1, 0}, {2, 1}, false, {0, 0}, 2);
    ASSERT_EQ(y.sizes(), (IntList{2, 6, 5, 2}));
    const double tol = dtype == DType::f64 ? 1e-12 : 2e-5;
    EXPECT_NEAR(y.sum().item<double>(), 3.966, 1e3 * tol);
    EXPECT_TRUE(allclose(
        y.select(0, 1).select(0, 3),
        f64({-0.1804, 1.2824, 0.604, 0.8924, 0.8604, -0.6692, -0.2568, -0.0492, -0.2676, 0.6588},
            {5, 2}),
        tol));
    y.backward(pattern({2, 6, 5, 2}, 29, 31, dtype));
    EXPECT_NEAR(x.grad().sum().item<double>(), 55.756, 1e3 * tol);
    EXPECT_TRUE(allclose(x.grad().select(0, 0).select(0, 1).select(0, 2),
                         f64({0.5408, -0.1292, 1.3064, -0.138, 0.8}, {5}), tol));
    EXPECT_TRUE(allclose(w.grad().reshape({72}).slice(0, 0, 12),
                         f64({0.9808, 0.598, 0.296, 0.9664, -0.3304, 0.2312, -0.7516, 0.118, 0.9876,
                              -0.184, -1.6424, 1.02},
                             {12}),
                         tol));
    EXPECT_TRUE(allclose(w.grad().reshape({72}).slice(0, 60, 72),
                         f64({-1.44, -0.032, 0.3256, -0.2424, -0.1496, 1.3168, -0.984, 0.828,
                              -0.2688, -1.0736, 0.1504, 0.4856},
                             {12}),
                         tol));
  }
}

// (input sizes, weight sizes, params) cases that exercise every oneDNN code path and the
// negative right padding ATen's floor division implies (H=5, k=2, stride 2).
struct Case {
  IntList input, weight;
  kernels::Conv2dParams p;
};
const Case kCases[] = {
    {{2, 3, 7, 7}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
    {{1, 4, 5, 5}, {6, 4, 2, 2}, {{2, 2}, {0, 0}, {1, 1}, 1}},
    {{2, 4, 9, 8}, {6, 2, 3, 2}, {{2, 1}, {1, 2}, {2, 3}, 2}},
    {{1, 8, 6, 6}, {8, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 8}},  // depthwise
    {{3, 16, 4, 4}, {5, 16, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 1}},
};

TEST(ConvOneDnn, MatchesLoopNestForwardAndBackward) {
  for (const Case& c : kCases) {
    Tensor x = test_input(c.input, -1, 1, 3, false).to(DType::f32);
    Tensor w = test_input(c.weight, -1, 1, 4, false).to(DType::f32);
    Tensor b = test_input({c.weight[0]}, -1, 1, 5, false).to(DType::f32);
    Tensor y = kernels::conv2d(x, w, b, c.p);
    EXPECT_TRUE(contains(kernels::conv2d_backend(x, w, c.p), "onednn"))
        << kernels::conv2d_backend(x, w, c.p);
    EXPECT_TRUE(allclose(y, kernels::conv2d_loop(x, w, b, c.p), 1e-5, 1e-5))
        << shape_to_string(c.input);
    // The f64 loop nest is the reference for both f32 paths.
    Tensor y64 = kernels::conv2d(x.to(DType::f64), w.to(DType::f64), b.to(DType::f64), c.p);
    EXPECT_TRUE(allclose(y, y64, 1e-5, 1e-5));
    Tensor g = test_input(y.sizes(), -1, 1, 6, false).to(DType::f32);
    auto r = kernels::conv2d_backward(g, x, w, c.p, {true, true, true});
    auto loop = kernels::conv2d_backward_loop(g, x, w, c.p, {true, true, true});
    for (int i = 0; i < 3; ++i)
      EXPECT_TRUE(allclose(r[i], loop[i], 1e-4, 1e-5)) << i << " " << shape_to_string(c.input);
  }
}

TEST(ConvOneDnn, ResNetLayerRunsOnOneDnn) {
  Tensor x = zeros({2, 64, 14, 14}), w = zeros({64, 64, 3, 3});
  EXPECT_TRUE(contains(kernels::conv2d_backend(x, w, {{1, 1}, {1, 1}, {1, 1}, 1}), "onednn:"));
  EXPECT_EQ(kernels::conv2d_backend(x.to(DType::f64), w.to(DType::f64), {}), "loop");
}

TEST(ConvGradcheck, StridePaddingDilationGroups) {
  struct G {
    IntList input, weight, stride, padding, dilation;
    int64_t groups;
    bool bias;
  };
  const G cases[] = {
      {{2, 2, 4, 5}, {3, 2, 3, 3}, {1}, {1}, {1}, 1, true},
      {{1, 2, 5, 5}, {2, 2, 2, 3}, {2, 1}, {0, 1}, {1, 2}, 1, false},
      {{2, 4, 5, 4}, {6, 2, 3, 2}, {2}, {1}, {2, 1}, 2, true},
      {{1, 3, 4, 4}, {3, 1, 3, 3}, {1}, {1}, {1}, 3, true},
  };
  for (const G& c : cases) {
    Tensor x = test_input(c.input, -1, 1, 1), w = test_input(c.weight, -1, 1, 2);
    Tensor b = c.bias ? test_input({c.weight[0]}, -1, 1, 3) : Tensor();
    std::vector<Tensor> inputs{x, w};
    if (c.bias) inputs.push_back(b);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return convolution(in[0], in[1], c.bias ? in[2] : Tensor(), c.stride, c.padding,
                             c.dilation, false, {0}, c.groups);
        },
        inputs))
        << shape_to_string(c.input) << " groups " << c.groups;
  }
}

TEST(ConvGradcheck, NonContiguousInputAndWeight) {
  // [N, H, W, C] storage viewed as [N, C, H, W] (channels-last), and a transposed weight.
  Tensor x_store = test_input({2, 4, 5, 3}, -1, 1, 7, false);
  Tensor w_store = test_input({3, 4, 3, 3}, -1, 1, 8, false);
  Tensor x = x_store.permute({0, 3, 1, 2}).requires_grad_();
  Tensor w = w_store.permute({1, 0, 2, 3}).requires_grad_();
  ASSERT_FALSE(x.is_contiguous());
  ASSERT_FALSE(w.is_contiguous());
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], Tensor(), {1}, {1}); },
      {x, w}));
  // Same values as the contiguous path.
  Tensor ref = conv2d(x.contiguous().detach(), w.contiguous().detach(), Tensor(), {1}, {1});
  EXPECT_TRUE(allclose(conv2d(x, w, Tensor(), {1}, {1}), ref, 1e-12));
  Tensor ref32 = conv2d(x.to(DType::f32).contiguous().detach(),
                        w.to(DType::f32).contiguous().detach(), Tensor(), {1}, {1});
  EXPECT_TRUE(allclose(
      conv2d(x.detach().to(DType::f32).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}),
             w.detach().to(DType::f32), Tensor(), {1}, {1}),
      ref32, 1e-6));
}

TEST(ConvBackwardRow, OutputMaskGivesEmptyResults) {
  Tensor x = pattern({1, 2, 4, 4}), w = pattern({3, 2, 3, 3}, 53, 97);
  Tensor g = pattern({1, 3, 4, 4}, 29, 31);
  const ops::OpDef& row = ops::lookup("aten.convolution_backward.default");
  auto full = ops::dispatch(row, {g, x, w, IntList{3}, IntList{1, 1}, IntList{1, 1}, IntList{1, 1},
                                  false, IntList{0, 0}, int64_t{1}, IntList{1, 1, 1}});
  auto weight_only =
      ops::dispatch(row, {g, x, w, std::monostate{}, IntList{1, 1}, IntList{1, 1}, IntList{1, 1},
                          false, IntList{0, 0}, int64_t{1}, IntList{0, 1, 0}});
  EXPECT_EQ(weight_only[0].sizes(), IntList{0});
  EXPECT_EQ(weight_only[2].sizes(), IntList{0});
  EXPECT_TRUE(allclose(weight_only[1], full[1], 1e-12));
  EXPECT_EQ(full[2].sizes(), IntList{3});
  // Bias gradient = grad_output summed over batch and space.
  EXPECT_TRUE(allclose(full[2], sum(g, {0, 2, 3}), 1e-12));
}

TEST(ConvDtypes, HalfBFloat16AndInt64) {
  Tensor x = pattern({1, 2, 5, 5}), w = pattern({3, 2, 3, 3}, 53, 97), b = pattern({3}, 11, 7);
  Tensor ref = conv2d(x, w, b, {1}, {1});
  for (DType dt : {DType::f16, DType::bf16}) {
    Tensor y = conv2d(x.to(dt), w.to(dt), b.to(dt), {1}, {1});
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_TRUE(allclose(y, ref, 0.1, 0.02)) << dtype_name(dt);
  }
  Tensor xi = from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  Tensor wi = from_vector(std::vector<int64_t>{1, 0, 0, -1}, {1, 1, 2, 2});
  Tensor yi = conv2d(xi, wi);
  EXPECT_EQ(yi.dtype(), DType::i64);
  EXPECT_EQ(yi.to_vector<int64_t>(), (std::vector<int64_t>{-4, -4, -4, -4}));
}

TEST(ConvShapes, UnbatchedInputAndEmptyBatch) {
  Tensor x = pattern({2, 5, 5}), w = pattern({3, 2, 3, 3}, 53, 97);
  Tensor y = conv2d(x, w, Tensor(), {2}, {1});
  EXPECT_EQ(y.sizes(), (IntList{3, 3, 3}));
  EXPECT_TRUE(allclose(y, conv2d(x.unsqueeze(0), w, Tensor(), {2}, {1}).squeeze(0), 1e-12));
  Tensor empty = conv2d(zeros({0, 2, 5, 5}), w.to(DType::f32), Tensor(), {1}, {1});
  EXPECT_EQ(empty.sizes(), (IntList{0, 3, 5, 5}));
}

TEST(ConvErrors, NameTheArgumentAndTheFix) {
  Tensor x = zeros({1, 4, 5, 5}), w = zeros({6, 2, 3, 3});
  EXPECT_TRUE(contains(error_of([&] { convolution(x, w, Tensor(), {1}, {0}, {1}, true, {0}, 2); }),
                       "expects its first dim to be the input channels"));
  EXPECT_TRUE(contains(error_of([&] { conv2d(x, w); }), "expects 2 input channels"));
  EXPECT_TRUE(contains(error_of([&] { conv2d(x, w, zeros({5}), {1}, {0}, {1}, 2); }),
                       "bias must have shape [6]"));
  EXPECT_TRUE(contains(error_of([&] {
                         conv2d(x, zeros({6, 4, 7, 7}));
                       }),
                       "kernel can't be larger than the padded input"));
  EXPECT_TRUE(contains(error_of([&] {
                         conv2d(x, zeros({6, 4, 3, 3}, DType::f64));
                       }),
                       "convert them to one dtype"));
  EXPECT_TRUE(contains(error_of([&] {
                         conv2d(zeros({1, 4, 5}).unsqueeze(0).unsqueeze(0), w);
                       }),
                       "expected a 4-D input"));
  EXPECT_TRUE(contains(error_of([&] {
                         conv2d(x, zeros({6, 4, 3, 3}), Tensor(), {0});
                       }),
                       "stride must be >= 1"));
}

// ---- a ResNet basic block, compiled == eager ----

Tensor basic_block(const Tensor& x, const Tensor& w1, const Tensor& g1, const Tensor& b1,
                   const Tensor& w2, const Tensor& g2, const Tensor& b2, const Tensor& rm1,
                   const Tensor& rv1, const Tensor& rm2, const Tensor& rv2) {
  Tensor h = relu(batch_norm(conv2d(x, w1, Tensor(), {1}, {1}), g1, b1, rm1, rv1, true));
  h = batch_norm(conv2d(h, w2, Tensor(), {1}, {1}), g2, b2, rm2, rv2, true, 0.2, 1e-3);
  return relu(h + x);
}

struct BlockState {
  std::vector<Tensor> params;   // x, w1, g1, b1, w2, g2, b2 (all require grad)
  std::vector<Tensor> buffers;  // rm1, rv1, rm2, rv2

  explicit BlockState(DType dtype) {
    const int64_t C = 4;
    IntList shapes[] = {{2, C, 5, 5}, {C, C, 3, 3}, {C}, {C}, {C, C, 3, 3}, {C}, {C}};
    uint64_t seed = 11;
    for (const IntList& s : shapes)
      params.push_back(test_input(s, -1, 1, seed++, false).to(dtype).requires_grad_());
    for (int i = 0; i < 2; ++i) {
      buffers.push_back(test_input({C}, -0.5, 0.5, seed++, false).to(dtype));
      buffers.push_back(test_input({C}, 0.5, 1.5, seed++, false).to(dtype));
    }
  }
  Tensor run(const std::function<Tensor(const std::vector<Tensor>&)>& f) const {
    std::vector<Tensor> all = params;
    all.insert(all.end(), buffers.begin(), buffers.end());
    return f(all);
  }
};

void expect_block_matches(DType dtype, double tol, const std::string& partitioner) {
  SCOPED_TRACE(partitioner);
  BlockState eager(dtype), compiled(dtype);
  auto step = aot_function(basic_block, AotConfig{.partitioner = partitioner});
  auto eager_call = [&] {
    return eager.run([](const std::vector<Tensor>& a) {
      return basic_block(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]);
    });
  };
  auto compiled_call = [&] {
    return compiled.run([&](const std::vector<Tensor>& a) {
      return step(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]);
    });
  };
  Tensor ye = eager_call(), yc = compiled_call();
  EXPECT_TRUE(allclose(yc, ye, tol, tol));
  for (size_t i = 0; i < eager.buffers.size(); ++i)
    EXPECT_TRUE(allclose(compiled.buffers[i], eager.buffers[i], tol, tol))
        << "running statistic " << i << " after one call";
  Tensor tangent = test_input(ye.sizes(), -1, 1, 99, false).to(dtype);
  ye.backward(tangent);
  yc.backward(tangent);
  for (size_t i = 0; i < eager.params.size(); ++i)
    EXPECT_TRUE(allclose(compiled.params[i].grad(), eager.params[i].grad(), tol, tol))
        << "gradient of input " << i;
  // A second call updates the statistics again, exactly as a second eager call does.
  eager_call();
  compiled_call();
  for (size_t i = 0; i < eager.buffers.size(); ++i)
    EXPECT_TRUE(allclose(compiled.buffers[i], eager.buffers[i], tol, tol))
        << "running statistic " << i << " after two calls";
  EXPECT_EQ(step.num_compilations(), 1u);
  CompiledGraphs g = step.graphs();
  EXPECT_TRUE(contains(g.forward, "aten._native_batch_norm_legit_functional.default")) << g.forward;
  EXPECT_TRUE(contains(g.forward, "aten.convolution.default")) << g.forward;
  EXPECT_TRUE(contains(g.backward, "aten.convolution_backward.default")) << g.backward;
  EXPECT_TRUE(contains(g.backward, "aten.native_batch_norm_backward.default")) << g.backward;
}

TEST(ConvResNetBlock, CompiledMatchesEagerIncludingRunningStatsF64) {
  expect_block_matches(DType::f64, 1e-12, "default");
  expect_block_matches(DType::f64, 1e-12, "min_cut");
}

TEST(ConvResNetBlock, CompiledMatchesEagerIncludingRunningStatsF32) {
  expect_block_matches(DType::f32, 1e-5, "default");
}

// Stem + block + head as in torchvision's ResNet: conv-bn-relu-maxpool, the block, then
// adaptive_avg_pool2d and a linear layer; eval mode uses (and keeps) the running statistics.
Tensor tiny_resnet(const Tensor& x, const Tensor& w0, const Tensor& w1, const Tensor& w2,
                   const Tensor& fc, const Tensor& rm, const Tensor& rv, bool training) {
  Tensor h =
      relu(batch_norm(conv2d(x, w0, Tensor(), {2}, {3}), Tensor(), Tensor(), rm, rv, training));
  h = max_pool2d(h, {3}, {2}, {1});
  Tensor b = relu(conv2d(h, w1, Tensor(), {1}, {1}));
  h = relu(conv2d(b, w2, Tensor(), {1}, {1}) + h);
  h = adaptive_avg_pool2d(h, {1, 1}).reshape({x.size(0), 4});
  return matmul(h, fc);
}

TEST(ConvResNetBlock, TinyResNetTrainAndEvalCompiledMatchesEager) {
  for (bool training : {true, false}) {
    std::vector<Tensor> e{test_input({2, 3, 16, 16}, -1, 1, 1), test_input({4, 3, 7, 7}, -1, 1, 2),
                          test_input({4, 4, 3, 3}, -1, 1, 3), test_input({4, 4, 3, 3}, -1, 1, 4),
                          test_input({4, 5}, -1, 1, 5)};
    std::vector<Tensor> c;
    for (const Tensor& t : e) c.push_back(t.detach().clone().requires_grad_());
    Tensor rm_e = zeros({4}, DType::f64), rv_e = ones({4}, DType::f64);
    Tensor rm_c = rm_e.clone(), rv_c = rv_e.clone();
    auto f = aot_function(
        [training](const Tensor& x, const Tensor& w0, const Tensor& w1, const Tensor& w2,
                   const Tensor& fc, const Tensor& rm,
                   const Tensor& rv) { return tiny_resnet(x, w0, w1, w2, fc, rm, rv, training); });
    Tensor ye = tiny_resnet(e[0], e[1], e[2], e[3], e[4], rm_e, rv_e, training);
    Tensor yc = f(c[0], c[1], c[2], c[3], c[4], rm_c, rv_c);
    EXPECT_TRUE(allclose(yc, ye, 1e-12, 1e-12));
    ye.sum().backward();
    yc.sum().backward();
    for (size_t i = 0; i < e.size(); ++i)
      EXPECT_TRUE(allclose(c[i].grad(), e[i].grad(), 1e-12, 1e-12)) << "input " << i;
    EXPECT_TRUE(allclose(rm_c, rm_e, 1e-14));
    EXPECT_TRUE(allclose(rv_c, rv_e, 1e-14));
    if (!training) {
      EXPECT_TRUE(allclose(rm_c, zeros({4}, DType::f64), 0));
    }
    const std::string fw = f.graphs().forward;
    EXPECT_TRUE(contains(fw, "aten.max_pool2d_with_indices.default")) << fw;
    EXPECT_TRUE(contains(f.graphs().backward, "aten.max_pool2d_with_indices_backward.default"));
  }
}

}  // namespace
}  // namespace aotgrad
