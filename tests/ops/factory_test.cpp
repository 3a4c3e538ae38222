// Copies, casts and factories: values and dtypes of every factory, arange's length and dtype
// rules, rand/randn determinism and moments, clone/_to_copy/copy/fill values and gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "aotgrad/random.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::contains;
using testing::error_of;
using testing::gradcheck;
using testing::test_input;

Tensor call(std::string_view op, ops::OpArgs args) {
  return ops::call1(ops::lookup(op), std::move(args));
}

TEST(FactoryFill, ZerosOnesFullEmpty) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.dtype(), DType::f32);
  EXPECT_EQ(z.sizes(), (IntList{2, 3}));
  EXPECT_TRUE(z.is_contiguous());
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(ones({3}, DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(ones({2}, DType::b8).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(full({2}, 2.5, DType::f64).to_vector<double>(), (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(full({}, -1, DType::f16).item<float>(), -1.0f);
  Tensor e = empty({4, 0, 2}, DType::bf16);
  EXPECT_EQ(e.sizes(), (IntList{4, 0, 2}));
  EXPECT_EQ(e.dtype(), DType::bf16);
  EXPECT_EQ(zeros({}).dim(), 0);
  // A large fill takes the parallel path.
  Tensor big = full({70000}, 3.0);
  EXPECT_EQ(big.to_vector<float>(), std::vector<float>(70000, 3.0f));
  EXPECT_TRUE(contains(error_of([] { zeros({2, -1}); }), "aten.zeros.default"));
}

TEST(FactoryFill, FullInfersDtypeFromTheValueLikeTorch) {
  EXPECT_EQ(call("aten.full.default", {IntList{2}, Scalar(int64_t{3})}).dtype(), DType::i64);
  EXPECT_EQ(call("aten.full.default", {IntList{2}, Scalar(true)}).dtype(), DType::b8);
  EXPECT_EQ(call("aten.full.default", {IntList{2}, Scalar(0.5)}).dtype(), DType::f32);
}

TEST(FactoryFill, LikeOps) {
  Tensor a = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).t();
  for (const Tensor& t : {zeros_like(a), ones_like(a), full_like(a, 7), empty_like(a)}) {
    EXPECT_EQ(t.sizes(), (IntList{3, 2}));
    EXPECT_EQ(t.dtype(), DType::f64);
    EXPECT_TRUE(t.is_contiguous());  // aotgrad results are always contiguous
    EXPECT_NE(t.storage(), a.storage());
  }
  EXPECT_EQ(zeros_like(a).to_vector<double>(), std::vector<double>(6, 0.0));
  EXPECT_EQ(ones_like(a).to_vector<double>(), std::vector<double>(6, 1.0));
  EXPECT_EQ(full_like(a, 7).to_vector<double>(), std::vector<double>(6, 7.0));
  Tensor as_int = call("aten.zeros_like.default", {a, DType::i64});
  EXPECT_EQ(as_int.dtype(), DType::i64);
  // Factories never take part in autograd.
  Tensor x = test_input({2});
  EXPECT_FALSE(zeros_like(x).requires_grad());
  EXPECT_FALSE(full_like(x, 1.0).requires_grad());
}

TEST(FactoryFill, UnsupportedOptionsAreNamed) {
  std::string msg = error_of([] {
    call("aten.zeros.default", {IntList{2}, DType::f32, std::string("sparse_coo")});
  });
  EXPECT_TRUE(contains(msg, "layout")) << msg;
  msg = error_of([] {
    call("aten.ones.default", {IntList{2}, DType::f32, std::monostate{}, std::string("cuda:0")});
  });
  EXPECT_TRUE(contains(msg, "device 'cuda:0'")) << msg;
  msg = error_of([] { call("aten.clone.default", {zeros({2}), std::string("channels_last")}); });
  EXPECT_TRUE(contains(msg, "memory_format")) << msg;
  EXPECT_EQ(call("aten.zeros.default",
                 {IntList{2}, DType::f32, std::string("torch.strided"), std::string("cpu")})
                .numel(),
            2);
}

TEST(FactoryArange, LengthAndDtypeRules) {
  Tensor a = arange(5);
  EXPECT_EQ(a.dtype(), DType::i64);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(10, 0, -3).to_vector<int64_t>(), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(arange(0, 10, 3).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(arange(3, 3).numel(), 0);
  Tensor f = arange(0, 1, 0.25);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(arange(2.5).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(arange(1, 2, 0.3).numel(), 4);  // ceil((2 - 1) / 0.3)
  Tensor d = call("aten.arange.start_step", {Scalar(0), Scalar(3), Scalar(1), DType::f64});
  EXPECT_EQ(d.dtype(), DType::f64);
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(arange(0, 100000).to_vector<int64_t>()[99999], 99999);
  EXPECT_TRUE(contains(error_of([] { arange(0, 5, 0); }), "nonzero"));
  EXPECT_TRUE(contains(error_of([] { arange(5, 0, 1); }), "inconsistent"));
}

TEST(FactoryRandom, SameSeedSameNumbers) {
  manual_seed(42);
  Tensor a = rand({1000});
  Tensor b = rand({1000});
  manual_seed(42);
  Tensor c = rand({1000});
  EXPECT_EQ(a.to_vector<float>(), c.to_vector<float>());
  EXPECT_NE(a.to_vector<float>(), b.to_vector<float>());
  manual_seed(7);
  Tensor n1 = randn({3, 5}, DType::f64);
  manual_seed(7);
  Tensor n2 = randn({3, 5}, DType::f64);
  EXPECT_EQ(n1.to_vector<double>(), n2.to_vector<double>());
  EXPECT_EQ(n1.dtype(), DType::f64);
}

TEST(FactoryRandom, ExplicitGeneratorIsIndependentOfTheDefault) {
  Generator g1(123), g2(123);
  manual_seed(1);
  Tensor a = randn({257}, DType::f32, &g1);
  Tensor noise = rand({10});  // draws from the default generator only
  Tensor b = randn({257}, DType::f32, &g2);
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  EXPECT_EQ(g1.offset(), g2.offset());
  EXPECT_GT(g1.offset(), 0u);
  // Consecutive draws continue the stream instead of repeating it.
  Tensor a2 = randn({257}, DType::f32, &g1);
  EXPECT_NE(a.to_vector<float>(), a2.to_vector<float>());
  (void)noise;
}

TEST(FactoryRandom, ParallelAndSerialFillsAgree) {
  // Element k depends only on (seed, offset, k): a large fill's prefix equals a small fill.
  manual_seed(99);
  std::vector<float> big = rand({100000}).to_vector<float>();
  manual_seed(99);
  std::vector<float> small = rand({10}).to_vector<float>();
  EXPECT_EQ(std::vector<float>(big.begin(), big.begin() + 10), small);
}

struct Moments {
  double mean, stddev, min, max;
};
Moments moments(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  double sum = 0, sq = 0, lo = v[0], hi = v[0];
  for (double x : v) {
    sum += x;
    sq += x * x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  double mean = sum / static_cast<double>(v.size());
  return {mean, std::sqrt(sq / static_cast<double>(v.size()) - mean * mean), lo, hi};
}

TEST(FactoryRandom, UniformMoments) {
  manual_seed(2024);
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    Moments m = moments(rand({100000}, d));
    EXPECT_NEAR(m.mean, 0.5, 0.01) << dtype_name(d);
    EXPECT_NEAR(m.stddev, std::sqrt(1.0 / 12.0), 0.01) << dtype_name(d);
    EXPECT_GE(m.min, 0.0) << dtype_name(d);
    EXPECT_LT(m.max, 1.0) << dtype_name(d);
  }
}

TEST(FactoryRandom, NormalMoments) {
  manual_seed(2025);
  for (DType d : {DType::f32, DType::f64, DType::bf16}) {
    Tensor n = randn({100001}, d);  // odd: the last Box-Muller pair is cut in half
    Moments m = moments(n);
    EXPECT_NEAR(m.mean, 0.0, 0.02) << dtype_name(d);
    EXPECT_NEAR(m.stddev, 1.0, 0.02) << dtype_name(d);
    EXPECT_LT(m.min, -3.0) << dtype_name(d);
    EXPECT_GT(m.max, 3.0) << dtype_name(d);
  }
}

TEST(FactoryRandom, IntegerDtypesAreRefused) {
  EXPECT_TRUE(contains(error_of([] { rand({2}, DType::i64); }), "aten.rand.default"));
  EXPECT_TRUE(contains(error_of([] { randn({2}, DType::b8); }), "floating"));
  Generator g;
  EXPECT_TRUE(contains(error_of([&] { rand({2}, DType::i64, &g); }), "floating"));
  EXPECT_EQ(g.offset(), 0u);
}

// ---- copies and casts ----

TEST(FactoryCopy, CloneIsAContiguousCopy) {
  Tensor x = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor c = x.t().clone();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.is_view());
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  c.fill_(0);
  EXPECT_EQ(x.to_vector<float>()[0], 1.0f);
}

TEST(FactoryCopy, ToReturnsSelfForTheSameDtype) {
  Tensor x = from_vector(std::vector<double>{1.5, -2.25, 3}, {3});
  EXPECT_TRUE(x.to(DType::f64).is_same(x));
  Tensor f = x.to(DType::f32);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5, -2.25, 3}));
  EXPECT_EQ(x.to(DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(x.to(DType::b8).to_vector<bool>(), (std::vector<bool>{true, true, true}));
  Tensor strided = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}).t().to(DType::f64);
  EXPECT_EQ(strided.to_vector<double>(), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_TRUE(strided.is_contiguous());
}

TEST(FactoryCopy, FunctionalCopyAndFill) {
  Tensor self = zeros({2, 3}, DType::i64);
  Tensor src = from_vector(std::vector<double>{1.7, 2.2, -3.9}, {3});
  Tensor r = call("aten.copy.default", {self, src});
  EXPECT_EQ(r.dtype(), DType::i64);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, -3, 1, 2, -3}));
  EXPECT_EQ(self.to_vector<int64_t>(), std::vector<int64_t>(6, 0));  // self untouched
  EXPECT_TRUE(contains(error_of([&] {
                         call("aten.copy.default", {src, self});
                       }),
                       "does not broadcast"));
  Tensor f = call("aten.fill.Scalar", {self, Scalar(4)});
  EXPECT_EQ(f.to_vector<int64_t>(), std::vector<int64_t>(6, 4));
}

using Inputs = std::vector<Tensor>;

TEST(FactoryGrad, CloneToCopyCopyFill) {
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].clone(); }, {test_input({2, 3})}));
  Tensor xt = test_input({3, 2}, -1, 1, 4, false).t();
  xt.requires_grad_();
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].clone(); }, {xt}));
  // Through f32 and back: finite differences see f32 rounding, so a coarse step.
  EXPECT_TRUE(gradcheck([](const Inputs& v) { return v[0].to(DType::f32).to(DType::f64); },
                        {test_input({2, 3})}, 1e-2, 1e-4, 1e-3));
  // copy: self gets no gradient, src gets it summed over the broadcast.
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return call("aten.copy.default", {v[0], v[1]});
      },
      {test_input({2, 3}), test_input({3}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& v) {
        return call("aten.fill.Scalar", {v[0], 2.0});
      },
      {test_input({2})}));
}

TEST(FactoryGrad, ToCopyCastsTheGradientBack) {
  Tensor x = test_input({3});
  Tensor y = x.to(DType::f32);
  EXPECT_TRUE(y.requires_grad());
  y.backward(from_vector(std::vector<float>{1, 2, 3}, {3}));
  EXPECT_EQ(x.grad().dtype(), DType::f64);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 2, 3}));
  Tensor src = test_input({1});
  Tensor out = call("aten.copy.default", {zeros({4}), src.to(DType::f32)});
  out.backward(ones({4}));
  EXPECT_EQ(src.grad().to_vector<double>(), (std::vector<double>{4}));
}

}  // namespace
}  // namespace aotgrad
