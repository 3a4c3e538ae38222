// Custom ops (aotgrad/custom_op.h): eager calls with autograd, tracing as one node, partitioning
// as opaque unless declared cheap, graph text, functionalized mutation, and the registration and
// call errors.
#include <gtest/gtest.h>

#include <thread>

#include "custom/test_ops.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "ops/op.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace aotgrad::testing {
namespace {

class CustomOp : public ::testing::Test {
 protected:
  void SetUp() override { register_test_ops(); }
};

AotConfig with_partitioner(const std::string& p) {
  AotConfig c;
  c.partitioner = p;
  c.name = "custom";
  return c;
}

TEST_F(CustomOp, EagerCallComputesAndDifferentiates) {
  Tensor x = f64({1, -2, 3}, {3}).requires_grad_();
  Tensor y = call_op1("testops::scale", x, 3.0);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{3, -6, 9}));
  EXPECT_EQ(y.grad_fn()->name(), "testops.scale.default");
  y.sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3, 3, 3}));
  // The schema default (s=2.0) fills the missing argument; the table name calls it too.
  EXPECT_EQ(call_op("testops.scale.default", {f64({1}, {1})})[0].item<double>(), 2.0);
}

TEST_F(CustomOp, GradcheckF64) {
  Tensor x = leaf({2, 3}, 7);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return call_op1("testops::heavy_square", call_op1("testops::scale", in[0], 1.5));
      },
      {x}));
}

TEST_F(CustomOp, TracesAsOneNodeAndMatchesEager) {
  run_scenario(
      [] {
        return TensorList{leaf({2, 3}, 1)};
      },
      [](const TensorList& a) {
        return call_op1("testops::heavy_square", call_op1("testops::scale", a[0], 0.5)).sin();
      });
  auto f = aot_function([](const Tensor& x) { return call_op1("testops::scale", x, 0.5).sum(); },
                        with_partitioner("default"));
  Tensor x = leaf({4}, 2);
  f(x).backward();
  CompiledGraphs g = f.graphs();
  EXPECT_TRUE(contains(g.forward, "testops.scale.default(")) << g.forward;
  // The VJP's ops, not the custom op, make the backward.
  EXPECT_FALSE(contains(g.backward, "testops.scale")) << g.backward;
  compare_detail::expect_graph_text_round_trips(g.forward, "forward");
}

TEST_F(CustomOp, MutatingOpIsFunctionalized) {
  run_scenario(
      [] {
        return nonleaf_setup({3, 2}, 4);
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        call_op("testops::scale_", {x, 3.0});
        return x.cos();
      });
  auto f = aot_function(
      [](const Tensor& x) {
        Tensor t = x.clone();
        call_op("testops::scale_", {t, 3.0});
        return t;
      },
      with_partitioner("default"));
  Tensor x = leaf({3}, 3, false);
  EXPECT_EQ(f(x).to_vector<double>(), (x * 3.0).to_vector<double>());
  std::string text = f.graphs().inference;
  EXPECT_TRUE(contains(text, "testops.scale_.functional(")) << text;
  compare_detail::expect_graph_text_round_trips(text, "inference");
}

// min_cut: y = cos(square(x)) saves only x when square is cheap (recomputing it in the backward),
// and square's result too when it is opaque.
TEST_F(CustomOp, MinCutRecomputesOnlyCheapOps) {
  for (const char* op : {"testops::cheap_square", "testops::heavy_square"}) {
    SCOPED_TRACE(op);
    auto f = aot_function([op](const Tensor& x) { return call_op1(op, x).cos(); },
                          with_partitioner("min_cut"));
    Tensor x = leaf({8}, 5);
    Tensor y = f(x);
    y.sum().backward();
    Tensor xe = x.detach().requires_grad_();
    call_op1(op, xe).cos().sum().backward();
    EXPECT_EQ(x.grad().to_vector<double>(), xe.grad().to_vector<double>());
    CompiledGraphs g = f.graphs();
    bool cheap = std::string(op) == "testops::cheap_square";
    EXPECT_EQ(contains(g.backward, cheap ? "testops.cheap_square" : "testops.heavy_square"), cheap)
        << g.backward;
    EXPECT_EQ(g.num_saved, cheap ? 1u : 2u) << g.saved_report;
  }
}

TEST_F(CustomOp, GraphTextParsesRegisteredOps) {
  std::string text =
      "graph g(%x: f32[2,3]) {\n"
      "  %y: f32[2,3] = testops.scale.default(%x, 4.0)\n"
      "  return (%y)\n"
      "}\n";
  graph::Graph g = graph::parse_graph(text);
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].op->name, "testops.scale.default");
  std::string printed = graph::print_graph(g);
  EXPECT_TRUE(contains(printed, "testops.scale.default(%x, s=4.0)")) << printed;
  compare_detail::expect_graph_text_round_trips(printed, "parsed");
}

TEST_F(CustomOp, EffectfulFlagAndRecomputeClassReachTheTable) {
  EXPECT_TRUE(ops::lookup("testops.log.default").effectful);
  EXPECT_FALSE(ops::lookup("testops.scale.default").effectful);
  EXPECT_EQ(ops::lookup("testops.heavy_square.default").recompute, ops::Recompute::effectful);
  EXPECT_EQ(ops::lookup("testops.cheap_square.default").recompute, ops::Recompute::pointwise);
  EXPECT_TRUE(op_registered("testops::scale_"));
  EXPECT_FALSE(op_registered("testops::nope"));
}

TEST_F(CustomOp, RegistrationErrorsNameTheProblem) {
  auto reg = [](std::string schema, CustomMetaFn meta = same_as_x) {
    return error_of<std::invalid_argument>(
        [&] { register_op({.schema = std::move(schema), .meta = meta, .kernel = square_kernel}); });
  };
  EXPECT_TRUE(contains(reg("testops::scale(Tensor x, float s=2.0) -> Tensor"),
                       "'testops.scale.default' is registered already"));
  EXPECT_TRUE(contains(reg("testops::bad(Tensor x -> Tensor"), "does not parse"));
  EXPECT_TRUE(contains(reg("nonamespace(Tensor x) -> Tensor"), "expected 'namespace::name"));
  EXPECT_TRUE(contains(reg("aten::mine(Tensor x) -> Tensor"), "reserved"));
  EXPECT_TRUE(contains(reg("testops::nometa(Tensor x) -> Tensor", nullptr), "no meta function"));
  EXPECT_TRUE(contains(reg("testops::two_(Tensor(a!) x, Tensor(b!) y) -> ()"), "at most one"));
  EXPECT_TRUE(contains(reg("testops::view(Tensor(a) x) -> Tensor(a)"), "not return views"));
  EXPECT_FALSE(op_registered("testops::nometa"));
  EXPECT_TRUE(contains(error_of<std::invalid_argument>([] { call_op("testops::missing", {}); }),
                       "unknown op 'testops::missing'"));
}

TEST_F(CustomOp, KernelThatWritesAnUnmarkedArgumentIsCaught) {
  Tensor x = f64({1, 2}, {2});
  std::string opcheck_error = error_of<std::logic_error>([&] { opcheck("testops::liar", {x}); });
  EXPECT_TRUE(contains(opcheck_error, "wrote argument 'x'")) << opcheck_error;
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 2}));  // opcheck ran on a copy
  std::string first_call = error_of<std::logic_error>([&] { call_op1("testops::liar", x); });
  EXPECT_TRUE(contains(first_call, "does not mark as written")) << first_call;
  EXPECT_NO_THROW(opcheck("testops::scale_", {f64({1, 2}, {2}), 2.0}));
  EXPECT_NO_THROW(opcheck("testops::scale", {f64({1, 2}, {2}), 2.0}));
}

TEST_F(CustomOp, MissingVjpFailsWhenAGradientIsNeeded) {
  Tensor x = f64({1, 2}, {2}).requires_grad_();
  Tensor y = call_op1("testops::novjp", x);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{1, 4}));
  std::string e = error_of<std::runtime_error>([&] { y.sum().backward(); });
  EXPECT_TRUE(contains(e, "testops.novjp.default has no VJP")) << e;
  EXPECT_TRUE(contains(e, "'x'")) << e;
  // Without a gradient, compiled and eager agree.
  auto f = aot_function([](const Tensor& t) { return call_op1("testops::novjp", t); });
  EXPECT_EQ(f(f64({3}, {1})).item<double>(), 9.0);
}

TEST(ConcurrencyCustomOp, RegistersWhileOtherThreadsLookUp) {
  std::vector<std::thread> threads;
  std::atomic<int> found{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &found] {
      register_op({.schema = "concurrent::op" + std::to_string(t) + "(Tensor x) -> Tensor",
                   .meta = same_as_x,
                   .kernel = square_kernel});
      for (int i = 0; i < 200; ++i) found += ops::find("aten.add.Tensor") != nullptr;
      Tensor y = call_op1("concurrent::op" + std::to_string(t), f64({3}, {1}));
      found += y.item<double>() == 9.0;
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(found.load(), 4 * 201);
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(op_registered("concurrent::op" + std::to_string(t)));
}

}  // namespace
}  // namespace aotgrad::testing
