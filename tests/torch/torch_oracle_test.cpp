// The third oracle (DESIGN "Testing"): PyTorch itself. Every fixture under tests/data/torch/
// (tools/export_torch_graph.py, docs/torch_oracle.md) is a graph PyTorch's make_fx traced, with
// PyTorch's inputs, outputs and input gradients. Here:
//   TorchGraph  — parse the graph, verify it, run it with the interpreter backend on the saved
//                 inputs, compare every output (for a "backward_graph" fixture, PyTorch's own
//                 joint graph, the outputs include the gradients, so its backward ops are checked);
//   TorchGrad   — for each fixture with gradients, our backward: joint graph from our VJP rules,
//                 partitioned by "default" and by "min_cut", compiled, run on PyTorch's tangents,
//                 each input gradient compared with PyTorch's;
//   TorchOpTable — the op table the exporter printed against (op_table.txt) still matches ours.
// Tolerances are per fixture (the manifest's rtol / atol, chosen per op in fixtures.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "aot/joint.h"
#include "aotgrad/ops.h"
#include "backends/backend.h"
#include "graph/parser.h"
#include "graph/verifier.h"
#include "ops/op.h"
#include "partition/registry.h"
#include "torch/torch_fixture.h"

namespace aotgrad::testing::torch {
namespace {

std::vector<Tensor> run_graph(const graph::Graph& g, std::vector<Tensor> inputs) {
  return backends::compiler("interpreter")(g)(std::move(inputs));
}

class TorchGraph : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchGraph, OutputsMatchPyTorch) {
  Fixture f = load_fixture(GetParam());
  graph::Graph g = graph::parse_graph(f.graph_text);
  ASSERT_NO_THROW(graph::verify_graph(g));
  ASSERT_EQ(g.inputs().size(), f.inputs.size());
  std::vector<Tensor> outs = run_graph(g, f.inputs);
  ASSERT_EQ(outs.size(), f.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i)
    EXPECT_TRUE(close_to_torch(outs[i], f.outputs[i], f.rtol, f.atol,
                               f.name + " output " + std::to_string(i)));
}

std::vector<std::string> all_fixtures() { return fixture_names(); }

std::vector<std::string> fixtures_with_grads() {
  std::vector<std::string> out;
  for (const std::string& n : fixture_names()) {
    std::string manifest = read_text(fixture_root() + "/" + n + "/manifest.json");
    if (parse_json(manifest).at("grads").items.size() > 0) out.push_back(n);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchGraph, ::testing::ValuesIn(all_fixtures()),
                         [](const auto& info) { return info.param; });

// Which values of a parsed forward graph require grad: the inputs PyTorch took gradients for,
// and every floating result of a node reading one (as autograd would record it).
std::vector<bool> requires_grad(const graph::Graph& g, const Fixture& f) {
  std::vector<bool> rg(g.values().size(), false);
  for (const auto& [input, grad] : f.grads) rg[g.inputs().at(input).index] = true;
  for (const graph::Node& n : g.nodes()) {
    bool any = false;
    for (const graph::NodeArg& a : n.args)
      for (graph::ValueId v : graph::arg_values(a)) any = any || rg[v.index];
    for (graph::ValueId v : n.outputs)
      rg[v.index] = any && is_floating(g.value(v).meta.dtype);
  }
  return rg;
}

class TorchGrad : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(TorchGrad, InputGradientsMatchPyTorch) {
  const auto& [name, partitioner] = GetParam();
  Fixture f = load_fixture(name);
  graph::Graph fw = graph::parse_graph(f.graph_text);
  aot::JointGraph j = aot::build_joint(fw, requires_grad(fw, f));
  partition::JointInfo info{j.num_primals, j.num_fw_outputs, {}};
  partition::Partition p = partition::run_partitioner(partitioner, j.graph, info, {});
  ASSERT_NO_THROW(graph::verify_graph(p.forward));
  ASSERT_NO_THROW(graph::verify_graph(p.backward));

  std::vector<Tensor> fw_out = run_graph(p.forward, f.inputs);
  ASSERT_EQ(fw_out.size(), j.num_fw_outputs + p.saved.size());
  for (size_t i = 0; i < j.num_fw_outputs; ++i)
    EXPECT_TRUE(close_to_torch(fw_out[i], f.outputs[i], f.rtol, f.atol,
                               name + " output " + std::to_string(i)));

  // Backward inputs: saved values, then a tangent per output the joint graph takes one for.
  std::vector<Tensor> bw_in(fw_out.begin() + static_cast<std::ptrdiff_t>(j.num_fw_outputs),
                            fw_out.end());
  for (size_t out : j.tangent_of_output) {
    auto it = std::find(f.tangent_of_output.begin(), f.tangent_of_output.end(), out);
    ASSERT_NE(it, f.tangent_of_output.end())
        << "our joint graph wants a tangent for output " << out << ", PyTorch recorded none";
    bw_in.push_back(f.tangents[static_cast<size_t>(it - f.tangent_of_output.begin())]);
  }
  std::vector<Tensor> grads = run_graph(p.backward, std::move(bw_in));
  ASSERT_EQ(grads.size(), j.grad_of_primal.size());
  for (const auto& [input, expected] : f.grads) {
    auto it = std::find(j.grad_of_primal.begin(), j.grad_of_primal.end(), input);
    const std::string what = name + " (" + partitioner + ") gradient of input " +
                             std::to_string(input) + " %" +
                             fw.value(fw.inputs()[input]).name;
    if (it == j.grad_of_primal.end()) {
      // No gradient from our side: PyTorch's must then be all zeros.
      EXPECT_TRUE(close_to_torch(zeros_like(expected), expected, f.rtol, f.atol, what));
      continue;
    }
    EXPECT_TRUE(close_to_torch(grads[static_cast<size_t>(it - j.grad_of_primal.begin())],
                               expected, f.rtol, f.atol, what));
  }
}

std::vector<std::tuple<std::string, std::string>> grad_cases() {
  std::vector<std::tuple<std::string, std::string>> out;
  for (const std::string& n : fixtures_with_grads())
    for (const char* p : {"default", "min_cut"}) out.emplace_back(n, p);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchGrad, ::testing::ValuesIn(grad_cases()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// op_table.txt is what the exporter checked each node against (our names and schemas). When a
// row's schema changes, rerun with AOTGRAD_WRITE_OP_TABLE=1 to rewrite it, then re-export.
TEST(TorchOpTable, RecordedSchemasMatchTheTable) {
  const std::string path = fixture_root() + "/op_table.txt";
  if (std::getenv("AOTGRAD_WRITE_OP_TABLE")) {
    std::ofstream out(path);
    for (const ops::OpDef* op : ops::all_ops()) out << op->name << '\t' << op->schema << '\n';
  }
  std::istringstream in(read_text(path));
  std::string line;
  size_t rows = 0;
  while (std::getline(in, line)) {
    size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << "op_table.txt line without a tab: " << line;
    const std::string name = line.substr(0, tab);
    const ops::OpDef* op = ops::find(name);
    ASSERT_NE(op, nullptr) << name << " is in op_table.txt but not registered";
    EXPECT_EQ(op->schema, line.substr(tab + 1))
        << name << "'s schema changed: rerun with AOTGRAD_WRITE_OP_TABLE=1, then re-export";
    ++rows;
  }
  EXPECT_GT(rows, 100u);
}

// Every op a fixture uses is registered (a graph that names an unknown op fails TorchGraph too,
// but this names the op and the fixture together).
TEST(TorchOpTable, FixturesUseOnlyRegisteredOps) {
  for (const std::string& n : fixture_names()) {
    Fixture f = load_fixture(n);
    EXPECT_NO_THROW(graph::parse_graph(f.graph_text)) << n;
  }
}

}  // namespace
}  // namespace aotgrad::testing::torch
