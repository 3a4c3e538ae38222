// Common-subexpression elimination on joint graphs: what merges, what never does.
#include "partition/cse.h"

#include <gtest/gtest.h>

#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "partition/partition_testing.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

ag::graph::Graph cse(const std::string& text, size_t expected_removed) {
  ag::graph::Graph g = ag::graph::parse_graph(text);
  EXPECT_EQ(ag::partition::eliminate_common_subexpressions(g), expected_removed) << text;
  ag::graph::verify_graph(g);
  return g;
}

}  // namespace

TEST(Cse, MergesIdenticalPureNodesAndTheirUsersTransitively) {
  ag::graph::Graph g =
      cse("graph f(%x: f32[4], %y: f32[4]) {\n"
          "  %a: f32[4] = aten.sin.default(%x)\n"
          "  %b: f32[4] = aten.sin.default(%x)\n"
          "  %c: f32[4] = aten.mul.Tensor(%a, %y)\n"
          "  %d: f32[4] = aten.mul.Tensor(%b, %y)\n"
          "  %e: f32[4] = aten.add.Tensor(%c, %d)\n"
          "  return (%e)\n"
          "}\n",
          2);
  EXPECT_EQ(ag::graph::print_graph(g),
            "graph f(%x: f32[4], %y: f32[4]) {\n"
            "  %a: f32[4] = aten.sin.default(%x)\n"
            "  %c: f32[4] = aten.mul.Tensor(%a, %y)\n"
            "  %e: f32[4] = aten.add.Tensor(%c, %c)\n"
            "  return (%e)\n"
            "}\n");
}

TEST(Cse, KeepsDifferentArgumentsApart) {
  cse("graph f(%x: f32[4]) {\n"
      "  %a: f32[4] = aten.mul.Scalar(%x, 2.0)\n"
      "  %b: f32[4] = aten.mul.Scalar(%x, 3.0)\n"
      "  %c: f32[4] = aten.mul.Scalar(%x, -0.0)\n"
      "  %d: f32[4] = aten.mul.Scalar(%x, 0.0)\n"
      "  %e: f32[2] = aten.slice.Tensor(%x, 0, 0, 2)\n"
      "  %f: f32[2] = aten.slice.Tensor(%x, 0, 2, 4)\n"
      "  %s1: f32[4] = aten.add.Tensor(%a, %b)\n"
      "  %s2: f32[4] = aten.add.Tensor(%c, %d)\n"
      "  %s3: f32[2] = aten.add.Tensor(%e, %f)\n"
      "  return (%s1, %s2, %s3)\n"
      "}\n",
      0);
}

TEST(Cse, NeverMergesRandomDraws) {
  cse("graph f(%x: f32[4]) {\n"
      "  %r1: f32[4] = aten.rand.default([4])\n"
      "  %r2: f32[4] = aten.rand.default([4])\n"
      "  %a: f32[4] = aten.add.Tensor(%r1, %r2)\n"
      "  return (%a)\n"
      "}\n",
      0);
}

TEST(Cse, KeepsGraphOutputsDistinctTensors) {
  // Both are outputs: the caller gets two tensors and may mutate one without touching the other.
  cse("graph f(%x: f32[4]) {\n"
      "  %a: f32[4] = aten.exp.default(%x)\n"
      "  %b: f32[4] = aten.exp.default(%x)\n"
      "  return (%a, %b)\n"
      "}\n",
      0);
}

TEST(Cse, MinCutForwardComputesDuplicatedWorkOnce) {
  ag::testing::FlatLoss fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ag::sum(ag::mm(in[0], in[1]).tanh() * ag::mm(in[0], in[1]).tanh())};
  };
  std::vector<Tensor> in{ag::testing::test_input({3, 4}, -1, 1, 1),
                         ag::testing::test_input({4, 5}, -1, 1, 2)};
  ag::CompiledGraphs g =
      ag::testing::expect_matches_eager_with(fn, in, {.partitioner = "min_cut"}, {1e-12, 1e-10});
  size_t mms = 0;
  for (size_t p = g.forward.find("aten.mm.default"); p != std::string::npos;
       p = g.forward.find("aten.mm.default", p + 1))
    ++mms;
  EXPECT_EQ(mms, 1u) << g.forward;
  EXPECT_EQ(g.saved_activation_bytes, 3u * 5 * 8) << g.saved_report;
}
