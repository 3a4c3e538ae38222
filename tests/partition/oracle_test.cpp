// The min cut against the exact oracle (exact_oracle.h) on a family of small random joint graphs,
// and the same random programs compiled with min_cut against eager.
#include <gtest/gtest.h>

#include <string>

#include "graph/printer.h"
#include "partition/cse.h"
#include "partition/exact_oracle.h"
#include "partition/extract.h"
#include "partition/partition_testing.h"
#include "partition/shape_only_uses.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::FlatLoss;

namespace {

// A small random program over [n,n] tensors: unary and binary pointwise ops, matmuls (compute-
// heavy), transposes (views), row sums and means (reductions, giving [n,1] and [] values that
// broadcast back), casts between f64 and f32 (so values differ in bytes) and, optionally, random
// draws. The choices come from `seed` alone, so the program traces and runs eagerly alike.
struct RandomProgram {
  uint64_t seed;
  int num_ops;
  bool with_random;

  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    auto pick = [&](uint64_t n) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      return (s >> 33) % n;
    };
    std::vector<Tensor> pool(in.begin(), in.end());
    auto square = [&]() {
      std::vector<Tensor> sq;
      for (const Tensor& t : pool)
        if (t.dim() == 2 && t.size(1) == in[0].size(1)) sq.push_back(t);
      return sq[pick(sq.size())];
    };
    auto any = [&]() { return pool[pool.size() - 1 - pick(std::min<size_t>(pool.size(), 4))]; };
    for (int k = 0; k < num_ops; ++k) {
      switch (pick(with_random ? 8 : 7)) {
        case 0: {
          Tensor a = any();
          switch (pick(6)) {
            case 0:
              pool.push_back(ag::sin(a));
              break;
            case 1:
              pool.push_back(ag::tanh(a));
              break;
            case 2:
              pool.push_back(ag::relu(a));
              break;
            case 3:
              pool.push_back(ag::sigmoid(a));
              break;
            case 4:
              pool.push_back(ag::gelu(a));
              break;
            default:
              pool.push_back(ag::exp(a * 0.5));
              break;
          }
          break;
        }
        case 1: {
          Tensor a = any(), b = any();
          pool.push_back(pick(3) == 0 ? a + b : pick(2) ? a * b : a - b);
          break;
        }
        case 2:
        case 3: {
          Tensor a = square(), b = square();
          pool.push_back(ag::mm(a, b.dtype() == a.dtype() ? b : ag::to(b, a.dtype())));
          break;
        }
        case 4:
          pool.push_back(ag::t(square()));
          break;
        case 5:
          pool.push_back(pick(2) ? ag::sum(square(), {1}, true) : ag::mean(square()));
          break;
        case 6: {
          Tensor a = square();
          pool.push_back(ag::to(a, a.dtype() == ag::DType::f64 ? ag::DType::f32 : ag::DType::f64));
          break;
        }
        default:
          pool.push_back(square() * ag::rand(in[0].sizes(), ag::DType::f64));
          break;
      }
    }
    // The loss reads the last values; an intermediate is a second output half of the time.
    Tensor loss = ag::sum(pool.back());
    for (size_t k = 2; k <= 3 && k <= pool.size() - in.size(); ++k)
      loss = loss + ag::sum(pool[pool.size() - k]);
    std::vector<Tensor> out{loss};
    if (pick(2)) out.push_back(pool[in.size() + pick(pool.size() - in.size())] * 1.0);
    return out;
  }
};

std::vector<Tensor> program_inputs(uint64_t seed) {
  int64_t n = 3 + static_cast<int64_t>(seed % 3);
  return {ag::testing::test_input({n, n}, -1, 1, seed * 3 + 1),
          ag::testing::test_input({n, n}, -1, 1, seed * 3 + 2),
          ag::testing::test_input({n, n}, -1, 1, seed * 3 + 3, false)};
}

size_t forward_nodes(const ag::aot::JointGraph& j) {
  std::vector<ag::graph::ValueId> fw(j.graph.outputs().begin(),
                                     j.graph.outputs().begin() + j.num_fw_outputs);
  size_t n = 0;
  for (bool b : ag::partition::needed_nodes(j.graph, fw)) n += b;
  return n;
}

}  // namespace

TEST(Oracle, FindsTheKnownOptimumOfAHandMadeGraph) {
  // y = mm(x, w) [4,4] f64; z = sin(y); loss = sum(z * z): the backward needs y (for cos) and z;
  // z is recomputable from y, so the optimum keeps y alone: 128 bytes.
  FlatLoss fn = [](const std::vector<Tensor>& in) {
    Tensor z = ag::sin(ag::mm(in[0], in[1]));
    return std::vector<Tensor>{ag::sum(z * z)};
  };
  auto t = ag::testing::trace_joint(
      fn, {ag::testing::test_input({4, 4}), ag::testing::test_input({4, 4})});
  ag::partition::JointAnalysis a = ag::partition::analyze_joint(t.joint.graph, t.info(), {}, 1.0);
  std::vector<bool> banned(a.ban.size());
  for (size_t i = 0; i < banned.size(); ++i) banned[i] = a.ban[i] != ag::partition::Ban::none;
  ag::testing::OracleResult r = ag::testing::exact_min_saved_bytes(t.joint.graph, a, banned);
  EXPECT_EQ(r.bytes, 4u * 4 * 8);
  ASSERT_EQ(r.saved.size(), 1u);
  EXPECT_EQ(t.joint.graph.nodes()[t.joint.graph.value(r.saved[0]).producer].op->name,
            "aten.mm.default");
}

TEST(Oracle, MinCutEqualsExhaustiveSearchOnRandomJointGraphs) {
  size_t graphs = 0, max_fw = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    RandomProgram prog{seed, 4 + static_cast<int>(seed % 10), seed % 4 == 0};
    auto t = ag::testing::trace_joint([prog](const std::vector<Tensor>& in) { return prog(in); },
                                      program_inputs(seed));
    ag::graph::Graph g = t.joint.graph;
    ag::partition::eliminate_common_subexpressions(g);
    ag::partition::drop_shape_only_uses(g);
    size_t fw = forward_nodes(t.joint);
    if (fw > 20) continue;
    ++graphs;
    max_fw = std::max(max_fw, fw);
    ag::partition::JointAnalysis a = ag::partition::analyze_joint(g, t.info(), {}, 1.0);
    for (bool heavy_banned : {true, false}) {
      std::vector<bool> banned(a.ban.size());
      for (size_t i = 0; i < banned.size(); ++i)
        banned[i] = a.ban[i] != ag::partition::Ban::none &&
                    (heavy_banned || a.ban[i] != ag::partition::Ban::compute_heavy);
      ag::partition::Cut cut = ag::partition::solve_min_cut(g, a, banned);
      ag::testing::OracleResult best = ag::testing::exact_min_saved_bytes(g, a, banned);
      std::vector<bool> saved(g.values().size(), false);
      for (ag::graph::ValueId v : cut.saved) saved[v.index] = true;
      SCOPED_TRACE("seed " + std::to_string(seed) + (heavy_banned ? " (budget 1)" : " (budget 0)") +
                   "\n" + ag::graph::print_graph(g));
      EXPECT_EQ(cut.bytes, best.bytes) << best.candidates << " candidates";
      EXPECT_TRUE(ag::testing::backward_can_run(g, a, banned, saved))
          << "the min cut's choice must work";
      EXPECT_TRUE(ag::partition::saved_set_is_valid(g, a, banned, cut.saved));
    }
  }
  EXPECT_GE(graphs, 40u);
  EXPECT_GE(max_fw, 15u) << "the family should reach graphs of ~20 forward nodes";
}

// Without random draws: a draw whose result nothing reads is dropped from the compiled forward
// graph but still advances the generator eagerly, so later draws would differ (a property of the
// capture, whichever partitioner runs).
TEST(Oracle, RandomProgramsCompiledWithMinCutMatchEager) {
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    RandomProgram prog{seed, 4 + static_cast<int>(seed % 10), false};
    for (double budget : {1.0, 0.5, 0.0}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " budget " + std::to_string(budget));
      ag::testing::expect_matches_eager_with(
          [prog](const std::vector<Tensor>& in) { return prog(in); }, program_inputs(seed),
          {.partitioner = "min_cut", .activation_memory_budget = budget}, {1e-6, 1e-5});
    }
  }
}
