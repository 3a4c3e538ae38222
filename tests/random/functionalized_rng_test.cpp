// Functionalized RNG (include/aotgrad/random.h, docs/partitioning.md "Random ops"): random ops in
// a compiled function read the generator's (seed, offset) as graph inputs, so eager and compiled
// calls draw the same bits from the same seed, call after call and in any mix; the generator
// advances by what eager draws; min_cut may replay a dropout mask in the backward with identical
// bits (and saves fewer bytes); budget 0 replays random ops too; generator state save/restore and
// per-thread generators behave like eager.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "testing/compare.h"
#include "testing/exactness.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::test_input;

// Bit equality of two tensors (dtype, shape and every byte of the values). Under a default
// compiler that fuses (AOTGRAD_COMPILER=cpp) the random draws are still the same bits, but the
// arithmetic on them may round differently: values then agree to a few ulp (testing/exactness.h).
::testing::AssertionResult same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes())
    return ::testing::AssertionFailure() << "dtype/shape differ";
  if (!testing::default_compiler_is_exact())
    return testing::allclose(a, b, 1e-30, testing::compiled_rtol())
               ? ::testing::AssertionSuccess()
               : ::testing::AssertionFailure() << "values differ beyond a few ulp";
  Tensor ca = contiguous(a), cb = contiguous(b);
  const size_t n = static_cast<size_t>(ca.numel()) * itemsize(ca.dtype());
  if (std::memcmp(ca.impl()->data_bytes(), cb.impl()->data_bytes(), n) != 0)
    return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

AotConfig with(std::string partitioner, double budget = 1.0) {
  AotConfig c;
  c.partitioner = std::move(partitioner);
  c.activation_memory_budget = budget;
  return c;
}

// Every random op this layer offers, in one function.
std::vector<Tensor> all_random(const Tensor& x) {
  Tensor b = x.detach().clone();
  bernoulli_(b, 0.25);
  Tensor u = x.detach().clone();
  uniform_(u, -2.0, 3.0);
  return {add(x, rand({3, 5})),
          mul(x, randn({3, 5}, DType::f32)),
          rand_like(x),
          randn_like(x),
          bernoulli(sigmoid(x.detach())),
          bernoulli(x, 0.7),
          b,
          u,
          randint(-4, 9, {7}),
          normal(1.5, 0.5, {2, 3}, DType::f64),
          std::get<1>(native_dropout(x, 0.4, true)),
          dropout(x, 0.5)};
}

TEST(RandomCompiled, EveryOpMatchesEagerBitsOverSeveralCalls) {
  for (const char* partitioner : {"default", "min_cut"}) {
    auto compiled = aot_function(all_random, with(partitioner));
    Tensor x = test_input({3, 5}, -1, 1, 3);
    manual_seed(2024);
    std::vector<std::vector<Tensor>> eager;
    for (int call = 0; call < 3; ++call) eager.push_back(all_random(x));
    const GeneratorState after_eager = get_rng_state();
    manual_seed(2024);
    for (int call = 0; call < 3; ++call) {
      std::vector<Tensor> comp = compiled(x);
      ASSERT_EQ(comp.size(), eager[call].size());
      for (size_t k = 0; k < comp.size(); ++k)
        EXPECT_TRUE(same_bits(comp[k], eager[call][k]))
            << partitioner << ": output " << k << ", call " << call;
    }
    EXPECT_EQ(get_rng_state(), after_eager)
        << partitioner << ": the generator ends where eager's does";
    EXPECT_EQ(compiled.num_compilations(), 1u);
  }
}

TEST(RandomCompiled, EagerAndCompiledCallsInterleaveOnOneStream) {
  auto fn = [](const Tensor& x) { return add(x, rand({4, 3})); };
  auto compiled = aot_function(fn);
  Tensor x = zeros({4, 3});
  manual_seed(7);
  Tensor e1 = fn(x), e2 = fn(x), e3 = fn(x);
  manual_seed(7);
  Tensor c1 = compiled(x), c2 = fn(x), c3 = compiled(x);
  EXPECT_TRUE(same_bits(c1, e1));
  EXPECT_TRUE(same_bits(c2, e2));
  EXPECT_TRUE(same_bits(c3, e3));
  EXPECT_FALSE(same_bits(e1, e2));
}

TEST(RandomCompiled, GraphTakesSeedAndOffsetWithDescriptors) {
  auto fn = [](const Tensor& x) { return dropout(add(x, rand({10})), 0.5); };
  auto compiled = aot_function(fn);
  compiled(test_input({10}, -1, 1, 4));
  const CompiledGraphs g = compiled.graphs();
  // rand draws 3 blocks of 4 words for 10 floats, then dropout 3 more: 6 in all.
  EXPECT_NE(g.forward.find("fw_rng_seed()"), std::string::npos) << g.forward;
  EXPECT_NE(g.forward.find("fw_rng_offset(6)"), std::string::npos) << g.forward;
  EXPECT_NE(g.forward.find("aotgrad.philox_rand.default"), std::string::npos) << g.forward;
  EXPECT_NE(g.forward.find("aotgrad.philox_dropout_mask.default"), std::string::npos) << g.forward;
  EXPECT_EQ(g.forward.find("aten.native_dropout.default"), std::string::npos) << g.forward;
  EXPECT_EQ(g.forward_descriptors.inputs.back().kind, DescriptorKind::fw_rng_offset);
  EXPECT_EQ(g.forward_descriptors.inputs.back().index, 6);
  testing::compare_detail::expect_graph_text_round_trips(g.forward, "forward");
}

// The function of the dropout tests: the mask is needed by the backward only through dropout.
std::vector<Tensor> dropout_mlp(const Tensor& x, const Tensor& w) {
  return {sum(mul(dropout(tanh(mm(x, w)), 0.3), 2.0))};
}

std::vector<Tensor> run_dropout_mlp(
    const std::function<std::vector<Tensor>(const Tensor&, const Tensor&)>& fn) {
  Tensor x = test_input({16, 32}, -1, 1, 5).detach().requires_grad_();
  Tensor w = test_input({32, 64}, -1, 1, 6).detach().requires_grad_();
  manual_seed(99);
  Tensor out = fn(x, w)[0];
  out.backward();
  return {out.detach(), x.grad(), w.grad()};
}

TEST(RandomCompiled, DropoutGradientsMatchEagerUnderBothPartitioners) {
  std::vector<Tensor> eager = run_dropout_mlp(dropout_mlp);
  for (const char* partitioner : {"default", "min_cut"}) {
    auto compiled = aot_function(dropout_mlp, with(partitioner));
    std::vector<Tensor> comp = run_dropout_mlp(compiled);
    for (size_t k = 0; k < eager.size(); ++k)
      EXPECT_TRUE(same_bits(comp[k], eager[k])) << partitioner << ": value " << k;
  }
}

TEST(RandomCompiled, MinCutReplaysTheMaskInTheBackward) {
  auto saved_by = [](const AotConfig& config) {
    auto compiled = aot_function(dropout_mlp, config);
    run_dropout_mlp(compiled);
    return compiled.graphs();
  };
  const CompiledGraphs def = saved_by(with("default"));
  const CompiledGraphs cut = saved_by(with("min_cut"));
  // default saves the b8 mask; min_cut saves the two i64 scalars and draws the mask again.
  EXPECT_EQ(def.backward.find("philox_dropout_mask"), std::string::npos) << def.backward;
  EXPECT_NE(def.saved_report.find("b8[16, 64]"), std::string::npos) << def.saved_report;
  EXPECT_NE(cut.backward.find("aotgrad.philox_dropout_mask.default"), std::string::npos)
      << cut.backward;
  EXPECT_EQ(cut.saved_report.find("b8[16, 64]"), std::string::npos) << cut.saved_report;
  // The seed and offset graph inputs (0-dim i64) are what the backward's draw needs.
  size_t scalars = 0;
  for (size_t p = cut.saved_report.find(": i64[]  8 B  from input"); p != std::string::npos;
       p = cut.saved_report.find(": i64[]  8 B  from input", p + 1))
    ++scalars;
  EXPECT_EQ(scalars, 2u) << cut.saved_report;
  EXPECT_NE(cut.saved_report.find("fw_rng_seed(): the backward replays random draws"),
            std::string::npos)
      << cut.saved_report;
  EXPECT_NE(cut.saved_report.find("fw_rng_offset(256): the backward replays"), std::string::npos)
      << cut.saved_report;
  EXPECT_LT(cut.saved_bytes, def.saved_bytes);
}

TEST(RandomCompiled, BudgetZeroRecomputesRandomOps) {
  // A random value used by the backward (x * noise): budget 0 replays the draw there.
  auto fn = [](const Tensor& x) { return std::vector<Tensor>{sum(mul(exp(x), rand({8, 8})))}; };
  auto compiled = aot_function(fn, with("min_cut", 0.0));
  Tensor x = test_input({8, 8}, -1, 1, 8).detach().requires_grad_();
  manual_seed(3);
  Tensor eo = fn(x)[0];
  eo.backward();
  Tensor eg = x.grad();
  x.set_grad(Tensor());
  manual_seed(3);
  Tensor co = compiled(x)[0];
  co.backward();
  EXPECT_TRUE(same_bits(co.detach(), eo.detach()));
  EXPECT_TRUE(same_bits(x.grad(), eg));
  const CompiledGraphs g = compiled.graphs();
  EXPECT_NE(g.backward.find("aotgrad.philox_rand.default"), std::string::npos) << g.backward;
  EXPECT_EQ(g.saved_report.find("f32[8, 8]"), std::string::npos) << g.saved_report;
}

TEST(RandomCompiled, StateSaveRestoreAroundACompiledCall) {
  auto fn = [](const Tensor& x) { return mul(x, randn({5})); };
  auto compiled = aot_function(fn);
  Tensor x = ones({5});
  manual_seed(11);
  compiled(x);  // compile, and move the stream on
  const GeneratorState saved = get_rng_state();
  Tensor c = compiled(x);
  set_rng_state(saved);
  Tensor e = fn(x);
  EXPECT_TRUE(same_bits(c, e));
  EXPECT_EQ(default_generator().offset(), saved.offset + 2);  // 5 floats: 2 blocks
  // A Generator's own state round-trips too.
  Generator gen(5);
  gen.advance(40);
  GeneratorState s = gen.get_state();
  Tensor a = rand({6}, DType::f32, &gen);
  gen.set_state(s);
  EXPECT_TRUE(same_bits(rand({6}, DType::f32, &gen), a));
}

TEST(RandomCompiled, EachThreadDrawsFromItsOwnGenerator) {
  auto fn = [](const Tensor& x) { return add(x, rand({64})); };
  auto compiled = aot_function(fn);
  Tensor x = zeros({64});
  manual_seed(1);
  compiled(x);  // compile on this thread
  std::vector<Tensor> comp(4), eager(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      manual_seed(static_cast<uint64_t>(100 + t));
      comp[t] = compiled(x);
      manual_seed(static_cast<uint64_t>(100 + t));
      eager[t] = fn(x);
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(same_bits(comp[t], eager[t])) << "thread " << t;
  EXPECT_FALSE(same_bits(comp[0], comp[1]));
}

TEST(RandomCompiled, ArtifactRoundTripKeepsTheDrawCount) {
  auto fn = [](const Tensor& x) { return add(x, randn({9})); };
  auto compiled = aot_function(fn);
  Tensor x = zeros({9});
  manual_seed(4);
  compiled(x);
  CompiledArtifact run = instantiate(deserialize_artifact(serialize_artifact(compiled.artifact())));
  manual_seed(4);
  Tensor e1 = fn(x), e2 = fn(x);
  manual_seed(4);
  Tensor c1 = run({x})[0], c2 = run({x})[0];
  EXPECT_TRUE(same_bits(c1, e1));
  EXPECT_TRUE(same_bits(c2, e2));
}

TEST(RandomCompiled, EvalDropoutDrawsNothing) {
  auto fn = [](const Tensor& x) { return std::get<0>(native_dropout(x, 0.5, false)); };
  auto compiled = aot_function(fn);
  manual_seed(8);
  Tensor out = compiled(test_input({4}, -1, 1, 9, false));
  EXPECT_EQ(default_generator().offset(), 0u);
  EXPECT_EQ(compiled.graphs().forward.find("fw_rng"), std::string::npos);
  EXPECT_TRUE(same_bits(out, test_input({4}, -1, 1, 9, false)));
}

TEST(RandomEager, DropoutGradcheckF64WithAFixedMask) {
  Tensor x = test_input({4, 6}, -1, 1, 10).to(DType::f64).detach().requires_grad_();
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        manual_seed(17);  // the same mask at every evaluation
        return dropout(in[0], 0.4);
      },
      {x}));
}

TEST(RandomEager, DistributionsAndErrors) {
  manual_seed(12);
  Tensor k = randint(-3, 4, {4000});
  EXPECT_EQ(k.dtype(), DType::i64);
  std::vector<int64_t> kv = k.to_vector<int64_t>();
  EXPECT_EQ(*std::min_element(kv.begin(), kv.end()), -3);
  EXPECT_EQ(*std::max_element(kv.begin(), kv.end()), 3);
  Tensor b = bernoulli(full({4000}, 0.25, DType::f64));
  EXPECT_NEAR(mean(b).item<double>(), 0.25, 0.03);
  Tensor n = normal(2.0, 0.5, {4000}, DType::f64);
  EXPECT_NEAR(mean(n).item<double>(), 2.0, 0.05);
  Tensor u = zeros({4000}, DType::f64);
  uniform_(u, -1.0, 3.0);
  std::vector<double> uv = u.to_vector<double>();
  EXPECT_GE(*std::min_element(uv.begin(), uv.end()), -1.0);
  EXPECT_LT(*std::max_element(uv.begin(), uv.end()), 3.0);
  EXPECT_NE(testing::error_of([] { randint(3, 3, {2}); }).find("low < high"), std::string::npos);
  EXPECT_NE(testing::error_of([] { bernoulli(zeros({2}), 1.5); }).find("[0, 1]"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] { rand_like(zeros({2}, DType::i64)); }).find("floating"),
            std::string::npos);
}

}  // namespace
}  // namespace aotgrad

namespace aotgrad {
namespace {

// torchvision's stochastic depth: a per-sample 0/1 noise drawn in place with bernoulli_, then
// scaled. The in-place row is functionalized (no aten.bernoulli_ left in the graph) and the
// gradients match eager's bit for bit under both partitioners.
TEST(RandomCompiled, StochasticDepthWithInPlaceBernoulli) {
  auto stochastic_depth = [](const Tensor& x, const Tensor& w) {
    Tensor noise = empty({x.size(0), 1}, x.dtype());
    bernoulli_(noise, 0.75);
    return std::vector<Tensor>{sum(mul(mm(x, w), div(noise, 0.75)))};
  };
  auto run = [&](auto&& fn) {
    Tensor x = test_input({8, 4}, -1, 1, 30).to(DType::f32).detach().requires_grad_();
    Tensor w = test_input({4, 3}, -1, 1, 31).to(DType::f32).detach().requires_grad_();
    manual_seed(77);
    Tensor out = fn(x, w)[0];
    out.backward();
    return std::vector<Tensor>{out.detach(), x.grad(), w.grad()};
  };
  std::vector<Tensor> eager = run(stochastic_depth);
  for (const char* partitioner : {"default", "min_cut"}) {
    auto compiled = aot_function(stochastic_depth, with(partitioner));
    std::vector<Tensor> comp = run(compiled);
    for (size_t k = 0; k < eager.size(); ++k)
      EXPECT_TRUE(same_bits(comp[k], eager[k])) << partitioner << ": value " << k;
    const std::string fw = compiled.graphs().forward;
    EXPECT_EQ(fw.find("aten.bernoulli_"), std::string::npos) << fw;
    EXPECT_NE(fw.find("aotgrad.philox_rand.default"), std::string::npos) << fw;
  }
}

TEST(RandomEager, RandomRowsCheckTheirArguments) {
  Tensor x = zeros({2, 3});
  EXPECT_NE(testing::error_of([&] { bernoulli_(x, zeros({4})); }).find("does not broadcast"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { uniform_(x, 2.0, 1.0); }).find("from=2"), std::string::npos);
  EXPECT_NE(testing::error_of([] { normal(0.0, -1.0, {2}); }).find("std >= 0.0"),
            std::string::npos);
  // The in-place row writes through a view into its base.
  Tensor base = zeros({4, 4});
  Tensor row = select(base, 0, 1);
  manual_seed(5);
  bernoulli_(row, 1.0);
  EXPECT_EQ(sum(base).item<float>(), 4.0f);
}

}  // namespace
}  // namespace aotgrad
