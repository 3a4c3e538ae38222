// Golden and round-trip tests of the graph text format (docs/ir.md).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include "graph/graph.h"
#include "graph/parser.h"
#include "graph/printer.h"

namespace aotgrad::graph {
namespace {

using ops::TensorMeta;

TensorMeta f32(const IntList& sizes) {
  return TensorMeta::contiguous(sizes, DType::f32);
}
const ops::OpDef& op(const char* name) {
  return ops::lookup(name);
}

// The example of DESIGN.md / docs/ir.md, built through the Graph API.
Graph forward_example() {
  Graph g("forward");
  ValueId x = g.add_input("x", f32({64, 128}));
  ValueId w = g.add_input("w", f32({128, 256}));
  ValueId mm = g.add_node(op("aten.mm.default"), {x, w}, {f32({64, 256})})[0];
  ValueId t = g.add_node(op("aten.tanh.default"), {mm}, {f32({64, 256})}, {"t"})[0];
  ValueId s = g.add_node(op("aten.sum.default"), {t, std::monostate{}}, {f32({})}, {"s"})[0];
  g.add_output(s);
  g.add_output(t);
  return g;
}

const char* const kForward =
    "graph forward(%x: f32[64,128], %w: f32[128,256]) {\n"
    "  %mm: f32[64,256] = aten.mm.default(%x, %w)\n"
    "  %t: f32[64,256] = aten.tanh.default(%mm)\n"
    "  %s: f32[] = aten.sum.default(%t)\n"
    "  return (%s, %t)\n"
    "}\n";

// Text -> graph -> text must give back the text byte for byte.
void expect_round_trip(const std::string& text) {
  Graph g = parse_graph(text);
  EXPECT_EQ(print_graph(g), text);
}

// The message of the std::invalid_argument that parsing `text` throws ("" when none).
std::string parse_error(const std::string& text) {
  try {
    parse_graph(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(GraphTextPrint, ForwardExample) {
  EXPECT_EQ(print_graph(forward_example()), kForward);
}

TEST(GraphTextPrint, KeywordArgumentsInSchemaOrderDefaultsOmitted) {
  Graph g("kw");
  ValueId x = g.add_input("x", f32({4, 8}));
  ValueId y = g.add_input("y", f32({4, 8}));
  g.add_node(op("aten.sum.dim_IntList"), {x, IntList{1}, true, std::monostate{}}, {f32({4, 1})});
  g.add_node(op("aten.sum.dim_IntList"), {x, IntList{0, 1}, false, std::monostate{}}, {f32({})});
  g.add_node(op("aten.sum.dim_IntList"), {x, std::monostate{}, false, DType::f64},
             {TensorMeta::contiguous({}, DType::f64)});
  g.add_node(op("aten.add.Tensor"), {x, y, Scalar(int64_t{1})}, {f32({4, 8})});
  g.add_node(op("aten.add.Tensor"), {x, y, Scalar(int64_t{2})}, {f32({4, 8})});
  // A float alpha of 1.0 is not the int default 1: it prints, so it reads back as a float.
  g.add_node(op("aten.add.Tensor"), {x, y, Scalar(1.0)}, {f32({4, 8})});
  g.add_node(op("aten.mul.Scalar"), {x, Scalar(0.5)}, {f32({4, 8})});
  g.add_node(op("aten.gelu.default"), {x, std::string("tanh")}, {f32({4, 8})});
  g.add_node(op("aten.gelu.default"), {x, std::string("none")}, {f32({4, 8})});
  const std::string expected =
      "graph kw(%x: f32[4,8], %y: f32[4,8]) {\n"
      "  %sum: f32[4,1] = aten.sum.dim_IntList(%x, dim=[1], keepdim=true)\n"
      "  %sum_1: f32[] = aten.sum.dim_IntList(%x, dim=[0, 1])\n"
      "  %sum_2: f64[] = aten.sum.dim_IntList(%x, dtype=f64)\n"
      "  %add: f32[4,8] = aten.add.Tensor(%x, %y)\n"
      "  %add_1: f32[4,8] = aten.add.Tensor(%x, %y, alpha=2)\n"
      "  %add_2: f32[4,8] = aten.add.Tensor(%x, %y, alpha=1.0)\n"
      "  %mul: f32[4,8] = aten.mul.Scalar(%x, other=0.5)\n"
      "  %gelu: f32[4,8] = aten.gelu.default(%x, approximate=\"tanh\")\n"
      "  %gelu_1: f32[4,8] = aten.gelu.default(%x)\n"
      "  return ()\n"
      "}\n";
  EXPECT_EQ(print_graph(g), expected);
  expect_round_trip(expected);
}

TEST(GraphTextPrint, ScalarConstants) {
  Graph g("c");
  ValueId x = g.add_input("x", f32({2}));
  for (Scalar s :
       {Scalar(int64_t{3}), Scalar(int64_t{-7}), Scalar(1.0), Scalar(1e-05), Scalar(0.1),
        Scalar(-2.5), Scalar(1e300), Scalar(true), Scalar(std::numeric_limits<double>::infinity()),
        Scalar(-std::numeric_limits<double>::infinity()),
        Scalar(std::numeric_limits<double>::quiet_NaN())})
    g.add_node(op("aten.mul.Scalar"), {x, s}, {f32({2})}, {"m"});
  const std::string expected =
      "graph c(%x: f32[2]) {\n"
      "  %m: f32[2] = aten.mul.Scalar(%x, other=3)\n"
      "  %m_1: f32[2] = aten.mul.Scalar(%x, other=-7)\n"
      "  %m_2: f32[2] = aten.mul.Scalar(%x, other=1.0)\n"
      "  %m_3: f32[2] = aten.mul.Scalar(%x, other=1e-05)\n"
      "  %m_4: f32[2] = aten.mul.Scalar(%x, other=0.1)\n"
      "  %m_5: f32[2] = aten.mul.Scalar(%x, other=-2.5)\n"
      "  %m_6: f32[2] = aten.mul.Scalar(%x, other=1e+300)\n"
      "  %m_7: f32[2] = aten.mul.Scalar(%x, other=true)\n"
      "  %m_8: f32[2] = aten.mul.Scalar(%x, other=inf)\n"
      "  %m_9: f32[2] = aten.mul.Scalar(%x, other=-inf)\n"
      "  %m_10: f32[2] = aten.mul.Scalar(%x, other=nan)\n"
      "  return ()\n"
      "}\n";
  EXPECT_EQ(print_graph(g), expected);
  Graph back = parse_graph(expected);
  EXPECT_EQ(print_graph(back), expected);
  // The kind of each Scalar survives, not only its text.
  const auto& nodes = back.nodes();
  EXPECT_EQ(std::get<Scalar>(nodes[0].args[1]), Scalar(int64_t{3}));
  EXPECT_EQ(std::get<Scalar>(nodes[2].args[1]), Scalar(1.0));
  EXPECT_EQ(std::get<Scalar>(nodes[3].args[1]), Scalar(1e-05));
  EXPECT_EQ(std::get<Scalar>(nodes[7].args[1]), Scalar(true));
  EXPECT_TRUE(std::isnan(std::get<Scalar>(nodes[10].args[1]).to_double()));
}

TEST(GraphTextPrint, FloatsReadBackExactly) {
  Graph g("f");
  ValueId x = g.add_input("x", f32({2}));
  const double values[] = {0.1 + 0.2, 1.0 / 3.0, 6.02214076e23, 5e-324, -0.0};
  for (double v : values) g.add_node(op("aten.mul.Scalar"), {x, Scalar(v)}, {f32({2})});
  Graph back = parse_graph(print_graph(g));
  for (size_t i = 0; i < std::size(values); ++i) {
    double got = std::get<Scalar>(back.nodes()[i].args[1]).to_double();
    EXPECT_EQ(got, values[i]) << i;
    EXPECT_EQ(std::signbit(got), std::signbit(values[i])) << i;
  }
}

TEST(GraphTextPrint, StridesOffsetsAndZeroDim) {
  Graph g("layout");
  ValueId a = g.add_input("a", TensorMeta{DType::f32, {4, 8}, {1, 4}, 0});
  ValueId b = g.add_input("b", TensorMeta{DType::f64, {3}, {2}, 5});
  ValueId c = g.add_input("c", TensorMeta{DType::i64, {}, {}, 7});
  ValueId d = g.add_input("d", TensorMeta::contiguous({2, 0, 3}, DType::b8));
  // Strides that were never filled in mean contiguous, not "no strides".
  ValueId e = g.add_input("e", TensorMeta{DType::bf16, {2, 3}, {}, 0});
  g.add_output(a);
  g.add_output(b);
  g.add_output(c);
  g.add_output(d);
  g.add_output(e);
  const std::string expected =
      "graph layout(%a: f32[4,8]{1,4}, %b: f64[3]{2}@5, %c: i64[]@7, %d: b8[2,0,3], "
      "%e: bf16[2,3]) {\n"
      "  return (%a, %b, %c, %d, %e)\n"
      "}\n";
  EXPECT_EQ(print_graph(g), expected);
  Graph back = parse_graph(expected);
  EXPECT_EQ(back.value(back.inputs()[0]).meta, (TensorMeta{DType::f32, {4, 8}, {1, 4}, 0}));
  EXPECT_EQ(back.value(back.inputs()[1]).meta, (TensorMeta{DType::f64, {3}, {2}, 5}));
  EXPECT_EQ(back.value(back.inputs()[4]).meta, TensorMeta::contiguous({2, 3}, DType::bf16));
  EXPECT_EQ(print_graph(back), expected);
}

TEST(GraphTextPrint, DescriptorsOneEntryPerLine) {
  Graph g("forward");
  ValueId x = g.add_input("x", f32({8, 4}), Descriptor::input(0));
  ValueId w = g.add_input("fc.weight", f32({4, 2}), Descriptor::param("fc.weight"));
  ValueId n = g.add_input("n", f32({}));
  ValueId mm = g.add_node(op("aten.mm.default"), {x, w}, {f32({8, 2})})[0];
  ValueId s = g.add_node(op("aten.sum.default"), {mm, std::monostate{}}, {f32({})})[0];
  g.add_output(s, Descriptor::output(0));
  g.add_output(mm, Descriptor::saved(0));
  g.add_output(n);
  const std::string expected =
      "graph forward(\n"
      "    %x: f32[8,4],  # input(0)\n"
      "    %fc.weight: f32[4,2],  # param(fc.weight)\n"
      "    %n: f32[]\n"
      ") {\n"
      "  %mm: f32[8,2] = aten.mm.default(%x, %fc.weight)\n"
      "  %sum: f32[] = aten.sum.default(%mm)\n"
      "  return (\n"
      "    %sum,  # output(0)\n"
      "    %mm,  # saved(0)\n"
      "    %n\n"
      "  )\n"
      "}\n";
  EXPECT_EQ(print_graph(g), expected);
  Graph back = parse_graph(expected);
  EXPECT_EQ(back.input_descs(),
            (std::vector<Descriptor>{Descriptor::input(0), Descriptor::param("fc.weight"), {}}));
  EXPECT_EQ(back.output_descs(),
            (std::vector<Descriptor>{Descriptor::output(0), Descriptor::saved(0), {}}));
  EXPECT_EQ(print_graph(back), expected);
}

TEST(GraphTextPrint, OnlyOutputDescriptorsKeepTheSignatureOnOneLine) {
  Graph g("bw");
  ValueId t = g.add_input("tangent", f32({2}));
  g.add_output(t, Descriptor::wrapping(DescriptorKind::grad, Descriptor::input(0)));
  const std::string expected =
      "graph bw(%tangent: f32[2]) {\n"
      "  return (\n"
      "    %tangent  # grad(input(0))\n"
      "  )\n"
      "}\n";
  EXPECT_EQ(print_graph(g), expected);
  expect_round_trip(expected);
}

TEST(GraphTextPrint, OddNamesAreQuoted) {
  Graph g("odd graph");
  ValueId x = g.add_input("layer 1/in", f32({2}));
  ValueId y = g.add_node(op("aten.gelu.default"), {x, std::string("say \"hi\"\n\\")}, {f32({2})},
                         {"a\"b"})[0];
  g.add_output(y);
  const std::string expected =
      "graph \"odd graph\"(%\"layer 1/in\": f32[2]) {\n"
      "  %\"a\\\"b\": f32[2] = aten.gelu.default(%\"layer 1/in\", "
      "approximate=\"say \\\"hi\\\"\\n\\\\\")\n"
      "  return (%\"a\\\"b\")\n"
      "}\n";
  EXPECT_EQ(print_graph(g), expected);
  Graph back = parse_graph(expected);
  EXPECT_EQ(back.name(), "odd graph");
  EXPECT_EQ(back.value(back.inputs()[0]).name, "layer 1/in");
  EXPECT_EQ(std::get<std::string>(back.nodes()[0].args[1]), "say \"hi\"\n\\");
  EXPECT_EQ(print_graph(back), expected);
}

TEST(GraphTextPrint, MultiResultNodesBindATuple) {
  Graph g("loss");
  ValueId x = g.add_input("x", f32({8, 5}));
  ValueId target = g.add_input("target", TensorMeta::contiguous({8}, DType::i64));
  std::vector<ValueId> r = g.add_node(op("aten.nll_loss_forward.default"),
                                      {x, target, std::monostate{}, int64_t{1}, int64_t{-100}},
                                      {f32({}), f32({})}, {"loss", "total_weight"});
  g.add_output(r[0]);
  const std::string expected =
      "graph loss(%x: f32[8,5], %target: i64[8]) {\n"
      "  %loss: f32[], %total_weight: f32[] = aten.nll_loss_forward.default(%x, %target, none, "
      "reduction=1, ignore_index=-100)\n"
      "  return (%loss)\n"
      "}\n";
  EXPECT_EQ(print_graph(g), expected);
  Graph back = parse_graph(expected);
  ASSERT_EQ(back.nodes().size(), 1u);
  EXPECT_EQ(back.nodes()[0].outputs.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(back.nodes()[0].args[2]));
  EXPECT_EQ(print_graph(back), expected);
}

TEST(GraphTextPrint, ViewsFactoriesAndDtypeArguments) {
  expect_round_trip(
      "graph v(%x: f32[4,8], %g: f32[4,8]) {\n"
      "  %s: f32[2,8]@8 = aten.slice.Tensor(%x, start=1, end=3)\n"
      "  %s2: f32[4,4]{8,2}@1 = aten.slice.Tensor(%x, dim=1, start=1, end=9223372036854775807, "
      "step=2)\n"
      "  %t: f32[8,2]{1,8}@8 = aten.t.default(%s)\n"
      "  %z: f64[2,3] = aten.zeros.default(size=[2, 3], dtype=f64)\n"
      "  %o: f32[2,3] = aten.ones.default(size=[2, 3])\n"
      "  %sm: f32[4,8] = aten._softmax.default(%x, dim=-1, half_to_float=false)\n"
      "  %gs: f32[4,8] = aten._softmax_backward_data.default(%g, %sm, dim=-1, input_dtype=f32)\n"
      "  return (%t, %z, %o, %gs, %s2)\n"
      "}\n");
}

// A row outside the op table with a defaulted int before a tensor: printing needs only the row.
std::vector<TensorMeta> first_arg_meta(const ops::OpArgs&) {
  return {};
}
std::vector<Tensor> no_kernel(const ops::OpArgs&) {
  return {};
}

TEST(GraphTextPrint, DefaultBeforeATensorArgumentStillPrints) {
  // The parser gives positional arguments the unnamed slots in order, so leaving out k=1 would
  // make %b land in k. Defaults after the last tensor argument (j) are left out.
  ops::OpDef row{.name = "aten.mix.default",
                 .schema = "mix(Tensor a, int k=1, Tensor[] bs, int j=2) -> Tensor",
                 .meta = first_arg_meta,
                 .kernel = no_kernel};
  ops::OpDef::Derived derived{.schema = ops::parse_schema(row.schema)};
  row.derived = &derived;
  Graph g("m");
  ValueId a = g.add_input("a", f32({2}));
  ValueId b = g.add_input("b", f32({2}));
  g.add_node(row, {a, int64_t{1}, ValueList{a, b}, int64_t{2}}, {f32({2})});
  g.add_node(row, {a, int64_t{3}, ValueList{}, int64_t{4}}, {f32({2})});
  EXPECT_EQ(print_graph(g),
            "graph m(%a: f32[2], %b: f32[2]) {\n"
            "  %mix: f32[2] = aten.mix.default(%a, [%a, %b], k=1)\n"
            "  %mix_1: f32[2] = aten.mix.default(%a, [], k=3, j=4)\n"
            "  return ()\n"
            "}\n");
}

TEST(GraphTextPrint, EmptyGraph) {
  Graph g("nothing");
  EXPECT_EQ(print_graph(g), "graph nothing() {\n  return ()\n}\n");
  expect_round_trip("graph nothing() {\n  return ()\n}\n");
}

TEST(GraphTextParse, ForwardExampleRoundTrips) {
  Graph g = parse_graph(kForward);
  ASSERT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(g.name(), "forward");
  EXPECT_EQ(g.nodes()[0].op, &op("aten.mm.default"));
  EXPECT_EQ(g.value(g.outputs()[1]).name, "t");
  EXPECT_EQ(print_graph(g), kForward);
  EXPECT_EQ(print_graph(g), print_graph(forward_example()));
}

TEST(GraphTextParse, FreeWhitespaceCommentsAndNamedArguments) {
  const char* text =
      "# a graph written by hand\n"
      "graph   forward ( %x : f32[ 64 , 128 ] ,\n"
      "  %w:f32[128,256] )\n"
      "{\n"
      "\n"
      "  %mm: f32[64,256] = aten.mm.default(mat2=%w, self=%x)   # named, any order\n"
      "  # a comment line between statements\n"
      "  %t: f32[64,256] =\n"
      "      aten.tanh.default( %mm )\n"
      "  %s: f32[] = aten.sum.default(%t, dtype=none)\n"
      "  return (%s,\n"
      "          %t)\n"
      "}  # trailing comment\n";
  EXPECT_EQ(print_graph(parse_graph(text)), kForward);
}

TEST(GraphTextParse, PositionalNonTensorArgumentsAndDefaults) {
  Graph g = parse_graph(
      "graph p(%x: f32[4,8], %y: f32[4,8]) {\n"
      "  %a: f32[4,1] = aten.sum.dim_IntList(%x, [1], true)\n"
      "  %b: f32[4] = aten.sum.dim_IntList(%x, 1)\n"
      "  %c: f32[4,8] = aten.add.Tensor(%x, alpha=3, %y)\n"
      "  %d: f32[4,8] = aten.mul.Scalar(%x, 2)\n"
      "  return (%a, %b, %c, %d)\n"
      "}\n");
  const auto& n = g.nodes();
  ASSERT_EQ(n.size(), 4u);
  // Every schema argument is present, defaults filled as ops::normalize fills them.
  ASSERT_EQ(n[0].args.size(), 4u);
  EXPECT_EQ(std::get<IntList>(n[0].args[1]), IntList{1});
  EXPECT_EQ(std::get<bool>(n[0].args[2]), true);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(n[0].args[3]));
  EXPECT_EQ(std::get<IntList>(n[1].args[1]), IntList{1});  // a bare int for int[1]
  EXPECT_EQ(std::get<bool>(n[1].args[2]), false);
  EXPECT_EQ(std::get<ValueId>(n[2].args[1]), g.inputs()[1]);
  EXPECT_EQ(std::get<Scalar>(n[2].args[2]), Scalar(int64_t{3}));
  EXPECT_EQ(std::get<Scalar>(n[3].args[1]), Scalar(int64_t{2}));
  EXPECT_EQ(print_graph(g),
            "graph p(%x: f32[4,8], %y: f32[4,8]) {\n"
            "  %a: f32[4,1] = aten.sum.dim_IntList(%x, dim=[1], keepdim=true)\n"
            "  %b: f32[4] = aten.sum.dim_IntList(%x, dim=[1])\n"
            "  %c: f32[4,8] = aten.add.Tensor(%x, %y, alpha=3)\n"
            "  %d: f32[4,8] = aten.mul.Scalar(%x, other=2)\n"
            "  return (%a, %b, %c, %d)\n"
            "}\n");
}

TEST(GraphTextParse, MetadataComesFromTheAnnotations) {
  // A shape the meta function would never compute: the parser records it as written.
  Graph g = parse_graph(
      "graph m(%x: f32[2,3]) {\n"
      "  %y: f64[7]{3}@2 = aten.tanh.default(%x)\n"
      "  return (%y)\n"
      "}\n");
  EXPECT_EQ(g.value(g.outputs()[0]).meta, (TensorMeta{DType::f64, {7}, {3}, 2}));
}

TEST(GraphTextParse, KeepsNamesIncludingGeneratedLookingOnes) {
  const std::string text =
      "graph n(%mm_1: f32[2]) {\n"
      "  %mm: f32[2] = aten.tanh.default(%mm_1)\n"
      "  %zz.9: f32[2] = aten.tanh.default(%mm)\n"
      "  return (%zz.9)\n"
      "}\n";
  Graph g = parse_graph(text);
  EXPECT_EQ(print_graph(g), text);
  // Names made later do not collide with parsed ones.
  EXPECT_NE(g.fresh_name("mm"), "mm_1");
}

TEST(GraphTextParse, ZeroDimAndEmptyLists) {
  expect_round_trip(
      "graph z(%x: f32[]) {\n"
      "  %a: f32[] = aten.amax.default(%x)\n"
      "  %b: f32[] = aten.amax.default(%x, keepdim=true)\n"
      "  %c: f32[] = aten.sum.dim_IntList(%x, dim=[])\n"
      "  return (%a, %b, %c)\n"
      "}\n");
}

// ---- property: random graphs over real rows survive print -> parse -> print ----

class RandomGraph {
 public:
  explicit RandomGraph(uint32_t seed) : rng_(seed) {}

  Graph build() {
    Graph g("random_" + std::to_string(pick(1000)));
    for (int i = 0, n = 1 + pick(4); i < n; ++i)
      values_.push_back(g.add_input(name(), meta(), pick(2) ? descriptor() : Descriptor{}));
    const char* rows[] = {"aten.add.Tensor",      "aten.mul.Scalar",
                          "aten.sum.dim_IntList", "aten.gelu.default",
                          "aten.slice.Tensor",    "aten.nll_loss_forward.default",
                          "aten.zeros.default",   "aten._softmax_backward_data.default",
                          "aten.amax.default",    "aten.as_strided.default"};
    for (int k = 0, n = pick(12); k < n; ++k) {
      const ops::OpDef& row = ops::lookup(rows[pick(std::size(rows))]);
      std::vector<NodeArg> args;
      for (const ops::ArgSchema& a : row.parsed_schema().args) args.push_back(arg(a));
      std::vector<TensorMeta> metas;
      std::vector<std::string> names;
      for (size_t r = 0; r < row.parsed_schema().returns.size(); ++r) {
        metas.push_back(meta());
        names.push_back(name());
      }
      for (ValueId v : g.add_node(row, std::move(args), metas, names)) values_.push_back(v);
    }
    for (int i = 0, n = pick(4); i < n; ++i)
      g.add_output(value(), pick(2) ? descriptor() : Descriptor{});
    return g;
  }

 private:
  int pick(size_t n) { return static_cast<int>(rng_() % n); }
  ValueId value() { return values_[pick(values_.size())]; }

  std::string name() {
    const char* pool[] = {"x", "mm", "mm_1", "fc1.weight", "a b", "q\"uote", "t\\n", "7", "_"};
    return pool[pick(std::size(pool))];
  }
  Descriptor descriptor() {
    const char* pool[] = {"param(fc1.weight)",
                          "input(0)",
                          "tangent(output(3))",
                          "param(\"a # b\")",
                          "saved(2)",
                          "grad(buffer(bn.running_mean))",
                          "synthetic_base(input(0), input(1))"};
    return parse_descriptor(pool[pick(std::size(pool))]);
  }
  TensorMeta meta() {
    TensorMeta m;
    m.dtype = static_cast<DType>(pick(6));
    for (int d = 0, n = pick(4); d < n; ++d) m.sizes.push_back(pick(5));
    m.strides = contiguous_strides(m.sizes);
    if (pick(3) == 0)
      for (int64_t& s : m.strides) s = pick(20);
    if (pick(3) == 0) m.storage_offset = pick(100);
    return m;
  }
  double real() {
    const double pool[] = {0.0,
                           -0.0,
                           1.0,
                           0.1,
                           1e-05,
                           -2.5,
                           1e300,
                           3.0e-310,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()};
    if (pick(2)) return pool[pick(std::size(pool))];
    return std::uniform_real_distribution<double>(-1e6, 1e6)(rng_);
  }
  int64_t integer() {
    const int64_t pool[] = {
        0, 1, -1, 7, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
    return pool[pick(std::size(pool))];
  }
  std::string text() {
    std::string s;
    for (int i = 0, n = pick(6); i < n; ++i) s += static_cast<char>(1 + pick(126));
    return s;
  }
  NodeArg arg(const ops::ArgSchema& a) {
    if ((a.optional || a.type == ops::ArgType::generator) && pick(3) == 0) return std::monostate{};
    switch (a.type) {
      case ops::ArgType::tensor:
        return value();
      case ops::ArgType::tensor_list: {
        ValueList l;
        for (int i = 0, n = pick(3); i < n; ++i) l.push_back(value());
        return l;
      }
      case ops::ArgType::scalar:
        switch (pick(3)) {
          case 0:
            return Scalar(integer());
          case 1:
            return Scalar(real());
          default:
            return Scalar(pick(2) == 1);
        }
      case ops::ArgType::int_:
        return integer();
      case ops::ArgType::int_list: {
        IntList l;
        for (int i = 0, n = pick(4); i < n; ++i) l.push_back(integer());
        return l;
      }
      case ops::ArgType::float_:
        return real();
      case ops::ArgType::bool_:
        return pick(2) == 1;
      case ops::ArgType::dtype:
        return static_cast<DType>(pick(6));
      case ops::ArgType::string:
        return text();
      case ops::ArgType::generator:
        return std::monostate{};
    }
    return std::monostate{};
  }

  std::mt19937 rng_;
  std::vector<ValueId> values_;
};

TEST(GraphTextRoundTrip, RandomGraphs) {
  for (uint32_t seed = 0; seed < 300; ++seed) {
    Graph g = RandomGraph(seed).build();
    std::string text = print_graph(g);
    Graph back;
    ASSERT_NO_THROW(back = parse_graph(text)) << "seed " << seed << "\n" << text;
    ASSERT_EQ(print_graph(back), text) << "seed " << seed;
    // Not only the text: every argument, name, type and descriptor reads back as built.
    ASSERT_EQ(back.nodes().size(), g.nodes().size());
    for (size_t k = 0; k < g.nodes().size(); ++k) {
      const Node& a = g.nodes()[k];
      const Node& b = back.nodes()[k];
      EXPECT_EQ(a.op, b.op);
      ASSERT_EQ(a.args.size(), b.args.size());
      for (size_t i = 0; i < a.args.size(); ++i) {
        if (auto* v = std::get_if<ValueId>(&a.args[i])) {
          EXPECT_EQ(g.value(*v).name, back.value(std::get<ValueId>(b.args[i])).name);
        } else if (!std::holds_alternative<ValueList>(a.args[i])) {
          EXPECT_EQ(a.args[i], b.args[i]) << "seed " << seed << " node " << k << " arg " << i;
        }
      }
      for (size_t r = 0; r < a.outputs.size(); ++r) {
        EXPECT_EQ(g.value(a.outputs[r]).name, back.value(b.outputs[r]).name);
        EXPECT_EQ(g.value(a.outputs[r]).meta, back.value(b.outputs[r]).meta);
      }
    }
    EXPECT_EQ(g.input_descs(), back.input_descs());
    EXPECT_EQ(g.output_descs(), back.output_descs());
  }
}

// ---- errors: each names the place and the mistake ----

TEST(GraphTextErrors, UnknownOp) {
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[2] = aten.tanhh.default(%x)\n"
                        "  return (%y)\n}\n"),
            "line 2, column 16: unknown op 'aten.tanhh.default'");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[2] = aten.tanh(%x)\n  return (%y)\n}\n"),
            "line 2, column 16: unknown op 'aten.tanh' (did you mean aten.tanh.default?)");
}

TEST(GraphTextErrors, UnknownValue) {
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[2] = aten.tanh.default(%z)\n"
                        "  return (%y)\n}\n"),
            "line 2, column 34: unknown value %z (not defined before this use)");
  // A node may not read its own result.
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[2] = aten.tanh.default(%y)\n"
                        "  return (%y)\n}\n"),
            "line 2, column 34: unknown value %y (not defined before this use)");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  return (%x, %q)\n}\n"),
            "line 2, column 15: unknown value %q (not defined before this use)");
}

TEST(GraphTextErrors, Redefinition) {
  EXPECT_EQ(parse_error("graph g(%x: f32[2], %x: f32[2]) {\n  return ()\n}\n"),
            "line 1, column 21: redefinition of %x (first defined at line 1, column 9)");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %x: f32[2] = aten.tanh.default(%x)\n"
                        "  return (%x)\n}\n"),
            "line 2, column 3: redefinition of %x (first defined at line 1, column 9)");
}

TEST(GraphTextErrors, BadTypeAnnotation) {
  EXPECT_EQ(parse_error("graph g(%x: f33[2]) {\n  return ()\n}\n"),
            "line 1, column 13: bad type annotation: unknown dtype 'f33' (expected f32, f64, "
            "i64, i32, u8, b8, f16 or bf16)");
  EXPECT_EQ(parse_error("graph g(%x: f32[2,3]{1}) {\n  return ()\n}\n"),
            "line 1, column 21: bad type annotation: 2 sizes but 1 strides");
  EXPECT_EQ(parse_error("graph g(%x: f32[2,a]) {\n  return ()\n}\n"),
            "line 1, column 19: bad type annotation: expected an integer in the sizes, found 'a'");
  EXPECT_EQ(parse_error("graph g(%x) {\n  return ()\n}\n"),
            "line 1, column 11: expected ':' and a type annotation after %x, found ')'");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y = aten.tanh.default(%x)\n  return (%y)\n}\n"),
            "line 2, column 6: expected ':' and a type annotation after %y, found '='");
}

TEST(GraphTextErrors, ArityMismatch) {
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[2] = aten.tanh.default(%x, %x)\n"
                        "  return (%y)\n}\n"),
            "line 2, column 38: arity mismatch: aten.tanh.default takes 1 argument(s) (self), 2 "
            "given");
  EXPECT_EQ(parse_error("graph g(%x: f32[2,2]) {\n  %y: f32[2,2] = aten.mm.default(%x)\n"
                        "  return (%y)\n}\n"),
            "line 2, column 18: arity mismatch: aten.mm.default is missing argument 'mat2' "
            "(Tensor)");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[2], %z: f32[2] = aten.tanh.default(%x)\n"
                        "  return (%y)\n}\n"),
            "line 2, column 3: arity mismatch: aten.tanh.default returns 1 value(s), the "
            "statement binds 2");
}

TEST(GraphTextErrors, UnknownKeywordArgument) {
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[] = aten.sum.dim_IntList(%x, dims=[0])\n"
                        "  return (%y)\n}\n"),
            "line 2, column 40: unknown keyword argument 'dims' for aten.sum.dim_IntList (its "
            "arguments: self, dim, keepdim, dtype)");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n"
                        "  %y: f32[] = aten.sum.dim_IntList(%x, dim=[0], dim=[0])\n"
                        "  return (%y)\n}\n"),
            "line 2, column 49: argument 'dim' given twice");
}

TEST(GraphTextErrors, WrongKindOfArgument) {
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[] = aten.sum.dim_IntList(%x, dim=%x)\n"
                        "  return (%y)\n}\n"),
            "line 2, column 44: argument 'dim' of aten.sum.dim_IntList expects int[]?, got a "
            "tensor value (%x)");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[2] = aten.tanh.default(none)\n"
                        "  return (%y)\n}\n"),
            "line 2, column 34: argument 'self' of aten.tanh.default expects Tensor, got none");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[2] = aten.mul.Scalar(%x, other=two)\n"
                        "  return (%y)\n}\n"),
            "line 2, column 42: unknown constant 'two' (constants are numbers, true, false, none, "
            "inf, nan, dtypes, strings and lists; values start with %)");
}

TEST(GraphTextErrors, MissingClosingBrace) {
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  return (%x)\n"),
            "line 3, column 1: missing '}' at the end of graph 'g'");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[2] = aten.tanh.default(%x)\n"),
            "line 3, column 1: missing '}' at the end of graph 'g'");
}

TEST(GraphTextErrors, StructureMistakes) {
  EXPECT_EQ(parse_error("graf g() {\n  return ()\n}\n"),
            "line 1, column 1: expected 'graph' at the start of the text");
  EXPECT_EQ(parse_error("graph g() {\n}\n"), "line 2, column 1: graph 'g' has no return statement");
  EXPECT_EQ(parse_error("graph g() {\n  return ()\n}\ngraph h() {\n  return ()\n}\n"),
            "line 4, column 1: unexpected text after the closing '}' (one graph per text)");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  %y: f32[2] = aten.mul.Scalar(%x, other=\"a)\n"
                        "  return (%y)\n}\n"),
            "line 2, column 42: unterminated string");
}

}  // namespace
}  // namespace aotgrad::graph
