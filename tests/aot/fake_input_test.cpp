// Fake (a tracer's metadata-only stand-in) and undefined tensors given to compiled functions,
// aot_module and GraphProgram: one clear error line naming the argument, never a crash. A
// compiled function called while another one traces is traced through, as PyTorch inlines it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/graph_program.h"
#include "aotgrad/nn.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::contains;
using ag::testing::error_of;
using ag::testing::pattern;

namespace {

Tensor scaled_sum(const Tensor& x, double s, const std::vector<Tensor>& more) {
  Tensor r = x.sum() * s;
  for (const Tensor& t : more) r = r + t.sum();
  return r;
}

void expect_one_line(const std::string& error) {
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_LE(error.size(), 300u) << error;
}

// A fake tensor as a user gets one: kept from inside a function while it traced.
Tensor leaked_fake() {
  Tensor kept;
  auto f = ag::aot_function([&](const Tensor& x) {
    kept = x;
    return x * 2.0;
  });
  f(pattern({2, 3}));
  return kept;
}

}  // namespace

TEST(FakeInputs, UndefinedTensorArgumentIsNamed) {
  auto f = ag::aot_function(scaled_sum);
  std::string error =
      error_of<std::invalid_argument>([&] { f(Tensor(), 2.0, std::vector<Tensor>{pattern({2})}); });
  EXPECT_TRUE(contains(error, "fn: argument 0 is an undefined Tensor")) << error;
  EXPECT_TRUE(contains(error, "pass a defined tensor")) << error;
  expect_one_line(error);
  error = error_of<std::invalid_argument>([&] {
    f(pattern({2}), 2.0, std::vector<Tensor>{pattern({2}), Tensor()});
  });
  EXPECT_TRUE(contains(error, "argument 2 (element 1 of the list) is an undefined Tensor"))
      << error;
  EXPECT_EQ(f.stats().misses + f.stats().hits, 0u);
}

TEST(FakeInputs, FakeTensorArgumentIsNamed) {
  Tensor fake = leaked_fake();
  ASSERT_TRUE(fake.is_fake());
  auto f = ag::aot_function(scaled_sum);
  std::string error = error_of<std::invalid_argument>([&] { f(fake, 1.0, std::vector<Tensor>{}); });
  EXPECT_TRUE(contains(error, "fn: argument 0 is a fake tensor")) << error;
  EXPECT_TRUE(contains(error, "pass a real tensor")) << error;
  expect_one_line(error);
  error = error_of<std::invalid_argument>([&] {
    f(pattern({2}), 1.0, std::vector<Tensor>{ag::make_tensor({3}, ag::DType::f32, true)});
  });
  EXPECT_TRUE(contains(error, "argument 2 (element 0 of the list) is a fake tensor")) << error;
}

TEST(FakeInputs, GraphProgramNamesTheInput) {
  ag::GraphProgram program = ag::GraphProgram::parse(R"(graph forward(%x: f64[2,3]) {
  %t: f64[2,3] = aten.tanh.default(%x)
  return (%t)
})");
  for (bool backward : {false, true}) {
    std::string error = error_of<std::invalid_argument>(
        [&] { program.run({leaked_fake()}, {.backward = backward}); });
    EXPECT_TRUE(contains(error, "input 0 (%x): expected f64[2, 3], got a fake tensor")) << error;
    expect_one_line(error);
    error =
        error_of<std::invalid_argument>([&] { program.run({Tensor()}, {.backward = backward}); });
    EXPECT_TRUE(contains(error, "input 0 (%x): expected f64[2, 3], got an undefined Tensor"))
        << error;
  }
}

TEST(FakeInputs, AotModuleNamesTheArgument) {
  auto compiled = ag::aot_module(std::make_shared<nn::LinearImpl>(3, 2));
  std::string error = error_of<std::invalid_argument>([&] { compiled(Tensor()); });
  EXPECT_TRUE(contains(error, "Linear: argument 0 is an undefined Tensor")) << error;
  error = error_of<std::invalid_argument>([&] {
    compiled(ag::make_tensor({4, 3}, ag::DType::f32, true));
  });
  EXPECT_TRUE(contains(error, "Linear: argument 0 is a fake tensor")) << error;
}

// PyTorch traces through a compiled function called inside another: its ops join the outer
// graph, and outputs and gradients are those of eager.
TEST(FakeInputs, NestedCompiledCallIsTracedThrough) {
  auto inner_fn = [](const Tensor& x, const Tensor& w) { return ag::mm(x, w).tanh(); };
  auto inner = ag::aot_function(inner_fn);
  auto outer_fn = [](auto& g, const Tensor& x, const Tensor& w) {
    return (g(x, w) * x.sum()).sum();
  };
  auto outer =
      ag::aot_function([&](const Tensor& x, const Tensor& w) { return outer_fn(inner, x, w); });
  Tensor x = pattern({4, 3}).requires_grad_(), w = pattern({3, 2}, 11).requires_grad_();
  Tensor xe = pattern({4, 3}).requires_grad_(), we = pattern({3, 2}, 11).requires_grad_();
  Tensor got = outer(x, w), want = outer_fn(inner_fn, xe, we);
  got.backward();
  want.backward();
  EXPECT_TRUE(allclose(got, want, 1e-14, 1e-14));
  EXPECT_TRUE(allclose(x.grad(), xe.grad(), 1e-14, 1e-14));
  EXPECT_TRUE(allclose(w.grad(), we.grad(), 1e-14, 1e-14));
  EXPECT_TRUE(contains(outer.graphs().forward, "aten.tanh.default")) << outer.graphs().forward;
  ag::CacheStats st = inner.stats();
  EXPECT_EQ(st.hits + st.misses + st.compilations, 0u);         // traced through, never compiled
  Tensor direct = inner(pattern({4, 3}), pattern({3, 2}, 11));  // on its own it compiles
  EXPECT_TRUE(allclose(direct, inner_fn(pattern({4, 3}), pattern({3, 2}, 11)), 1e-14, 1e-14));
  EXPECT_EQ(inner.num_compilations(), 1u);
}

// An aot_module called inside a traced function uses its real parameters, which the trace did
// not receive: the tracer's own error for a captured tensor (or, once it lifts them as
// constants, the eager answer) — never a crash.
TEST(FakeInputs, NestedAotModuleWorksOrSaysWhy) {
  ag::manual_seed(2);
  auto lin = std::make_shared<nn::LinearImpl>(3, 2);
  auto inner = ag::aot_module(lin);
  auto outer = ag::aot_function([&](const Tensor& x) { return inner(x).sum(); });
  Tensor x = pattern({4, 3}).to(ag::DType::f32);
  try {
    EXPECT_TRUE(allclose(outer(x), lin->forward(x).sum(), 1e-6, 1e-6));
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "captured tensor")) << e.what();
  }
  EXPECT_FALSE(lin->weight.is_fake());
}
