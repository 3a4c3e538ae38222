// eliminate_dead_code: what goes, what stays, and that the result is still a valid graph.
#include "graph/dce.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "graph/graph.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"

namespace aotgrad::graph {
namespace {

using ops::TensorMeta;

TensorMeta f32(const IntList& sizes) {
  return TensorMeta::contiguous(sizes, DType::f32);
}

std::vector<TensorMeta> same_as_self(const ops::OpArgs& a) {
  const Tensor& t = ops::tensor_arg(a, 0);
  return {TensorMeta::contiguous(t.sizes(), t.dtype())};
}
std::vector<Tensor> not_run(const ops::OpArgs&) {
  throw std::logic_error("test row: no kernel");
}

// A row outside the op table, for properties no registered row may have yet (an effectful op,
// a two-result op). DCE reads only the row, so it need not be registered.
struct TestRow {
  ops::OpDef def;
  ops::OpDef::Derived derived;
  TestRow(std::string_view name, std::string_view schema, ops::Recompute recompute) {
    def.name = name;
    def.schema = schema;
    def.meta = same_as_self;
    def.kernel = not_run;
    def.recompute = recompute;
    derived.schema = ops::parse_schema(schema);
    for (size_t i = 0; i < derived.schema.args.size(); ++i)
      if (derived.schema.args[i].is_write && derived.mutated_arg < 0)
        derived.mutated_arg = static_cast<int>(i);
    def.derived = &derived;
  }
};

TEST(Dce, RemovesUnusedNodesAndKeepsOrder) {
  Graph g = parse_graph(
      "graph f(%x: f32[4], %unused: f32[4]) {\n"
      "  %a: f32[4] = aten.tanh.default(%x)\n"
      "  %dead1: f32[4] = aten.exp.default(%a)\n"
      "  %b: f32[4] = aten.mul.Scalar(%a, other=2)\n"
      "  %dead2: f32[] = aten.sum.default(%dead1)\n"
      "  %c: f32[4] = aten.add.Tensor(%b, %a)\n"
      "  %dead3: f32[4] = aten.neg.default(%unused)\n"
      "  return (%c, %a)\n"
      "}\n");
  eliminate_dead_code(g);
  EXPECT_EQ(print_graph(g),
            "graph f(%x: f32[4], %unused: f32[4]) {\n"
            "  %a: f32[4] = aten.tanh.default(%x)\n"
            "  %b: f32[4] = aten.mul.Scalar(%a, other=2)\n"
            "  %c: f32[4] = aten.add.Tensor(%b, %a)\n"
            "  return (%c, %a)\n"
            "}\n");
  EXPECT_NO_THROW(verify_graph(g));  // producers renumbered
  EXPECT_EQ(g.value(g.outputs()[0]).producer, 2);
}

TEST(Dce, EverythingDeadLeavesOnlyTheSignature) {
  Graph g = parse_graph(
      "graph f(%x: f32[4]) {\n"
      "  %a: f32[4] = aten.tanh.default(%x)\n"
      "  %b: f32[] = aten.sum.default(%a)\n"
      "  return (%x)\n"
      "}\n");
  eliminate_dead_code(g);
  EXPECT_EQ(print_graph(g), "graph f(%x: f32[4]) {\n  return (%x)\n}\n");
}

TEST(Dce, NothingDeadChangesNothing) {
  const std::string text =
      "graph f(%x: f32[4,4]) {\n"
      "  %mm: f32[4,4] = aten.mm.default(%x, %x)\n"
      "  %s: f32[] = aten.sum.default(%mm)\n"
      "  return (%s)\n"
      "}\n";
  Graph g = parse_graph(text);
  eliminate_dead_code(g);
  EXPECT_EQ(print_graph(g), text);
}

TEST(Dce, KeepsEffectfulOpsAndWhatTheyRead) {
  TestRow effect("test.log_tensor.default", "log_tensor(Tensor self) -> Tensor",
                 ops::Recompute::effectful);
  Graph g("f");
  ValueId x = g.add_input("x", f32({4}));
  ValueId a = g.add_node(ops::lookup("aten.exp.default"), {x}, {f32({4})})[0];
  g.add_node(effect.def, {a}, {f32({4})}, {"logged"});
  g.add_node(ops::lookup("aten.neg.default"), {x}, {f32({4})});
  g.add_output(x);
  eliminate_dead_code(g);
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].op->name, "aten.exp.default");
  EXPECT_EQ(g.nodes()[1].op, &effect.def);
}

TEST(Dce, KeepsInPlaceOpsAndWhatTheyRead) {
  TestRow add_("test.add_.Tensor",
               "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
               ops::Recompute::pointwise);
  ASSERT_TRUE(add_.def.is_inplace());
  Graph g("f");
  ValueId x = g.add_input("x", f32({4}));
  ValueId b = g.add_node(ops::lookup("aten.tanh.default"), {x}, {f32({4})})[0];
  g.add_node(add_.def, {x, b, Scalar(int64_t{1})}, {f32({4})}, {"x_updated"});
  g.add_output(x);
  eliminate_dead_code(g);
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].op->name, "aten.tanh.default");
  EXPECT_EQ(g.nodes()[1].op, &add_.def);
}

TEST(Dce, KeepsRegisteredInPlaceRows) {
  // Every registered in-place row survives DCE with its result unused.
  for (const ops::OpDef* row : ops::all_ops()) {
    if (!row->is_inplace()) continue;
    const ops::Schema& s = row->parsed_schema();
    Graph g("f");
    std::vector<NodeArg> args(s.args.size());  // None for constants: DCE reads none
    for (size_t i = 0; i < s.args.size(); ++i)
      if (s.args[i].type == ops::ArgType::tensor) args[i] = g.add_input("in", f32({4}));
    g.add_node(*row, args, {f32({4})});
    eliminate_dead_code(g);
    EXPECT_EQ(g.nodes().size(), 1u) << row->name;
  }
}

TEST(Dce, KeepsMultiResultNodeWhenOneResultIsLive) {
  TestRow pair("test.pair.default", "pair(Tensor self) -> (Tensor, Tensor)",
               ops::Recompute::pointwise);
  Graph g("f");
  ValueId x = g.add_input("x", f32({4}));
  std::vector<ValueId> both = g.add_node(pair.def, {x}, {f32({4}), f32({4})}, {"first", "second"});
  ValueId dead_pair = g.add_node(pair.def, {x}, {f32({4}), f32({4})}, {"p", "q"})[0];
  g.add_output(both[1]);
  eliminate_dead_code(g);
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].outputs, both);
  EXPECT_NE(g.nodes()[0].outputs[0], dead_pair);
}

}  // namespace
}  // namespace aotgrad::graph
