// The min-cut partitioner: what it saves and recomputes, where it puts the recomputation, and
// that functions compiled with it behave like eager at budgets 1, 0.5 and 0.
#include "partition/min_cut.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../../bench/partition_models.h"
#include "partition/default_partition.h"
#include "partition/max_flow.h"
#include "partition/partition_testing.h"
#include "partition/registry.h"
#include "testing/exactness.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::activation_bytes;
using ag::testing::contains;
using ag::testing::expect_matches_eager_with;
using ag::testing::FlatLoss;
using ag::testing::trace_joint;

namespace {

const ag::partition::SavedValue* find_saved(const ag::partition::Partition& p,
                                            const std::string& producer) {
  for (const auto& s : p.saved)
    if (s.producer == producer) return &s;
  return nullptr;
}

// x [8,16] -> mm -> gelu -> mm -> sum: the GELU output can be recomputed from the first mm's.
const FlatLoss kGeluMlp = [](const std::vector<Tensor>& in) {
  return std::vector<Tensor>{ag::sum(ag::mm(ag::gelu(ag::mm(in[0], in[1])), in[2]))};
};
std::vector<Tensor> gelu_mlp_inputs() {
  return {ag::testing::test_input({8, 16}, -1, 1, 1, false),
          ag::testing::test_input({16, 32}, -1, 1, 2), ag::testing::test_input({32, 4}, -1, 1, 3)};
}

}  // namespace

TEST(MinCutMaxFlow, SolvesSmallNetworkAndReportsCut) {
  // s -> a (3), s -> b (2), a -> b (1), a -> t (2), b -> t (3): max flow 5, cut {s->a, s->b}.
  ag::partition::MaxFlow f(4);
  f.add_edge(0, 2, 3);
  f.add_edge(0, 3, 2);
  f.add_edge(2, 3, 1);
  f.add_edge(2, 1, 2);
  f.add_edge(3, 1, 3);
  EXPECT_EQ(f.max_flow(0, 1), 5);
  EXPECT_TRUE(f.source_side()[0]);
  EXPECT_FALSE(f.source_side()[2]);
  EXPECT_FALSE(f.source_side()[3]);
  EXPECT_FALSE(f.source_side()[1]);
}

TEST(MinCutMaxFlow, LongChainAndInfiniteEdges) {
  // A 5000-vertex chain with one narrow edge: the iterative DFS must not overflow the stack.
  const size_t n = 5000;
  ag::partition::MaxFlow f(n);
  for (size_t i = 0; i + 1 < n; ++i)
    f.add_edge(i, i + 1, i == 2500 ? 7 : ag::partition::MaxFlow::kInfinity);
  EXPECT_EQ(f.max_flow(0, n - 1), 7);
  EXPECT_TRUE(f.source_side()[2500]);
  EXPECT_FALSE(f.source_side()[2501]);
}

TEST(MinCut, IsRegistered) {
  auto names = ag::partition::partitioner_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "min_cut"), names.end());
}

TEST(MinCut, RecomputesGeluInsteadOfSavingIt) {
  auto t = trace_joint(kGeluMlp, gelu_mlp_inputs());
  ag::partition::Partition mc = ag::testing::min_cut(t, 1.0);
  ag::partition::Partition def = ag::partition::default_partition(t.joint.graph, t.info());
  // Default keeps the mm output (GELU's backward reads it) and the GELU output (the second mm's
  // weight gradient reads it); min-cut keeps only the mm output: 8x32 f64.
  EXPECT_EQ(activation_bytes(def), 2u * 8 * 32 * 8) << def.report();
  EXPECT_EQ(activation_bytes(mc), 8u * 32 * 8) << mc.report();
  ASSERT_NE(find_saved(mc, "aten.mm.default"), nullptr) << mc.report();
  EXPECT_EQ(find_saved(mc, "aten.gelu.default"), nullptr) << mc.report();
  EXPECT_TRUE(contains(find_saved(mc, "aten.mm.default")->reason, "compute-heavy")) << mc.report();
  EXPECT_TRUE(contains(ag::graph::print_graph(mc.backward), "aten.gelu.default"))
      << "GELU is recomputed";
}

TEST(MinCut, RecomputationComesJustBeforeItsFirstUse) {
  auto t = trace_joint(kGeluMlp, gelu_mlp_inputs());
  ag::partition::Partition mc = ag::testing::min_cut(t, 1.0);
  const auto& nodes = mc.backward.nodes();
  size_t gelu = nodes.size(), first_tangent_user = nodes.size();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].op->name == "aten.gelu.default") gelu = i;
    for (const auto& a : nodes[i].args)
      for (ag::graph::ValueId v : ag::graph::arg_values(a))
        if (mc.backward.value(v).name.rfind("tangents", 0) == 0 &&
            first_tangent_user == nodes.size())
          first_tangent_user = i;
  }
  ASSERT_LT(gelu, nodes.size());
  EXPECT_GT(gelu, first_tangent_user) << ag::graph::print_graph(mc.backward);
  // Its user (the mm for the second weight's gradient, through a transpose) follows closely.
  EXPECT_LE(gelu + 3, nodes.size());
}

// A traced draw is functional (aotgrad.philox_rand of the seed / offset graph inputs,
// docs/partitioning.md "Random ops and effects"): at budget 0 the backward draws it again, with
// the same bits, instead of saving it.
TEST(MinCut, TracedRandomDrawsAreReplayedAtBudgetZero) {
  FlatLoss fn = [](const std::vector<Tensor>& in) {
    Tensor noise = ag::rand({6, 5}, ag::DType::f64);
    return std::vector<Tensor>{ag::sum(ag::tanh(ag::mm(in[0], in[1]) * noise))};
  };
  std::vector<Tensor> in{ag::testing::test_input({6, 4}, -1, 1, 4),
                         ag::testing::test_input({4, 5}, -1, 1, 5)};
  auto t = trace_joint(fn, in);
  ag::partition::Partition zero = ag::testing::min_cut(t, 0.0);
  EXPECT_EQ(activation_bytes(zero), 0u) << "nothing but graph inputs: " << zero.report();
  const std::string bw = ag::graph::print_graph(zero.backward);
  EXPECT_TRUE(contains(bw, "aotgrad.philox_rand.default")) << "draw replayed: " << bw;
  EXPECT_TRUE(contains(bw, "aten.mm.default")) << "mm recomputed";
  for (double budget : {1.0, 0.5, 0.0})
    expect_matches_eager_with(
        fn, in, {.partitioner = "min_cut", .activation_memory_budget = budget}, {1e-12, 1e-10});
}

TEST(MinCut, ShapeOnlyUseOfAMatmulResultSavesNothing) {
  // pow(y, 0)'s gradient is zeros_like(y): only y's shape is read.
  FlatLoss fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ag::sum(ag::pow(ag::mm(in[0], in[1]), 0.0) + ag::mm(in[0], in[1]))};
  };
  std::vector<Tensor> in{ag::testing::test_input({3, 4}, -1, 1, 6),
                         ag::testing::test_input({4, 2}, -1, 1, 7)};
  auto t = trace_joint(fn, in);
  ag::partition::Partition p = ag::testing::min_cut(t, 1.0);
  EXPECT_EQ(activation_bytes(p), 0u) << p.report();
  expect_matches_eager_with(fn, in, {.partitioner = "min_cut"}, {1e-12, 1e-10});
}

TEST(MinCut, OutOfRangeBudgetNamesValueAndRange) {
  auto t = trace_joint(kGeluMlp, gelu_mlp_inputs());
  for (double bad : {1.5, -0.25}) {
    try {
      ag::testing::min_cut(t, bad);
      ADD_FAILURE() << "budget " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "activation_memory_budget")) << e.what();
      EXPECT_TRUE(contains(e.what(), bad > 1 ? "1.5" : "-0.25")) << e.what();
      EXPECT_TRUE(contains(e.what(), "[0, 1]")) << e.what();
    }
  }
  auto step =
      ag::aot_function(kGeluMlp, {.partitioner = "min_cut", .activation_memory_budget = 2.0});
  EXPECT_THROW(step(gelu_mlp_inputs()), std::invalid_argument);
}

TEST(MinCut, ReportExplainsEverySavedValue) {
  auto step = ag::aot_function(kGeluMlp, {.partitioner = "min_cut"});
  step(gelu_mlp_inputs());
  ag::CompiledGraphs g = step.graphs();
  EXPECT_TRUE(contains(g.saved_report, "aten.mm.default")) << g.saved_report;
  EXPECT_TRUE(contains(g.saved_report, "compute-heavy producer")) << g.saved_report;
  EXPECT_TRUE(contains(g.saved_report, "graph input")) << g.saved_report;
  EXPECT_EQ(g.saved_activation_bytes, 8u * 32 * 8);
  EXPECT_TRUE(contains(g.saved_report, std::to_string(8 * 32 * 8) + " B activations"))
      << g.saved_report;
}

// ---- compiled == eager with min_cut at budgets 1, 0.5 and 0 ----

class MinCutMatchesEager : public ::testing::TestWithParam<double> {};

TEST_P(MinCutMatchesEager, GeluMlp) {
  expect_matches_eager_with(kGeluMlp, gelu_mlp_inputs(),
                            {.partitioner = "min_cut", .activation_memory_budget = GetParam()},
                            {1e-12, 1e-10});
}

TEST_P(MinCutMatchesEager, SoftmaxBroadcastAndReductions) {
  FlatLoss fn = [](const std::vector<Tensor>& in) {
    Tensor s = ag::softmax(ag::mm(in[0], in[1]) + in[2], -1);
    Tensor y = ag::log(s + 1.0) * ag::sigmoid(in[2]) - ag::mean(s, {0}, true);
    return std::vector<Tensor>{ag::sum(y * y), s};
  };
  expect_matches_eager_with(
      fn,
      {ag::testing::test_input({5, 3}, -1, 1, 8), ag::testing::test_input({3, 6}, -1, 1, 9),
       ag::testing::test_input({6}, -1, 1, 10)},
      {.partitioner = "min_cut", .activation_memory_budget = GetParam()}, {1e-12, 1e-10});
}

TEST_P(MinCutMatchesEager, ViewsAndBatchedMatmul) {
  FlatLoss fn = [](const std::vector<Tensor>& in) {
    Tensor a = ag::reshape(ag::transpose(in[0], 0, 1), {2, 3, 4});
    Tensor b = ag::matmul(a, ag::transpose(a, 1, 2));  // bmm
    Tensor c = ag::select(ag::relu(b), 1, 2) * ag::exp(ag::slice(in[1], 0, 1, 3));
    return std::vector<Tensor>{ag::sum(c)};
  };
  expect_matches_eager_with(
      fn, {ag::testing::test_input({12, 2}, -1, 1, 11), ag::testing::test_input({4, 3}, -1, 1, 12)},
      {.partitioner = "min_cut", .activation_memory_budget = GetParam()}, {1e-12, 1e-10});
}

TEST_P(MinCutMatchesEager, SmallMlpModel) {
  partition_models::MlpShape s{.batch = 4, .width = 16, .layers = 4};
  expect_matches_eager_with(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{partition_models::mlp_loss(in)};
      },
      partition_models::mlp_inputs(s),
      {.partitioner = "min_cut", .activation_memory_budget = GetParam()});
}

TEST_P(MinCutMatchesEager, SmallTransformerBlocks) {
  partition_models::BlockShape s{.batch = 2, .seq = 8, .d = 16, .heads = 2, .hidden = 32};
  for (int64_t blocks : {1, 2}) {
    FlatLoss fn = [s](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{partition_models::blocks_loss(in, s)};
    };
    expect_matches_eager_with(fn, partition_models::blocks_inputs(blocks, s),
                              {.partitioner = "min_cut", .activation_memory_budget = GetParam()});
  }
}

INSTANTIATE_TEST_SUITE_P(MinCutBudgets, MinCutMatchesEager, ::testing::Values(1.0, 0.5, 0.0));

// A function that reads an input and then overwrites it under no_grad: the backward needs
// sin(2 buf) and cos(2 buf), which eager saves before the write. min_cut likes to recompute them
// from `buf` (a graph input, free to save); that is right only because a training call hands the
// forward a copy of every input it mutates (src/aot/runtime.cpp), which the write-back after the
// forward leaves alone.
TEST_P(MinCutMatchesEager, NeverRecomputesFromAnInputTheCallOverwrites) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor buf = in[0];
    Tensor y = ag::sin(buf * 2.0) * in[1];
    {
      ag::NoGradGuard no_grad;
      buf.copy_(ag::exp(buf));
    }
    return std::vector<Tensor>{ag::sum(y)};
  };
  for (bool buf_requires_grad : {false, true}) {
    auto make = [&] {
      return std::vector<Tensor>{ag::testing::test_input({3, 4}, -1, 1, 21, buf_requires_grad),
                                 ag::testing::test_input({3, 4}, -1, 1, 22)};
    };
    std::vector<Tensor> eager_in = make(), compiled_in = make();
    auto compiled =
        ag::aot_function(fn, {.partitioner = "min_cut", .activation_memory_budget = GetParam()});
    Tensor eager_out = fn(eager_in)[0];
    Tensor compiled_out = compiled(compiled_in)[0];
    EXPECT_TRUE(ag::testing::allclose(compiled_out, eager_out, 1e-12, 1e-12));
    EXPECT_TRUE(ag::testing::allclose(compiled_in[0], eager_in[0], 0, ag::testing::compiled_rtol()))
        << "the write applied";
    eager_out.backward();
    compiled_out.backward();
    for (size_t i = buf_requires_grad ? 0 : 1; i < 2; ++i)
      EXPECT_TRUE(ag::testing::allclose(compiled_in[i].grad(), eager_in[i].grad(), 1e-12, 1e-12))
          << "grad of input " << i << " (buf requires grad: " << buf_requires_grad
          << ")\nbackward:\n"
          << compiled.graphs().backward;
  }
}
