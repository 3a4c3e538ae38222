// The bounded specialization cache: AotConfig::cache_size_limit (PyTorch's cache_size_limit,
// default 8), what a call with a new key does past it (eager fallback, logged once; or an error
// naming the function, the limit and the fix), and the exact counts stats() reports.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::contains;
using ag::testing::pattern;

namespace {

Tensor loss_fn(const Tensor& x, const Tensor& w) {
  return ag::mm(x, w).tanh().sum();
}

// Output and gradients of one training call on fresh leaves with `rows` rows.
template <typename F>
std::vector<Tensor> train(F&& f, int64_t rows) {
  Tensor x = pattern({rows, 3}, 7 + rows).requires_grad_();
  Tensor w = pattern({3, 2}, 11).requires_grad_();
  Tensor loss = f(x, w);
  loss.backward();
  return {loss, x.grad(), w.grad()};
}

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(allclose(got[i], want[i], 1e-14, 1e-14)) << what << " tensor " << i;
}

void expect_stats(const ag::CacheStats& s, size_t hits, size_t misses, size_t compilations,
                  size_t eager_fallbacks, size_t entries) {
  EXPECT_EQ(s.hits, hits);
  EXPECT_EQ(s.misses, misses);
  EXPECT_EQ(s.compilations, compilations);
  EXPECT_EQ(s.eager_fallbacks, eager_fallbacks);
  EXPECT_EQ(s.entries, entries);
}

}  // namespace

TEST(CacheLimit, DefaultLimitIsEightThenCallsRunEagerlyAndSayWhyOnce) {
  ag::AotConfig config;
  config.name = "my_step";
  EXPECT_EQ(config.cache_size_limit, 8u);
  auto f = ag::aot_function(loss_fn, config);
  ::testing::internal::CaptureStderr();
  for (int64_t rows = 1; rows <= 10; ++rows)
    expect_same(train(f, rows), train(loss_fn, rows), "rows " + std::to_string(rows));
  expect_stats(f.stats(), 0, 10, 8, 2, 8);
  // Compiled keys keep hitting; new keys keep running eagerly, without a second message.
  expect_same(train(f, 3), train(loss_fn, 3), "rows 3 again");
  expect_same(train(f, 12), train(loss_fn, 12), "rows 12");
  std::string log = ::testing::internal::GetCapturedStderr();
  expect_stats(f.stats(), 1, 11, 8, 3, 8);
  EXPECT_EQ(f.num_compilations(), 8u);
  size_t at = log.find("[aotgrad] my_step: reached cache_size_limit (8)");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_EQ(log.find("reached cache_size_limit", at + 30), std::string::npos) << log;
  EXPECT_TRUE(contains(log, "specialization 0: first call")) << log;
  EXPECT_TRUE(contains(log, "specialization 7: input 0 was f64[7, 3]")) << log;
  EXPECT_TRUE(contains(log, "this call: input 0 was f64[8, 3]")) << log;
  EXPECT_TRUE(contains(log, "AotConfig::cache_size_limit")) << log;
}

TEST(CacheLimit, ErrorModeNamesTheFunctionTheLimitAndTheFix) {
  ag::AotConfig config;
  config.name = "my_step";
  config.cache_size_limit = 2;
  config.on_cache_limit = ag::CacheLimitAction::error;
  auto f = ag::aot_function(loss_fn, config);
  train(f, 1);
  train(f, 2);
  std::string error = ag::testing::error_of<std::runtime_error>([&] { train(f, 3); });
  EXPECT_TRUE(contains(error, "my_step: cache_size_limit (2) reached")) << error;
  EXPECT_TRUE(contains(error, "input 0 was f64[2, 3]")) << error;
  EXPECT_TRUE(contains(error, "raise AotConfig::cache_size_limit")) << error;
  EXPECT_TRUE(contains(error, "CacheLimitAction::fallback_to_eager")) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_LE(error.size(), 300u) << error;
  expect_same(train(f, 2), train(loss_fn, 2), "a compiled key after the error");
  expect_stats(f.stats(), 1, 3, 2, 0, 2);
}

TEST(CacheLimit, LimitZeroRunsEveryCallEagerly) {
  ag::AotConfig config;
  config.cache_size_limit = 0;
  auto f = ag::aot_function(loss_fn, config);
  ::testing::internal::CaptureStderr();
  expect_same(train(f, 2), train(loss_fn, 2), "first call");
  expect_same(train(f, 2), train(loss_fn, 2), "second call");
  ::testing::internal::GetCapturedStderr();
  expect_stats(f.stats(), 0, 2, 0, 2, 0);
  EXPECT_THROW(f.graphs(), std::logic_error);
}

// The 10,000 shapes: the cache stays at the limit, and the compiled keys still hit.
TEST(CacheLimit, TenThousandShapesKeepTheCacheAtTheLimit) {
  auto f = ag::aot_function([](const Tensor& x) { return x * 2.0; });
  ::testing::internal::CaptureStderr();
  for (int64_t n = 1; n <= 10000; ++n) f(ag::zeros({n}));
  ::testing::internal::GetCapturedStderr();
  expect_stats(f.stats(), 0, 10000, 8, 9992, 8);
  for (int64_t n = 1; n <= 8; ++n)
    EXPECT_TRUE(allclose(f(ag::ones({n})), ag::full({n}, 2.0), 0, 0));
  EXPECT_EQ(f.stats().hits, 8u);
}

// Many specializations in the hash table, each found again by its own key.
TEST(CacheLimit, EveryKeyOfALargeCacheHitsItsOwnSpecialization) {
  ag::AotConfig config;
  config.cache_size_limit = 200;
  auto f = ag::aot_function([](const Tensor& x, int64_t k) { return x * static_cast<double>(k); },
                            config);
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t k = 0; k < 200; ++k) {
      Tensor x = pattern({1 + k % 3});
      EXPECT_TRUE(allclose(f(x, k), x * static_cast<double>(k), 0, 0)) << k;
    }
  expect_stats(f.stats(), 200, 200, 200, 0, 200);
}

TEST(CacheLimit, AotModuleFallsBackToTheModuleItself) {
  ag::manual_seed(5);
  auto model = std::make_shared<nn::LinearImpl>(3, 2);
  ag::AotConfig config;
  config.cache_size_limit = 1;
  auto compiled = ag::aot_module(model, config);
  ::testing::internal::CaptureStderr();
  for (int64_t rows = 1; rows <= 3; ++rows) {
    Tensor x = pattern({rows, 3}).to(ag::DType::f32);
    Tensor got = compiled(x), want = model->forward(x);
    EXPECT_TRUE(allclose(got, want, 0, 0)) << rows;
    std::vector<Tensor> params = {model->weight, model->bias};
    std::vector<Tensor> g_got = ag::autograd::grad({got.sum()}, params),
                        g_want = ag::autograd::grad({want.sum()}, params);
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(allclose(g_got[i], g_want[i], 1e-6, 1e-6)) << rows << " grad " << i;
  }
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(log, "[aotgrad] Linear: reached cache_size_limit (1)")) << log;
  expect_stats(compiled.stats(), 0, 3, 1, 2, 1);
  EXPECT_FALSE(model->weight.is_fake());
}
