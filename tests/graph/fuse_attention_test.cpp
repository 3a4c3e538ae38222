// Attention fusion (graph/fuse_attention.h) and the fused rows it emits (ops/attention.cpp,
// kernels/attention.h): the rows against the eager composite (values, gradients by finite
// differences, second derivatives, NaN rows, strided heads), and the pass end to end through
// aot_function / aot_module under both compilers, including the composites it must leave alone.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn/layers.h"
#include "ops/op.h"
#include "testing/attention.h"
#include "testing/gradcheck.h"
#include "testing/gradgradcheck.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::attention_composite;
using ag::testing::test_input;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The fused row, called as eager code calls any row (autograd records its VJP).
Tensor fused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale) {
  static const ag::ops::OpDef& row = ag::ops::lookup("aotgrad.masked_attention.default");
  return ag::ops::call1(
      row, {q, k, v, mask.defined() ? ag::ops::Arg(mask) : ag::ops::Arg(std::monostate{}), scale});
}

Tensor causal_mask(int64_t t, int64_t s) {
  std::vector<bool> future(static_cast<size_t>(t * s));
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < s; ++j) future[static_cast<size_t>(i * s + j)] = j > i;
  return ag::from_vector(future, {t, s});
}

// q, k, v as the heads of one [B, T, 3 * H * D] projection: strided [B, H, T, D] views.
std::array<Tensor, 3> heads(const Tensor& qkv, int64_t h) {
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3;
  std::vector<Tensor> parts = ag::split(qkv, c, 2);
  std::array<Tensor, 3> out;
  for (size_t i = 0; i < 3; ++i) out[i] = parts[i].reshape({b, t, h, c / h}).transpose(1, 2);
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(MaskedAttention, MatchesTheCompositeOnStridedHeadsWithGradients) {
  for (ag::DType dtype : {ag::DType::f32, ag::DType::f64}) {
    SCOPED_TRACE(ag::dtype_name(dtype));
    const double tol = dtype == ag::DType::f32 ? 1e-5 : 1e-12;
    Tensor qkv = test_input({2, 7, 24}, -1, 1, 3).to(dtype).detach();
    Tensor mask = causal_mask(7, 7);
    Tensor a = qkv.detach().requires_grad_(), b = qkv.detach().requires_grad_();
    auto [qa, ka, va] = heads(a, 2);
    auto [qb, kb, vb] = heads(b, 2);
    Tensor expected = attention_composite(qa, ka, va, mask, 0.25);
    Tensor got = fused(qb, kb, vb, mask, 0.25);
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_TRUE(allclose(got, expected, tol, tol)) << got << expected;
    Tensor w = test_input(expected.sizes(), -1, 1, 9, false).to(dtype);
    (expected * w).sum().backward();
    (got * w).sum().backward();
    EXPECT_TRUE(allclose(b.grad(), a.grad(), tol, tol)) << b.grad() << a.grad();
  }
}

TEST(MaskedAttention, GradcheckWithAndWithoutMaskAndABroadcastBatchMask) {
  Tensor q = test_input({2, 3, 4, 5}, -1, 1, 1), k = test_input({2, 3, 6, 5}, -1, 1, 2),
         v = test_input({2, 3, 6, 3}, -1, 1, 3);
  // A mask per batch entry ([2, 1, 4, 6]) with some masked positions but no fully masked row.
  std::vector<bool> m(2 * 4 * 6);
  for (size_t i = 0; i < m.size(); ++i) m[i] = (i * 7) % 5 == 1 && i % 6 != 0;
  Tensor mask = ag::from_vector(m, {2, 1, 4, 6});
  for (const Tensor& mk : {mask, Tensor()}) {
    EXPECT_TRUE(ag::testing::gradcheck(
        [&](const std::vector<Tensor>& in) { return fused(in[0], in[1], in[2], mk, 0.7); },
        {q, k, v}));
    EXPECT_TRUE(
        allclose(fused(q, k, v, mk, 0.7), attention_composite(q, k, v, mk, 0.7), 1e-12, 1e-12));
  }
}

TEST(MaskedAttention, SecondDerivativesThroughTheFusedRow) {
  Tensor q = test_input({2, 3, 4}, -1, 1, 4), k = test_input({2, 5, 4}, -1, 1, 5),
         v = test_input({2, 5, 2}, -1, 1, 6);
  Tensor mask = causal_mask(3, 5);
  EXPECT_TRUE(ag::testing::gradgradcheck(
      [&](const std::vector<Tensor>& in) { return fused(in[0], in[1], in[2], mask, 0.5); },
      {q, k, v}));
}

TEST(MaskedAttention, AFullyMaskedRowIsNanWithAZeroGradientAsInEager) {
  Tensor q = test_input({1, 3, 4}, -1, 1, 7), k = test_input({1, 3, 4}, -1, 1, 8),
         v = test_input({1, 3, 2}, -1, 1, 9);
  Tensor mask =
      ag::from_vector(std::vector<bool>{true, true, true, false, true, false, false, false, false},
                      {3, 3});  // row 0 all masked
  Tensor qa = q.detach().requires_grad_(), qb = q.detach().requires_grad_();
  Tensor expected = attention_composite(qa, k, v, mask, 1.0), got = fused(qb, k, v, mask, 1.0);
  std::vector<double> e = expected.to_vector<double>(), g = got.to_vector<double>();
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_EQ(std::isnan(g[i]), std::isnan(e[i])) << i;
    if (!std::isnan(e[i])) {
      EXPECT_NEAR(g[i], e[i], 1e-12) << i;
    }
  }
  // Rows 1 and 2 make the loss (row 0's output is NaN); row 0 of q gets a zero gradient.
  expected.slice(1, 1, 3).sum().backward();
  got.slice(1, 1, 3).sum().backward();
  EXPECT_TRUE(allclose(qb.grad(), qa.grad(), 1e-12, 1e-12)) << qb.grad() << qa.grad();
}

TEST(MaskedAttention, BadInputsGetOneLineNamingTheRow) {
  Tensor q = ag::randn({2, 4, 8}), k = ag::randn({2, 5, 8}), v = ag::randn({2, 5, 3});
  EXPECT_THROW(
      {
        try {
          fused(q, ag::randn({2, 5, 7}), v, Tensor(), 1.0);
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("aotgrad.masked_attention.default: key must be"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      std::invalid_argument);
  EXPECT_THROW(fused(q, k, v, ag::ones({4, 5}), 1.0), std::invalid_argument);  // not bool
  EXPECT_THROW(fused(q, k, v, causal_mask(3, 5), 1.0), std::invalid_argument);
  EXPECT_THROW(fused(q.to(ag::DType::i64), k, v, Tensor(), 1.0), std::invalid_argument);
  // Sequences whose [T, S] weights overflow a byte count (broadcast views: nothing allocated).
  const int64_t huge = int64_t{1} << 32;
  Tensor one = ag::zeros({1, 1, 1});
  try {
    fused(one.expand({1, huge, 1}), one.expand({1, huge, 1}), one.expand({1, huge, 1}), Tensor(),
          1.0);
    ADD_FAILURE() << "no error for [T, S] = [2^32, 2^32]";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("are too large to hold"), std::string::npos) << e.what();
  }
}

class FuseAttention : public ::testing::TestWithParam<std::string> {
 protected:
  ag::AotConfig config() const {
    ag::AotConfig c;
    c.fw_compiler = GetParam();
    c.fuse_attention = true;
    return c;
  }
};

INSTANTIATE_TEST_SUITE_P(Compilers, FuseAttention, ::testing::Values("interpreter", "cpp"));

TEST_P(FuseAttention, TransformerBlocksRunOneAttentionNodeEachWayAndMatchEager) {
  for (ag::DType dtype : {ag::DType::f32, ag::DType::f64}) {
    SCOPED_TRACE(ag::dtype_name(dtype));
    const double tol = dtype == ag::DType::f32 ? 2e-5 : 1e-11;
    auto make = [&] {
      ag::manual_seed(5);
      auto m = std::make_shared<nn::SequentialImpl>(std::vector<std::shared_ptr<nn::Module>>{
          std::make_shared<nn::TransformerBlock>(16, 4, 8, 32),
          std::make_shared<nn::TransformerBlock>(16, 4, 8, 32)});
      m->to(dtype);
      return m;
    };
    auto eager = make(), model = make();
    auto compiled = ag::aot_module(model, config());
    Tensor x = test_input({3, 8, 16}, -1, 1, 11).to(dtype).detach();
    Tensor xe = x.detach().requires_grad_(), xc = x.detach().requires_grad_();
    Tensor ye = eager->forward(xe), yc = compiled(xc);
    EXPECT_TRUE(allclose(yc, ye, tol, tol));
    Tensor w = test_input(ye.sizes(), -1, 1, 12, false).to(dtype);
    (ye * w).sum().backward();
    (yc * w).sum().backward();
    EXPECT_TRUE(allclose(xc.grad(), xe.grad(), tol, tol));
    auto pe = eager->named_parameters(), pc = model->named_parameters();
    for (size_t i = 0; i < pe.size(); ++i)
      EXPECT_TRUE(allclose(pc[i].second.grad(), pe[i].second.grad(), tol, tol)) << pe[i].first;
    ag::CompiledGraphs g = compiled.graphs();
    EXPECT_EQ(count(g.forward, "aotgrad.masked_attention.default"), 2u) << g.forward;
    EXPECT_EQ(count(g.backward, "aotgrad.masked_attention_backward.default"), 2u) << g.backward;
    for (const char* gone : {"aten._softmax", "aten.bmm", "aten.masked_fill"}) {
      EXPECT_EQ(g.forward.find(gone), std::string::npos) << gone << g.forward;
      EXPECT_EQ(g.backward.find(gone), std::string::npos) << gone << g.backward;
    }
    // The heads are read where the qkv projection left them: no clone feeds the attention.
    EXPECT_EQ(count(g.forward, "aten.clone.default"), 2u) << g.forward;  // the merged heads
    // The output gradient reaches the fused backward as a strided view, not a contiguous copy:
    // the only clones left lay out the q, k, v gradients for the qkv projection's backward.
    EXPECT_EQ(count(g.backward, "aten.clone.default"), 6u) << g.backward;
  }
}

TEST_P(FuseAttention, ThreeDimProductsDividedByAScaleWithoutMaskAndUnderNoGrad) {
  auto attend = [](const Tensor& q, const Tensor& k, const Tensor& v) {
    Tensor s = ag::div(ag::bmm(q, k.transpose(1, 2)), ag::Scalar(2.0));
    return ag::bmm(ag::softmax(s, -1), v).tanh();
  };
  auto f = ag::aot_function(attend, config());
  Tensor q = test_input({3, 4, 5}, -1, 1, 1), k = test_input({3, 6, 5}, -1, 1, 2),
         v = test_input({3, 6, 2}, -1, 1, 3);
  Tensor qc = q.detach().requires_grad_(), kc = k.detach().requires_grad_(),
         vc = v.detach().requires_grad_();
  Tensor expected = attend(q, k, v), got = f(qc, kc, vc);
  EXPECT_TRUE(allclose(got, expected, 1e-12, 1e-12));
  expected.sum().backward();
  got.sum().backward();
  for (auto [a, b] : {std::pair{qc, q}, std::pair{kc, k}, std::pair{vc, v}})
    EXPECT_TRUE(allclose(a.grad(), b.grad(), 1e-12, 1e-12)) << a.grad() << b.grad();
  ag::CompiledGraphs g = f.graphs();
  EXPECT_EQ(count(g.forward, "aotgrad.masked_attention.default"), 1u) << g.forward;
  EXPECT_NE(g.forward.find("scale=0.5"), std::string::npos) << g.forward;
  ag::NoGradGuard no_grad;
  Tensor inferred = f(q.detach(), k.detach(), v.detach());
  EXPECT_TRUE(allclose(inferred, expected, 1e-12, 1e-12));
  EXPECT_EQ(count(f.graphs().inference, "aotgrad.masked_attention.default"), 1u);
}

TEST_P(FuseAttention, CompositesItMustNotFuseStayAsTheyAre) {
  Tensor q = test_input({2, 3, 4}, -1, 1, 1), k = test_input({2, 3, 4}, -1, 1, 2),
         v = test_input({2, 3, 4}, -1, 1, 3);
  Tensor mask = causal_mask(3, 3);
  // The weights are returned too; a fill of 0 instead of -inf; softmax over the other dim.
  auto returns_weights = [](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& m) {
    Tensor p = ag::softmax(ag::masked_fill(ag::bmm(a, b.transpose(1, 2)), m, -kInf), -1);
    return std::vector<Tensor>{ag::bmm(p, c), p};
  };
  auto fills_zero = [](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& m) {
    return ag::bmm(ag::softmax(ag::masked_fill(ag::bmm(a, b.transpose(1, 2)), m, 0.0), -1), c);
  };
  auto other_dim = [](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& m) {
    return ag::bmm(ag::softmax(ag::masked_fill(ag::bmm(a, b.transpose(1, 2)), m, -kInf), 1), c);
  };
  auto f1 = ag::aot_function(returns_weights, config());
  auto f2 = ag::aot_function(fills_zero, config());
  auto f3 = ag::aot_function(other_dim, config());
  std::vector<Tensor> r1 = f1(q, k, v, mask), e1 = returns_weights(q, k, v, mask);
  EXPECT_TRUE(allclose(r1[0], e1[0], 1e-12, 1e-12));
  EXPECT_TRUE(allclose(r1[1], e1[1], 1e-12, 1e-12));
  EXPECT_TRUE(allclose(f2(q, k, v, mask), fills_zero(q, k, v, mask), 1e-12, 1e-12));
  Tensor e3 = other_dim(q, k, v, mask), r3 = f3(q, k, v, mask);
  EXPECT_TRUE(allclose(r3, e3, 1e-12, 1e-12)) << r3 << e3;  // NaN where both are NaN
  for (const std::string& fw : {f1.graphs().forward, f2.graphs().forward, f3.graphs().forward}) {
    EXPECT_EQ(fw.find("masked_attention"), std::string::npos) << fw;
    EXPECT_NE(fw.find("aten._softmax"), std::string::npos) << fw;
  }
}

TEST_P(FuseAttention, DropoutOnTheWeightsIsNotFused) {
  ag::manual_seed(1);
  auto attn = std::make_shared<nn::CausalSelfAttention>(16, 4, 8, 0.25);
  auto compiled = ag::aot_module(attn, config());
  compiled(test_input({2, 8, 16}, -1, 1, 4, false).to(ag::DType::f32));
  EXPECT_EQ(compiled.graphs().forward.find("masked_attention"), std::string::npos)
      << compiled.graphs().forward;
}

TEST(FuseAttentionOff, TheDefaultKeepsTheComposite) {
  auto f = ag::aot_function([](const Tensor& q, const Tensor& k, const Tensor& v) {
    return ag::bmm(ag::softmax(ag::bmm(q, k.transpose(1, 2)), -1), v);
  });
  f(test_input({2, 3, 4}), test_input({2, 3, 4}), test_input({2, 3, 4}));
  EXPECT_EQ(f.graphs().forward.find("masked_attention"), std::string::npos);
}

TEST(FuseAttentionOff, ExportedGraphsKeepTheCompositeForOtherCompilers) {
  // Exports hand graphs to other compilers: ATen ops only, whatever the default compiler is (this
  // binary's default is the interpreter; CI's cpp stage, AOTGRAD_COMPILER=cpp, is where the fused
  // row would otherwise appear).
  ag::manual_seed(2);
  auto attn = std::make_shared<nn::CausalSelfAttention>(16, 4, 8, 0.0);
  Tensor x = test_input({2, 8, 16}, -1, 1, 3, false).to(ag::DType::f32);
  const std::string forward = ag::aot_export_module(attn, std::tuple{x}).graph;
  ag::FlatFn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ag::sum(attention_composite(in[0], in[1], in[2], in[3], 0.5))};
  };
  Tensor q = test_input({2, 8, 4}), k = test_input({2, 8, 4}, -1, 1, 2),
         v = test_input({2, 8, 4}, -1, 1, 3);
  const std::string joint =
      ag::aot_export_joint_simple(fn, {q, k, v, causal_mask(8, 8)}, true).graph;
  for (const std::string& g : {forward, joint}) {
    EXPECT_EQ(g.find("masked_attention"), std::string::npos) << g;
    EXPECT_NE(g.find("aten._softmax"), std::string::npos) << g;
  }
}
