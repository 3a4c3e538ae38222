// The activation memory budget: the knapsack, the budget sweep (bytes never grow as the budget
// shrinks, and stay within min + b x (max - min)), the scoped per-region guard and its side table.
#include "partition/memory_budget.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "../../bench/partition_models.h"
#include "aotgrad/memory_budget.h"
#include "partition/choose_saved.h"
#include "partition/knapsack.h"
#include "partition/partition_testing.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::activation_bytes;
using ag::testing::contains;
using ag::testing::FlatLoss;
using ag::testing::trace_joint;

namespace {

double brute_force_knapsack(const std::vector<ag::partition::KnapsackItem>& items, size_t cap) {
  double best = 0;
  for (uint32_t mask = 0; mask < (1u << items.size()); ++mask) {
    size_t w = 0;
    double v = 0;
    for (size_t i = 0; i < items.size(); ++i)
      if (mask & (1u << i)) {
        w += items[i].weight;
        v += items[i].value;
      }
    if (w <= cap) best = std::max(best, v);
  }
  return best;
}

// Sweeps the budget from 1 to 0 and checks monotonicity and the bound.
void expect_monotone_sweep(const ag::testing::TracedJoint& t, const std::string& what) {
  size_t prev = SIZE_MAX;
  size_t max_bytes = activation_bytes(ag::testing::min_cut(t, 1.0));
  size_t min_bytes = activation_bytes(ag::testing::min_cut(t, 0.0));
  EXPECT_LT(min_bytes, max_bytes) << what;
  for (int step = 20; step >= 0; --step) {
    double b = step / 20.0;
    ag::partition::Partition p = ag::testing::min_cut(t, b);
    size_t bytes = activation_bytes(p);
    EXPECT_LE(bytes, prev) << what << ": saved bytes grew when the budget shrank to " << b << "\n"
                           << p.report();
    EXPECT_LE(static_cast<double>(bytes), min_bytes + b * (max_bytes - min_bytes) + 1e-9)
        << what << " at budget " << b << "\n"
        << p.report();
    prev = bytes;
  }
}

}  // namespace

TEST(MemoryBudgetKnapsack, MatchesBruteForceAtEveryCapacity) {
  uint64_t s = 12345;
  auto next = [&] { return (s = s * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<ag::partition::KnapsackItem> items;
    for (int i = 0; i < 8; ++i)
      items.push_back({next() % 20 + 1, static_cast<double>(next() % 100)});
    ag::partition::Knapsack k(items, 60);
    for (size_t cap = 0; cap <= 60; ++cap) {
      EXPECT_EQ(k.best_value(cap), brute_force_knapsack(items, cap));
      std::vector<bool> taken = k.packing(cap);
      size_t w = 0;
      double v = 0;
      for (size_t i = 0; i < items.size(); ++i)
        if (taken[i]) {
          w += items[i].weight;
          v += items[i].value;
        }
      EXPECT_LE(w, cap);
      EXPECT_EQ(v, k.best_value(cap));
    }
  }
}

TEST(MemoryBudget, SweepNeverGrowsOnMlp) {
  expect_monotone_sweep(trace_joint(
                            [](const std::vector<Tensor>& in) {
                              return std::vector<Tensor>{partition_models::mlp_loss(in)};
                            },
                            partition_models::mlp_inputs()),
                        "MLP");
}

TEST(MemoryBudget, SweepNeverGrowsOnTransformerBlocks) {
  for (int64_t blocks : {1, 4}) {
    FlatLoss fn = [](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{partition_models::blocks_loss(in)};
    };
    expect_monotone_sweep(trace_joint(fn, partition_models::blocks_inputs(blocks)),
                          std::to_string(blocks) + " block(s)");
  }
}

TEST(MemoryBudget, ZeroSavesOnlyGraphInputs) {
  auto t = trace_joint(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{partition_models::mlp_loss(in)};
      },
      partition_models::mlp_inputs());
  ag::partition::Partition p = ag::testing::min_cut(t, 0.0);
  EXPECT_EQ(activation_bytes(p), 0u) << p.report();
  // The whole forward runs again in the backward, matmuls included.
  size_t mms = 0;
  for (const auto& n : p.backward.nodes())
    mms += n.op->recompute == ag::ops::Recompute::compute_heavy;
  EXPECT_GE(mms, 4u + 4u + 3u) << "4 recomputed + 4 weight-gradient + 3 input-gradient products";
}

TEST(MemoryBudget, HalfBudgetKeepsTheCostliestProducts) {
  auto t = trace_joint(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{partition_models::mlp_loss(in)};
      },
      partition_models::mlp_inputs());
  size_t full = activation_bytes(ag::testing::min_cut(t, 1.0));
  ag::partition::Partition half = ag::testing::min_cut(t, 0.5);
  EXPECT_LE(activation_bytes(half), full / 2) << half.report();
  EXPECT_GT(activation_bytes(half), 0u) << half.report();
  EXPECT_TRUE(contains(half.report(), "cheaper to save than recompute under budget 0.5"))
      << half.report();
}

// One block at budget 0.5 may keep 6 of its 12 MiB. Giving up the qkv product and the attention
// (0.53 GFLOP to recompute) fits exactly; the budget walk alone used to stop at 5 MiB by giving up
// the MLP's first product instead (0.67 GFLOP): the least-recompute candidate must win.
TEST(MemoryBudget, HalfBudgetOnABlockRecomputesTheCheaperProduct) {
  FlatLoss fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{partition_models::blocks_loss(in)};
  };
  auto t = trace_joint(fn, partition_models::blocks_inputs(1));
  const size_t full = activation_bytes(ag::testing::min_cut(t, 1.0));
  ag::partition::Partition half = ag::testing::min_cut(t, 0.5);
  EXPECT_EQ(full, size_t{12} << 20) << ag::testing::min_cut(t, 1.0).report();
  EXPECT_EQ(activation_bytes(half), full / 2) << half.report();
  const std::string report = half.report();
  EXPECT_TRUE(contains(report, "f32[8, 128, 1024]  4194304 B"))
      << "the MLP's first product is kept\n"
      << report;
  EXPECT_FALSE(contains(report, "f32[1024, 768]") || contains(report, "f32[8, 128, 768]") ||
               contains(report, "f32[3, 8, 4, 128, 64]"))
      << "the qkv product is recomputed\n"
      << report;
}

TEST(MemoryBudget, GuardNestsAndRestores) {
  EXPECT_FALSE(ag::current_memory_budget().has_value());
  {
    ag::MemoryBudgetGuard outer(0.5);
    EXPECT_EQ(ag::current_memory_budget(), 0.5);
    {
      ag::MemoryBudgetGuard inner(0.0);
      EXPECT_EQ(ag::current_memory_budget(), 0.0);
    }
    EXPECT_EQ(ag::current_memory_budget(), 0.5);
  }
  EXPECT_FALSE(ag::current_memory_budget().has_value());
}

TEST(MemoryBudget, GuardRejectsOutOfRangeNamingValueAndRange) {
  try {
    ag::MemoryBudgetGuard g(1.25);
    ADD_FAILURE() << "accepted 1.25";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "1.25")) << e.what();
    EXPECT_TRUE(contains(e.what(), "[0, 1]")) << e.what();
  }
  EXPECT_FALSE(ag::current_memory_budget().has_value());
}

TEST(MemoryBudget, TracerRecordsTheLiveGuardOfEachNode) {
  ag::graph::Graph g("f");
  ag::trace::Tracer tracer(g);
  {
    ag::ops::InterpreterGuard trace(tracer);
    Tensor x = tracer.add_input(ag::testing::test_input({4}), "x");
    Tensor a = ag::sin(x);  // no guard: nothing noted
    {
      ag::MemoryBudgetGuard guard(0.25);
      a = ag::cos(a);
    }
    a = ag::exp(a);
  }
  std::vector<double> b = tracer.node_budgets();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_TRUE(std::isnan(b[0]));
  EXPECT_EQ(b[1], 0.25);
  EXPECT_TRUE(std::isnan(b[2]));
}

// Two mm -> tanh chains; only the first runs under MemoryBudgetGuard(0): its product is
// recomputed, the second chain's is saved.
TEST(MemoryBudget, RegionBudgetAppliesToTheNodesTracedInside) {
  FlatLoss fn = [](const std::vector<Tensor>& in) {
    Tensor a;
    {
      ag::MemoryBudgetGuard recompute(0.0);
      a = ag::tanh(ag::mm(in[0], in[1]));
    }
    Tensor b = ag::tanh(ag::mm(a, in[2]));
    return std::vector<Tensor>{ag::sum(b)};
  };
  std::vector<Tensor> in{ag::testing::test_input({6, 5}, -1, 1, 1),
                         ag::testing::test_input({5, 4}, -1, 1, 2),
                         ag::testing::test_input({4, 3}, -1, 1, 3)};
  auto t = trace_joint(fn, in);
  size_t noted = 0;
  for (double b : t.node_budgets) noted += !std::isnan(b);
  EXPECT_EQ(noted, 2u) << "mm and tanh of the region";
  ag::partition::Partition p = ag::testing::min_cut(t, 1.0);
  // The region's product is recomputed from the inputs (free), so `a` costs nothing; only the
  // second chain keeps a [6,3] result. Without the region, `a` ([6,4]) is kept as well.
  EXPECT_EQ(activation_bytes(p), 6u * 3 * 8) << p.report();
  ag::testing::TracedJoint no_region = t;
  no_region.node_budgets.clear();
  EXPECT_EQ(activation_bytes(ag::testing::min_cut(no_region, 1.0)), (6u * 4 + 6u * 3) * 8);
}

// A guard inside the traced function reaches the min-cut partitioner through aot_function.
TEST(MemoryBudget, RegionBudgetReachesAotFunction) {
  FlatLoss fn = [](const std::vector<Tensor>& in) {
    Tensor a;
    {
      ag::MemoryBudgetGuard recompute(0.0);
      a = ag::tanh(ag::mm(in[0], in[1]));
    }
    return std::vector<Tensor>{ag::sum(ag::tanh(ag::mm(a, in[2])))};
  };
  std::vector<Tensor> in{ag::testing::test_input({6, 5}, -1, 1, 1),
                         ag::testing::test_input({5, 4}, -1, 1, 2),
                         ag::testing::test_input({4, 3}, -1, 1, 3)};
  ag::CompiledGraphs g =
      ag::testing::expect_matches_eager_with(fn, in, {.partitioner = "min_cut"}, {1e-12, 1e-10});
  EXPECT_FALSE(contains(g.saved_report, "aten.mm.default")) << g.saved_report;
}
