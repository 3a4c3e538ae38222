// Schema parsing of what ATen writes (bool lists, `Tensor(a -> *)`, scalar-written list
// defaults) and the graph parser reading what tools/export_torch_graph.py writes.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "graph/parser.h"
#include "graph/printer.h"
#include "ops/op.h"
#include "ops/schema.h"

namespace aotgrad::ops {
namespace {

TEST(Schema, BoolListIsAnIntListOfBools) {
  Schema s = parse_schema(
      "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, "
      "SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, "
      "SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)");
  const ArgSchema& m = s.args.at(10);
  EXPECT_EQ(m.name, "output_mask");
  EXPECT_EQ(m.type, ArgType::int_list);
  EXPECT_TRUE(m.bool_elements);
  EXPECT_EQ(m.list_size, 3);
  EXPECT_FALSE(s.args.at(4).bool_elements);
  EXPECT_EQ(s.args.at(4).list_size, 0);
}

TEST(Schema, AliasToWildcardKeepsTheSet) {
  Schema s = parse_schema("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
  EXPECT_EQ(s.args.at(0).alias_set, "a");
  EXPECT_FALSE(s.args.at(0).is_write);
  ASSERT_EQ(s.returns.size(), 1u);
  EXPECT_EQ(s.returns[0].type, ArgType::tensor_list);
  EXPECT_EQ(s.returns[0].alias_set, "a");
  Schema w = parse_schema("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  EXPECT_TRUE(w.args.at(0).is_write);
}

TEST(Schema, ErrorsNameTheColumn) {
  try {
    parse_schema("f(float[2] x) -> Tensor");
    FAIL() << "float[] is not supported and must be rejected";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("column 11"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float[]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_schema("f(Tensor() x) -> Tensor"), std::invalid_argument);
  EXPECT_THROW(parse_schema("f(Tensor(a -> x) x) -> Tensor"), std::invalid_argument);
}

DefaultValue default_of(const std::string& schema, size_t i) {
  return parse_default_value(parse_schema(schema).args.at(i));
}

TEST(Schema, ListDefaultWrittenAsAScalarRepeats) {
  const std::string pool =
      "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], "
      "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)";
  using L = std::vector<int64_t>;
  EXPECT_EQ(std::get<L>(default_of(pool, 2)), L{});
  EXPECT_EQ(std::get<L>(default_of(pool, 3)), (L{0, 0}));
  EXPECT_EQ(std::get<L>(default_of(pool, 4)), (L{1, 1}));
  EXPECT_EQ(std::get<bool>(default_of(pool, 5)), false);
  EXPECT_EQ(std::get<L>(default_of("f(int[] d=[1, -2]) -> Tensor", 0)), (L{1, -2}));
  EXPECT_EQ(std::get<L>(default_of("f(int[] d=3) -> Tensor", 0)), L{3});
  EXPECT_EQ(std::get<L>(default_of("f(bool[3] m=[True, False, True]) -> Tensor", 0)),
            (L{1, 0, 1}));
}

TEST(Schema, ScalarAndOtherDefaults) {
  const std::string s =
      "f(Tensor self, Scalar a=1, Scalar b=0.5, Scalar c=1e-05, float eps=1e-05, int i=-100, "
      "str mode='none', int[1]? dim=None, Tensor[] ts=[]) -> Tensor";
  EXPECT_TRUE(std::get<Scalar>(default_of(s, 1)).is_integral());
  EXPECT_EQ(std::get<Scalar>(default_of(s, 1)).to_int(), 1);
  EXPECT_DOUBLE_EQ(std::get<Scalar>(default_of(s, 2)).to_double(), 0.5);
  EXPECT_DOUBLE_EQ(std::get<Scalar>(default_of(s, 3)).to_double(), 1e-05);
  EXPECT_DOUBLE_EQ(std::get<double>(default_of(s, 4)), 1e-05);
  EXPECT_EQ(std::get<int64_t>(default_of(s, 5)), -100);
  EXPECT_EQ(std::get<std::string>(default_of(s, 6)), "none");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(default_of(s, 7)));
  EXPECT_TRUE(std::get<std::vector<int64_t>>(default_of(s, 8)).empty());
  EXPECT_THROW(default_of(s, 0), std::invalid_argument);  // no default
  EXPECT_THROW(default_of("f(int x=abc) -> Tensor", 0), std::invalid_argument);
  EXPECT_THROW(default_of("f(bool x=yes) -> Tensor", 0), std::invalid_argument);
}

TEST(Schema, BackwardRowsTakeAtenBoolMasks) {
  for (const char* name :
       {"aten.convolution_backward.default", "aten.native_batch_norm_backward.default",
        "aten.native_layer_norm_backward.default"}) {
    const Schema& s = lookup(name).parsed_schema();
    const ArgSchema& m = s.args.back();
    EXPECT_EQ(m.name, "output_mask") << name;
    EXPECT_TRUE(m.bool_elements) << name;
    EXPECT_EQ(m.list_size, 3) << name;
  }
}

// What the exporter writes: bool lists, none, negative ints, exponent floats, inf, dtypes, and
// list arguments left to their scalar-written defaults.
TEST(Schema, GraphParserReadsExportedArguments) {
  const char* text = R"(graph g(%x: f32[2,3,4], %w: f32[4], %b: f32[4], %gy: f32[2,3,4], %p: f32[1,2,4,6]) {
  %y: f32[2,3,4], %mean: f32[2,3,1], %rstd: f32[2,3,1] = aten.native_layer_norm.default(%x, %w, %b, normalized_shape=[4], eps=1e-05)
  %gx: f32[2,3,4], %gw: f32[4], %gb: f32[0] = aten.native_layer_norm_backward.default(%gy, %x, %mean, %rstd, %w, %b, normalized_shape=[4], output_mask=[true, true, false])
  %m: f32[2,3,4] = aten.clamp.default(%gx, min=-inf, max=1.5e+300)
  %c: f64[2,3,4] = aten._to_copy.default(%m, dtype=f64)
  %s: f32[2,3] = aten.sum.dim_IntList(%gx, dim=[-1])
  %pool: f32[1,2,2,3], %idx: i64[1,2,2,3] = aten.max_pool2d_with_indices.default(%p, kernel_size=[2, 2])
  return (%c, %s, %gw, %gb, %pool)
})";
  graph::Graph g = graph::parse_graph(text);
  const graph::Node& bw = g.nodes().at(1);
  EXPECT_EQ(std::get<IntList>(bw.args.back()), (IntList{1, 1, 0}));
  const graph::Node& clamp = g.nodes().at(2);
  EXPECT_EQ(std::get<Scalar>(clamp.args[1]).to_double(), -INFINITY);
  EXPECT_DOUBLE_EQ(std::get<Scalar>(clamp.args[2]).to_double(), 1.5e300);
  EXPECT_EQ(std::get<DType>(g.nodes().at(3).args[1]), DType::f64);
  EXPECT_EQ(std::get<IntList>(g.nodes().at(4).args[1]), IntList{-1});
  const graph::Node& pool = g.nodes().at(5);
  EXPECT_EQ(std::get<IntList>(pool.args[2]), IntList{});
  EXPECT_EQ(std::get<IntList>(pool.args[3]), (IntList{0, 0}));
  EXPECT_EQ(std::get<IntList>(pool.args[4]), (IntList{1, 1}));
  // What the printer writes for a bool list reads back to the same graph.
  std::string printed = graph::print_graph(g);
  EXPECT_EQ(graph::print_graph(graph::parse_graph(printed)), printed);
}

TEST(Schema, GraphParserRejectsBadBoolListsWithLineAndColumn) {
  const char* text = R"(graph g(%x: f32[2,4], %gy: f32[2,4], %mean: f32[2,1], %rstd: f32[2,1]) {
  %gx: f32[2,4], %gw: f32[0], %gb: f32[0] = aten.native_layer_norm_backward.default(%gy, %x, [4], %mean, %rstd, none, none, [true, 2, false])
  return (%gx)
})";
  try {
    graph::parse_graph(text);
    FAIL() << "2 in a bool list must be rejected";
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("line 2, column 132: ", 0), 0u) << m;
    EXPECT_NE(m.find("expects a list of bools"), std::string::npos) << m;
  }
  const char* ints_for_bools = R"(graph g(%x: f32[2,4]) {
  %s: f32[2] = aten.sum.dim_IntList(%x, dim=[true])
  return (%s)
})";
  EXPECT_THROW(graph::parse_graph(ints_for_bools), std::invalid_argument);
}

}  // namespace
}  // namespace aotgrad::ops
