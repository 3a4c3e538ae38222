// verify_graph: structural errors and metadata disagreements, each naming the node.
#include "graph/verifier.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "graph/graph.h"
#include "graph/parser.h"

namespace aotgrad::graph {
namespace {

using ops::TensorMeta;

TensorMeta f32(const IntList& sizes) {
  return TensorMeta::contiguous(sizes, DType::f32);
}
const ops::OpDef& op(const char* name) {
  return ops::lookup(name);
}

struct Forward {
  Graph g{"forward"};
  ValueId x, w, mm, t, s;
  Forward() {
    x = g.add_input("x", f32({64, 128}));
    w = g.add_input("w", f32({128, 256}));
    mm = g.add_node(op("aten.mm.default"), {x, w}, {f32({64, 256})})[0];
    t = g.add_node(op("aten.tanh.default"), {mm}, {f32({64, 256})}, {"t"})[0];
    s = g.add_node(op("aten.sum.default"), {t, std::monostate{}}, {f32({})}, {"s"})[0];
    g.add_output(s);
    g.add_output(t);
  }
};

// The message verify_graph throws ("" when it accepts the graph).
std::string verify_error(const Graph& g) {
  try {
    verify_graph(g);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Verifier, AcceptsWellFormedGraphs) {
  Forward f;
  EXPECT_EQ(verify_error(f.g), "");
  Graph parsed = parse_graph(
      "graph p(%x: f32[4,8]{1,4}, %y: f32[8], %z: f64[]) {\n"
      "  %a: f32[4,8] = aten.add.Tensor(%x, %y, alpha=2)\n"
      "  %b: f32[4,1] = aten.sum.dim_IntList(%a, dim=[1], keepdim=true)\n"
      "  %c: f32[4] = aten.sum.dim_IntList(%a, dim=[-1])\n"
      "  %d: f32[4,8] = aten.mul.Scalar(%x, other=0.5)\n"
      "  %e: f32[4,8] = aten.tanh.default(%x)\n"
      "  return (%b, %c, %d, %e, %z)\n"
      "}\n");
  EXPECT_EQ(verify_error(parsed), "");
}

TEST(Verifier, UseBeforeDefinition) {
  Forward f;
  std::vector<Node> nodes = f.g.nodes();
  std::swap(nodes[0], nodes[1]);
  f.g.replace_nodes(nodes);
  EXPECT_EQ(verify_error(f.g),
            "verify_graph: node %t = aten.tanh.default: argument 'self' uses %mm before its "
            "definition (node 1)");
}

TEST(Verifier, UndefinedValues) {
  Forward f;
  f.g.mutable_nodes()[1].args[0] = ValueId{42};
  EXPECT_EQ(verify_error(f.g),
            "verify_graph: node %t = aten.tanh.default: argument 'self' refers to value id 42, "
            "which does not exist");

  // %mm exists but its node is gone.
  Forward h;
  std::vector<Node> nodes = h.g.nodes();
  nodes.erase(nodes.begin());
  h.g.replace_nodes(nodes);
  EXPECT_EQ(verify_error(h.g),
            "verify_graph: node %t = aten.tanh.default: argument 'self' uses %mm but it is not "
            "defined by any graph input or node");
}

TEST(Verifier, ArityMismatch) {
  Forward f;
  f.g.mutable_nodes()[2].args.pop_back();
  EXPECT_EQ(verify_error(f.g),
            "verify_graph: node %s = aten.sum.default: arity mismatch: the schema has 2 "
            "arguments, the node 1 (nodes hold every argument, defaults filled in)");

  Forward h;
  h.g.mutable_nodes()[1].outputs.push_back(h.s);
  EXPECT_EQ(verify_error(h.g),
            "verify_graph: node %t = aten.tanh.default: arity mismatch: the op returns 1 "
            "value(s), the node has 2 results");
}

TEST(Verifier, ArgumentKindMismatch) {
  Forward f;
  f.g.mutable_nodes()[0].args[1] = int64_t{3};
  EXPECT_EQ(verify_error(f.g),
            "verify_graph: node %mm = aten.mm.default: argument 'mat2' (1) should be Tensor but "
            "holds int");

  Graph g("k");
  ValueId x = g.add_input("x", f32({4, 8}));
  g.add_node(op("aten.sum.dim_IntList"), {x, x, false, std::monostate{}}, {f32({})}, {"s"});
  EXPECT_EQ(verify_error(g),
            "verify_graph: node %s = aten.sum.dim_IntList: argument 'dim' (1) should be int[]? "
            "but holds Tensor");

  Graph h("k");
  ValueId y = h.add_input("y", f32({4, 8}));
  h.add_node(op("aten.mul.Scalar"), {y, std::string("2")}, {f32({4, 8})}, {"m"});
  EXPECT_EQ(verify_error(h),
            "verify_graph: node %m = aten.mul.Scalar: argument 'other' (1) should be Scalar but "
            "holds str");
}

TEST(Verifier, UndefinedGraphOutput) {
  Forward f;
  f.g.mutable_outputs().push_back(ValueId{99});
  EXPECT_EQ(verify_error(f.g), "verify_graph: graph output 2: value id 99 (no such value)");

  Forward h;
  h.g.replace_nodes({});
  // The first failure is the output list: no node defines %s any more.
  EXPECT_EQ(verify_error(h.g),
            "verify_graph: graph output 0: %s is not defined by any graph input or node");
}

TEST(Verifier, RecordedMetadataDisagreesWithMeta) {
  Graph g("m");
  ValueId x = g.add_input("x", f32({64, 128}));
  ValueId w = g.add_input("w", f32({128, 256}));
  g.add_node(op("aten.mm.default"), {x, w}, {f32({64, 128})});
  EXPECT_EQ(verify_error(g),
            "verify_graph: node %mm = aten.mm.default: result %mm is recorded as f32[64,128] but "
            "the op's meta function computes f32[64,256] from the recorded inputs");

  Graph h("d");
  ValueId y = h.add_input("y", f32({3}));
  h.add_node(op("aten.tanh.default"), {y}, {TensorMeta::contiguous({3}, DType::f64)}, {"t"});
  EXPECT_EQ(verify_error(h),
            "verify_graph: node %t = aten.tanh.default: result %t is recorded as f64[3] but the "
            "op's meta function computes f32[3] from the recorded inputs");

  // Strides are the layout the producer chose; only dtype and sizes must agree.
  Graph s("s");
  ValueId z = s.add_input("z", f32({4, 8}));
  s.add_node(op("aten.tanh.default"), {z}, {TensorMeta{DType::f32, {4, 8}, {1, 4}, 0}});
  EXPECT_EQ(verify_error(s), "");
}

TEST(Verifier, MetaRejectsRecordedInputs) {
  Graph g("m");
  ValueId x = g.add_input("x", f32({2, 3}));
  ValueId w = g.add_input("w", f32({4, 5}));
  g.add_node(op("aten.mm.default"), {x, w}, {f32({2, 5})});
  std::string err = verify_error(g);
  EXPECT_EQ(err.rfind("verify_graph: node %mm = aten.mm.default: the op's meta function rejects "
                      "the recorded inputs: ",
                      0),
            0u)
      << err;
}

TEST(Verifier, ParsedAnnotationThatMetaContradicts) {
  Graph g = parse_graph(
      "graph p(%x: f32[2]) {\n"
      "  %y: f32[3] = aten.tanh.default(%x)\n"
      "  return (%y)\n"
      "}\n");
  EXPECT_EQ(verify_error(g),
            "verify_graph: node %y = aten.tanh.default: result %y is recorded as f32[3] but the "
            "op's meta function computes f32[2] from the recorded inputs");
}

TEST(Verifier, ViewsSeeTheRecordedStridesAndOffsets) {
  // Each view's meta reads its input's strides and offset from the annotations; as_strided
  // reaches back into the storage, which must cover the recorded geometry.
  Graph g = parse_graph(
      "graph v(%x: f32[4,8]) {\n"
      "  %s: f32[2,8]@8 = aten.slice.Tensor(%x, start=1, end=3)\n"
      "  %t: f32[8,2]{1,8}@8 = aten.t.default(%s)\n"
      "  %a: f32[2,2]{1,8}@9 = aten.as_strided.default(%t, size=[2, 2], stride=[1, 8], "
      "storage_offset=9)\n"
      "  %e: f32[8,2] = aten.tanh.default(%t)\n"
      "  %p: f32[2,8] = aten.permute.default(%t, dims=[1, 0])\n"
      "  return (%a, %e, %p)\n"
      "}\n");
  EXPECT_EQ(verify_error(g), "");
  // Permuting the transposed slice back gives row-major strides again, at the slice's offset.
  g.value(g.outputs()[2]).meta = f32({8, 2});
  EXPECT_EQ(verify_error(g),
            "verify_graph: node %p = aten.permute.default: result %p is recorded as f32[8,2] but "
            "the op's meta function computes f32[2,8]@8 from the recorded inputs");
}

TEST(Verifier, MultiResultNodes) {
  const char* text =
      "graph loss(%x: f32[8,5], %target: i64[8]) {\n"
      "  %loss: f32[], %total_weight: f32[] = aten.nll_loss_forward.default(%x, %target, none, "
      "reduction=1, ignore_index=-100)\n"
      "  return (%loss)\n"
      "}\n";
  Graph g = parse_graph(text);
  EXPECT_EQ(verify_error(g), "");
  g.value(g.nodes()[0].outputs[1]).meta = f32({8});
  EXPECT_EQ(verify_error(g),
            "verify_graph: node %loss = aten.nll_loss_forward.default: result %total_weight is "
            "recorded as f32[8] but the op's meta function computes f32[] from the recorded "
            "inputs");
}

TEST(Verifier, DuplicateNamesCannotRoundTrip) {
  Forward f;
  f.g.value(f.t).name = "x";
  EXPECT_EQ(verify_error(f.g),
            "verify_graph: two values are named %x (value ids 0 and 3); rename one "
            "(Graph::fresh_name)");
}

TEST(Verifier, SizesAndStridesMustPairUp) {
  Forward f;
  f.g.value(f.t).meta.strides = {1};
  EXPECT_EQ(verify_error(f.g),
            "verify_graph: node %t = aten.tanh.default: %t has 2 sizes but 1 strides");
  Forward h;
  h.g.value(h.w).meta.strides = {256, 1, 1};
  EXPECT_EQ(verify_error(h.g), "verify_graph: graph input 1: %w has 2 sizes but 3 strides");
}

TEST(Verifier, InputListedTwiceOrProduced) {
  Forward f;
  f.g.value(f.x).producer = 1;
  EXPECT_EQ(verify_error(f.g),
            "verify_graph: graph input 0: %x records producer node 1; graph inputs have none");
}

}  // namespace
}  // namespace aotgrad::graph
