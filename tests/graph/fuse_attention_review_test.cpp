// Review of attention fusion (graph/fuse_attention.h, ops/attention.cpp, kernels/attention.h):
// composites the pass may meet in user code (broadcast heads, masks of every broadcast shape and
// layout, odd scales, empty dims, other dtypes, stacked attention, the result as a graph output)
// compiled with fuse_attention under both compilers must give the eager composite's values and
// gradients; and the fused row itself on operands of odd geometry (zero and overlapping strides,
// size-1 dims with odd strides).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "kernels/vec/rows.h"
#include "ops/op.h"
#include "testing/attention.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::attention_composite;
using ag::testing::test_input;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A bool mask of `sizes`, about a third true, deterministic.
Tensor some_mask(const ag::IntList& sizes, uint64_t seed) {
  return ag::lt(test_input(sizes, 0, 1, seed, false), ag::Scalar(0.3));
}

// Leaves with t's values and requires_grad, not sharing autograd state with t.
std::vector<Tensor> leaves(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    Tensor c = t.detach().clone();
    if (t.requires_grad()) c.requires_grad_();
    out.push_back(c);
  }
  return out;
}

// Runs fn eagerly and compiled with fuse_attention under `compiler` on copies of `in`; expects
// equal values, strides and input gradients, and `fused` masked_attention rows in the forward
// (or inference) graph. Returns the compiled forward text.
std::string expect_fused_matches_eager(const Fn& fn, const std::vector<Tensor>& in,
                                       const std::string& compiler, size_t fused, double tol) {
  ag::AotConfig config;
  config.fw_compiler = compiler;
  config.fuse_attention = true;
  auto compiled = ag::aot_function(fn, config);
  std::vector<Tensor> xe = leaves(in), xc = leaves(in);
  Tensor ye = fn(xe), yc;
  try {
    yc = compiled(xc);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "compiled threw: " << e.what();
    return {};
  }
  EXPECT_TRUE(allclose(yc, ye, tol, tol)) << "values\n" << compiled.graphs().forward;
  EXPECT_EQ(yc.strides(), ye.strides());
  EXPECT_EQ(yc.requires_grad(), ye.requires_grad());
  if (ye.requires_grad() && yc.requires_grad() && ye.numel() > 0) {
    Tensor w = test_input(ye.sizes(), -1, 1, 99, false).to(ye.dtype());
    ag::sum(ye * w).backward();
    ag::sum(yc * w).backward();
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].requires_grad()) continue;
      EXPECT_TRUE(allclose(xc[i].grad(), xe[i].grad(), tol, tol)) << "grad of input " << i << "\n"
                                                                  << compiled.graphs().backward;
    }
  }
  ag::CompiledGraphs g = compiled.graphs();
  const std::string& fw = g.is_inference ? g.inference : g.forward;
  EXPECT_EQ(count(fw, "aotgrad.masked_attention.default"), fused) << fw;
  return fw;
}

class FuseAttentionReview : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Compilers, FuseAttentionReview, ::testing::Values("interpreter", "cpp"));

// Multi-query attention: k and v are one head broadcast over the query's heads (matmul expands
// them: stride 0 over H), with a [1, T, S] mask.
TEST_P(FuseAttentionReview, BroadcastKeyAndValueHeadsWithAThreeDimMask) {
  Fn fn = [](const std::vector<Tensor>& x) {
    Tensor q = x[0].transpose(1, 2);  // [B, H, T, D] strided
    return attention_composite(q, x[1], x[2], x[3], 0.5);
  };
  std::vector<Tensor> in{test_input({2, 5, 3, 4}), test_input({2, 1, 6, 4}, -1, 1, 2),
                         test_input({2, 1, 6, 3}, -1, 1, 3), some_mask({1, 5, 6}, 4)};
  expect_fused_matches_eager(fn, in, GetParam(), 1, 1e-11);
}

// Masks of each broadcast shape and layout against [B, H, T, S] weights.
TEST_P(FuseAttentionReview, MasksOfEveryBroadcastShapeAndLayout) {
  const int64_t b = 2, h = 3, t = 4, s = 5, d = 3;
  std::vector<std::pair<std::string, Tensor>> masks{
      {"[B,1,T,S]", some_mask({b, 1, t, s}, 1)},
      {"[B,H,T,S]", some_mask({b, h, t, s}, 2)},
      {"[1,1,T,S]", some_mask({1, 1, t, s}, 3)},
      {"[S]", some_mask({s}, 4)},
      {"[T,1]", some_mask({t, 1}, 5)},
      {"[B,1,1,S]", some_mask({b, 1, 1, s}, 6)},
      {"[H,T,S] transposed", some_mask({h, s, t}, 7).transpose(-2, -1)},
      {"[B,H,T,S] permuted", some_mask({t, h, b, s}, 8).permute({2, 1, 0, 3})},
      {"[T,S] expanded", some_mask({t, 1}, 9).expand({t, s})},
      {"[T,S] sliced", some_mask({t, 2 * s}, 10).slice(1, 0, 2 * s, 2)},
  };
  for (auto& [name, mask] : masks) {
    SCOPED_TRACE(name);
    Fn fn = [](const std::vector<Tensor>& x) {
      return attention_composite(x[0], x[1], x[2], x[3], 0.7);
    };
    std::vector<Tensor> in{test_input({b, h, t, d}), test_input({b, h, s, d}, -1, 1, 2),
                           test_input({b, h, s, 2}, -1, 1, 3), mask};
    expect_fused_matches_eager(fn, in, GetParam(), 1, 1e-11);
    // The same mask in f32 takes the vectorized scale-or-fill rows.
    std::vector<Tensor> in32{in[0].to(ag::DType::f32).detach().requires_grad_(),
                             in[1].to(ag::DType::f32).detach().requires_grad_(),
                             in[2].to(ag::DType::f32).detach().requires_grad_(), mask};
    expect_fused_matches_eager(fn, in32, GetParam(), 1, 2e-5);
  }
}

// A 3-D composite (bmm) with masks that broadcast over [N, T, S].
TEST_P(FuseAttentionReview, ThreeDimProductsWithBroadcastMasks) {
  for (const Tensor& mask : {some_mask({5}, 1), some_mask({1, 4, 5}, 2), some_mask({3, 4, 5}, 3),
                             some_mask({3, 1, 5}, 4)}) {
    SCOPED_TRACE(ag::shape_to_string(mask.sizes()));
    Fn fn = [](const std::vector<Tensor>& x) {
      Tensor s = ag::mul(ag::bmm(x[0], x[1].transpose(1, 2)), ag::Scalar(0.3));
      return ag::bmm(ag::softmax(ag::masked_fill(s, x[3], ag::Scalar(-kInf)), -1), x[2]).tanh();
    };
    std::vector<Tensor> in{test_input({3, 4, 2}), test_input({3, 5, 2}, -1, 1, 2),
                           test_input({3, 5, 3}, -1, 1, 3), mask};
    expect_fused_matches_eager(fn, in, GetParam(), 1, 1e-11);
  }
}

// Scales the fused row must apply as the composite does: negative, zero, infinite, NaN, and
// divisions (by zero and negative zero included).
TEST_P(FuseAttentionReview, OddScalesAndDivisorsMatchTheComposite) {
  Tensor mask = some_mask({4, 5}, 3);
  for (double scale : {-0.5, 0.0, kInf, -kInf, kNan, 3.0, 1 / std::sqrt(7.0), 1e-300}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    Fn fn = [scale](const std::vector<Tensor>& x) {
      return attention_composite(x[0], x[1], x[2], x[3], scale);
    };
    std::vector<Tensor> in{test_input({2, 2, 4, 3}), test_input({2, 2, 5, 3}, -1, 1, 2),
                           test_input({2, 2, 5, 2}, -1, 1, 3), mask};
    expect_fused_matches_eager(fn, in, GetParam(), 1, 1e-11);
  }
  // A divisor whose reciprocal overflows f32 is left as a division (0 fused rows).
  for (double divisor : {3.0, 0.0, -0.0, kInf, -7.0, std::sqrt(8.0), 1e-300}) {
    SCOPED_TRACE("divisor " + std::to_string(divisor));
    Fn fn = [divisor](const std::vector<Tensor>& x) {
      Tensor s = ag::div(ag::matmul(x[0], x[1].transpose(-2, -1)), ag::Scalar(divisor));
      return ag::matmul(ag::softmax(ag::masked_fill(s, x[3], ag::Scalar(-kInf)), -1), x[2]);
    };
    std::vector<Tensor> in{test_input({2, 2, 4, 3}), test_input({2, 2, 5, 3}, -1, 1, 2),
                           test_input({2, 2, 5, 2}, -1, 1, 3), mask};
    expect_fused_matches_eager(fn, in, GetParam(), divisor == 1e-300 ? 0 : 1, 1e-11);
  }
}

// A fully masked row under a NaN or infinite scale: the composite's backward zeroes the masked
// scores' gradient and then multiplies by the scale (0 * inf, 0 * NaN: NaN), so that row's query
// gradient is NaN, not 0.
TEST_P(FuseAttentionReview, FullyMaskedRowUnderANonFiniteScale) {
  std::vector<bool> bits(20, false);
  for (size_t j = 0; j < 5; ++j) bits[5 + j] = true;  // row 1 fully masked
  bits[2] = bits[13] = true;
  Tensor mask = ag::from_vector(bits, {4, 5});
  for (double scale : {kNan, kInf, -kInf, -0.5}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    Fn fn = [scale](const std::vector<Tensor>& x) {
      return attention_composite(x[0], x[1], x[2], x[3], scale);
    };
    std::vector<Tensor> in{test_input({2, 2, 4, 3}), test_input({2, 2, 5, 3}, -1, 1, 2),
                           test_input({2, 2, 5, 2}, -1, 1, 3), mask};
    expect_fused_matches_eager(fn, in, GetParam(), 1, 1e-11);
    std::vector<Tensor> in32{in[0].to(ag::DType::f32).detach().requires_grad_(),
                             in[1].to(ag::DType::f32).detach().requires_grad_(),
                             in[2].to(ag::DType::f32).detach().requires_grad_(), mask};
    expect_fused_matches_eager(fn, in32, GetParam(), 1, 2e-5);
  }
}

// Only some of q, k and v require grad: the backward computes those and no other.
TEST_P(FuseAttentionReview, OnlySomeOperandsRequireGrad) {
  for (int which = 1; which < 7; ++which) {
    SCOPED_TRACE(which);
    Fn fn = [](const std::vector<Tensor>& x) {
      return attention_composite(x[0], x[1], x[2], x[3], 0.5);
    };
    std::vector<Tensor> in{test_input({2, 2, 4, 3}, -1, 1, 1, (which & 1) != 0),
                           test_input({2, 2, 5, 3}, -1, 1, 2, (which & 2) != 0),
                           test_input({2, 2, 5, 2}, -1, 1, 3, (which & 4) != 0),
                           some_mask({4, 5}, 4)};
    expect_fused_matches_eager(fn, in, GetParam(), 1, 1e-11);
  }
}

// Empty dims: no queries, no keys, empty heads, empty value heads, an empty batch.
TEST_P(FuseAttentionReview, EmptyDimsGiveTheCompositesEmptyOrZeroResults) {
  struct Dims {
    int64_t b, t, s, d, dv;
  };
  for (Dims g : {Dims{2, 0, 3, 2, 2}, Dims{2, 3, 0, 2, 2}, Dims{2, 3, 4, 0, 2}, Dims{2, 3, 4, 2, 0},
                 Dims{0, 3, 4, 2, 2}}) {
    SCOPED_TRACE(std::to_string(g.b) + " " + std::to_string(g.t) + " " + std::to_string(g.s) + " " +
                 std::to_string(g.d) + " " + std::to_string(g.dv));
    Fn fn = [](const std::vector<Tensor>& x) {
      return attention_composite(x[0], x[1], x[2], x[3], 0.5);
    };
    std::vector<Tensor> in{test_input({g.b, 2, g.t, g.d}), test_input({g.b, 2, g.s, g.d}, -1, 1, 2),
                           test_input({g.b, 2, g.s, g.dv}, -1, 1, 3), some_mask({g.t, g.s}, 4)};
    expect_fused_matches_eager(fn, in, GetParam(), 1, 1e-11);
  }
}

// Half-precision composites: the fused row takes f32 and f64 only, so fusing one would make a
// working function throw.
TEST_P(FuseAttentionReview, HalfPrecisionCompositesStillRun) {
  for (ag::DType dtype : {ag::DType::bf16, ag::DType::f16}) {
    SCOPED_TRACE(ag::dtype_name(dtype));
    Fn fn = [](const std::vector<Tensor>& x) {
      return attention_composite(x[0], x[1], x[2], x[3], 0.5);
    };
    std::vector<Tensor> in{test_input({2, 2, 4, 3}).to(dtype).detach().requires_grad_(),
                           test_input({2, 2, 5, 3}, -1, 1, 2).to(dtype).detach().requires_grad_(),
                           test_input({2, 2, 5, 2}, -1, 1, 3).to(dtype).detach().requires_grad_(),
                           some_mask({4, 5}, 4)};
    // Whether the eager composite runs in this dtype at all decides what is expected.
    bool eager_runs = true;
    try {
      fn(leaves(in));
    } catch (const std::exception&) {
      eager_runs = false;
    }
    if (!eager_runs) continue;
    expect_fused_matches_eager(fn, in, GetParam(), 0, 1e-2);
  }
}

// Two 3-D attentions in a row, the second's query the first's result.
TEST_P(FuseAttentionReview, StackedAttentionsEachFuse) {
  Fn fn = [](const std::vector<Tensor>& x) {
    auto one = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m) {
      Tensor s = ag::mul(ag::bmm(q, k.transpose(1, 2)), ag::Scalar(0.5));
      return ag::bmm(ag::softmax(ag::masked_fill(s, m, ag::Scalar(-kInf)), -1), v);
    };
    Tensor o = one(x[0], x[1], x[2], x[3]);
    return one(o, x[1], x[2], x[3]).tanh();  // a product that is an output itself is not fused
  };
  std::vector<Tensor> in{test_input({3, 4, 2}), test_input({3, 4, 2}, -1, 1, 2),
                         test_input({3, 4, 2}, -1, 1, 3), some_mask({4, 4}, 5)};
  expect_fused_matches_eager(fn, in, GetParam(), 2, 1e-11);
  // The same in 4-D through matmul (the first result is read back through views).
  Fn fn4 = [](const std::vector<Tensor>& x) {
    Tensor o = attention_composite(x[0], x[1], x[2], x[3], 0.5);
    return attention_composite(o, x[1], x[2], x[3], 0.25);
  };
  std::vector<Tensor> in4{test_input({2, 3, 4, 2}), test_input({2, 3, 4, 2}, -1, 1, 2),
                          test_input({2, 3, 4, 2}, -1, 1, 3), some_mask({4, 4}, 5)};
  expect_fused_matches_eager(fn4, in4, GetParam(), 2, 1e-11);
}

// The attention result as the graph output itself, and read twice.
TEST_P(FuseAttentionReview, TheResultAsAnOutputAndReadTwice) {
  Fn direct = [](const std::vector<Tensor>& x) {
    return attention_composite(x[0], x[1], x[2], x[3], 0.5);
  };
  Fn twice = [](const std::vector<Tensor>& x) {
    Tensor o = attention_composite(x[0], x[1], x[2], x[3], 0.5);
    return o * o.sum({-1}, true) + o.tanh();
  };
  std::vector<Tensor> in{test_input({2, 3, 4, 2}), test_input({2, 3, 5, 2}, -1, 1, 2),
                         test_input({2, 3, 5, 3}, -1, 1, 3), some_mask({4, 5}, 5)};
  expect_fused_matches_eager(direct, in, GetParam(), 1, 1e-11);
  expect_fused_matches_eager(twice, in, GetParam(), 1, 1e-11);
  ag::NoGradGuard no_grad;
  std::vector<Tensor> plain;
  for (const Tensor& t : in) plain.push_back(t.detach());
  expect_fused_matches_eager(direct, plain, GetParam(), 1, 1e-11);
}

// Keys given other ways: already [*, D, S] as an input, through permute, one tensor as q, k and
// v, and keys transposed over batch dims (not the last two).
TEST_P(FuseAttentionReview, KeysGivenEveryWay) {
  Tensor mask = some_mask({4, 4}, 6);
  std::vector<std::pair<std::string, Fn>> fns{
      {"k^T input",
       [](const std::vector<Tensor>& x) {
         return attention_composite(x[0], x[1].transpose(-2, -1).contiguous().transpose(-2, -1),
                                    x[2], x[3], 0.5);
       }},
      {"permute",
       [](const std::vector<Tensor>& x) {
         Tensor s = ag::matmul(x[0], x[1].permute({0, 1, 3, 2}));
         return ag::matmul(ag::softmax(ag::masked_fill(s, x[3], ag::Scalar(-kInf)), -1), x[2]);
       }},
      {"self",
       [](const std::vector<Tensor>& x) {
         return attention_composite(x[0], x[0], x[0], x[3], 0.5);
       }},
      {"batch transpose",
       [](const std::vector<Tensor>& x) {
         return attention_composite(x[0], x[1].transpose(0, 1), x[2].transpose(0, 1), x[3], 0.5);
       }},
  };
  for (auto& [name, fn] : fns) {
    SCOPED_TRACE(name);
    std::vector<Tensor> in{test_input({2, 2, 4, 3}), test_input({2, 2, 4, 3}, -1, 1, 2),
                           test_input({2, 2, 4, 3}, -1, 1, 3), mask};
    expect_fused_matches_eager(fn, in, GetParam(), 1, 1e-11);
  }
}

// The output gradient as sum's backward makes it (expanded: every stride 0) and as a transpose
// makes it (columns strided), read by the fused backward.
TEST_P(FuseAttentionReview, OutputGradientsOfOddLayout) {
  Fn summed = [](const std::vector<Tensor>& x) {
    return ag::sum(attention_composite(x[0], x[1], x[2], x[3], 0.5));
  };
  Fn transposed = [](const std::vector<Tensor>& x) {
    return attention_composite(x[0], x[1], x[2], x[3], 0.5).transpose(-2, -1).contiguous();
  };
  std::vector<Tensor> in{test_input({2, 3, 4, 2}), test_input({2, 3, 5, 2}, -1, 1, 2),
                         test_input({2, 3, 5, 3}, -1, 1, 3), some_mask({4, 5}, 5)};
  expect_fused_matches_eager(summed, in, GetParam(), 1, 1e-11);
  expect_fused_matches_eager(transposed, in, GetParam(), 1, 1e-11);
}

// What the function computes under no_grad stays constant to the backward when the pass rewrites
// the graph: whether a value requires grad is the trace's answer, not data flow's.
TEST_P(FuseAttentionReview, ValuesComputedUnderNoGradStayConstants) {
  Fn fn = [](const std::vector<Tensor>& x) {
    Tensor c;
    {
      ag::NoGradGuard no_grad;
      c = x[0] * x[0];  // a constant factor, as eager sees it
    }
    return attention_composite(x[0], x[1], x[2], x[3], 0.5) * c;
  };
  std::vector<Tensor> in{test_input({2, 2, 4, 3}), test_input({2, 2, 5, 3}, -1, 1, 2),
                         test_input({2, 2, 5, 3}, -1, 1, 3), some_mask({4, 5}, 4)};
  expect_fused_matches_eager(fn, in, GetParam(), 1, 1e-11);
  // The whole composite under no_grad: its result is a constant too.
  Fn inside = [](const std::vector<Tensor>& x) {
    Tensor o;
    {
      ag::NoGradGuard no_grad;
      o = attention_composite(x[0], x[1], x[2], x[3], 0.5);
    }
    return x[0] * o;
  };
  expect_fused_matches_eager(inside, in, GetParam(), 1, 1e-11);
}

// The fused row on operands of odd geometry, against the composite, values and gradients.
TEST(MaskedAttentionReview, OperandsOfOddGeometryMatchTheComposite) {
  static const ag::ops::OpDef& row = ag::ops::lookup("aotgrad.masked_attention.default");
  auto fused = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m, double sc) {
    return ag::ops::call1(
        row, {q, k, v, m.defined() ? ag::ops::Arg(m) : ag::ops::Arg(std::monostate{}), sc});
  };
  using Make = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  // Each maker turns base leaves (q [2,4,3], k [2,5,3], v [2,5,2]) into strided operands.
  std::vector<std::pair<std::string, Make>> makers{
      {"query rows expanded (stride 0)",
       [](const std::vector<Tensor>& x) {
         return std::vector<Tensor>{x[0].slice(1, 0, 1).expand({2, 4, 3}), x[1], x[2]};
       }},
      {"batch expanded",
       [](const std::vector<Tensor>& x) {
         return std::vector<Tensor>{x[0], x[1].slice(0, 0, 1).expand({2, 5, 3}),
                                    x[2].slice(0, 1, 2).expand({2, 5, 2})};
       }},
      {"overlapping rows",
       [](const std::vector<Tensor>& x) {
         return std::vector<Tensor>{ag::as_strided(x[0], {2, 4, 3}, {12, 1, 1}, 0), x[1], x[2]};
       }},
      {"columns strided",
       [](const std::vector<Tensor>& x) {
         return std::vector<Tensor>{x[0].transpose(1, 2).contiguous().transpose(1, 2),
                                    x[1].transpose(0, 2).contiguous().transpose(0, 2), x[2]};
       }},
      {"one column, odd strides",
       [](const std::vector<Tensor>& x) {
         return std::vector<Tensor>{ag::as_strided(x[0], {2, 4, 1}, {12, 3, 7}, 1),
                                    ag::as_strided(x[1], {2, 5, 1}, {15, 3, 5}, 2),
                                    ag::as_strided(x[2], {2, 5, 1}, {10, 2, 9}, 1)};
       }},
      {"one row, odd strides",
       [](const std::vector<Tensor>& x) {
         return std::vector<Tensor>{ag::as_strided(x[0], {2, 1, 3}, {12, 1, 1}, 0),
                                    ag::as_strided(x[1], {2, 1, 3}, {15, 0, 1}, 0),
                                    ag::as_strided(x[2], {2, 1, 2}, {10, 100, 1}, 0)};
       }},
      {"row stride below columns",
       [](const std::vector<Tensor>& x) {
         return std::vector<Tensor>{ag::as_strided(x[0], {2, 4, 3}, {6, 2, 1}, 0),
                                    ag::as_strided(x[1], {2, 5, 3}, {3, 1, 1}, 0), x[2]};
       }},
  };
  for (ag::DType dtype : {ag::DType::f64, ag::DType::f32}) {
    const double tol = dtype == ag::DType::f32 ? 2e-5 : 1e-11;
    for (auto& [name, make] : makers) {
      for (bool with_mask : {false, true}) {
        SCOPED_TRACE(name + (with_mask ? " masked " : " ") + std::string(ag::dtype_name(dtype)));
        auto base = [&] {
          return std::vector<Tensor>{
              test_input({2, 4, 3}).to(dtype).detach().requires_grad_(),
              test_input({2, 5, 3}, -1, 1, 2).to(dtype).detach().requires_grad_(),
              test_input({2, 5, 2}, -1, 1, 3).to(dtype).detach().requires_grad_()};
        };
        std::vector<Tensor> be = base(), bf = base();
        std::vector<Tensor> oe = make(be), of = make(bf);
        Tensor mask = with_mask ? some_mask({oe[0].size(-2), oe[1].size(-2)}, 11) : Tensor();
        Tensor w;
        Tensor ye = ag::matmul(
            ag::softmax(with_mask
                            ? ag::masked_fill(ag::mul(ag::matmul(oe[0], oe[1].transpose(-2, -1)),
                                                      ag::Scalar(0.6)),
                                              mask, ag::Scalar(-kInf))
                            : ag::mul(ag::matmul(oe[0], oe[1].transpose(-2, -1)), ag::Scalar(0.6)),
                        -1),
            oe[2]);
        Tensor yf = fused(of[0], of[1], of[2], mask, 0.6);
        EXPECT_TRUE(allclose(yf, ye, tol, tol));
        w = test_input(ye.sizes(), -1, 1, 7, false).to(dtype);
        ag::sum(ye * w).backward();
        ag::sum(yf * w).backward();
        for (size_t i = 0; i < 3; ++i)
          EXPECT_TRUE(allclose(bf[i].grad(), be[i].grad(), tol, tol)) << "grad " << i;
      }
    }
  }
}

// The vectorized scale-or-fill rows on every compiled target equal the scalar formula exactly:
// lengths around every vector width, mask rows starting at odd addresses, NaN and inf scores.
TEST(MaskedAttentionReview, ScaleOrFillRowsEqualTheFormulaOnEveryTarget) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  for (const ag::kernels::vec::RowKernels* k : ag::kernels::vec::row_kernel_targets()) {
    for (int64_t n : {1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 64, 100}) {
      for (int64_t skew : {0, 1, 3}) {
        for (float scale : {0.37f, -2.0f, 0.0f, inf, nan}) {
          std::vector<float> x(static_cast<size_t>(n));
          std::unique_ptr<bool[]> mask(new bool[static_cast<size_t>(n + skew)]);
          for (int64_t i = 0; i < n; ++i) {
            x[size_t(i)] = i % 11 == 5 ? nan : i % 13 == 7 ? -inf : float(i % 9) - 4.25f;
            mask[size_t(i + skew)] = (i * 7 + skew) % 3 == 0;
          }
          std::vector<float> want = x;
          for (int64_t i = 0; i < n; ++i)
            want[size_t(i)] = mask[size_t(i + skew)] ? -inf : x[size_t(i)] * scale;
          k->scale_or_fill(x.data(), mask.get() + skew, scale, -inf, n);
          for (int64_t i = 0; i < n; ++i) {
            const float g = x[size_t(i)], w = want[size_t(i)];
            EXPECT_TRUE((std::isnan(g) && std::isnan(w)) || g == w)
                << k->name << " n=" << n << " skew=" << skew << " scale=" << scale << " [" << i
                << "]: " << g << " vs " << w;
          }
        }
      }
    }
  }
}

}  // namespace
