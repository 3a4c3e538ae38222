// parse_graph and verify_graph on hostile text: every input gives a graph or one bounded,
// printable error line at "line L, column C" (GraphProgram: FILE:L:C), never a crash, an
// exception of another type, or unbounded work.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "aotgrad/graph_program.h"
#include "graph/graph.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"

namespace aotgrad::graph {
namespace {

// The message parse_graph throws ("" when it accepts the text).
std::string parse_error(std::string_view text) {
  try {
    parse_graph(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

bool printable_line(const std::string& m) {
  for (char c : m)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) return false;
  return true;
}

std::string with_arg(const std::string& arg) {
  return "graph g(%x: f32[2]) {\n  %y: f32[2] = aten.add.Tensor(%x, " + arg +
         ")\n  return (%y)\n}\n";
}

TEST(ParserHostile, DeeplyNestedListsAreAnErrorNotAStackOverflow) {
  std::string deep = with_arg(std::string(50000, '[') + std::string(50000, ']'));
  EXPECT_EQ(parse_error(deep), "line 2, column 100: lists nested deeper than 64 levels");
  // 64 levels still parse (and are then the wrong kind for the argument).
  std::string ok = with_arg(std::string(64, '[') + std::string(64, ']'));
  EXPECT_EQ(parse_error(ok).find("nested"), std::string::npos) << parse_error(ok);
}

TEST(ParserHostile, NumbersOutOfRangeAreErrors) {
  EXPECT_EQ(parse_error(with_arg("99999999999999999999")),
            "line 2, column 36: integer 99999999999999999999 out of range (integers are 64-bit "
            "signed)");
  EXPECT_EQ(parse_error(with_arg("1e999")),
            "line 2, column 36: float 1e999 out of range (floats are 64-bit doubles)");
  EXPECT_EQ(parse_error("graph g(%x: f32[-1]) {\n  return (%x)\n}\n"),
            "line 1, column 13: bad type annotation: negative size -1");
  EXPECT_EQ(parse_error("graph g(%x: f32[2]{-1}) {\n  return (%x)\n}\n"),
            "line 1, column 19: bad type annotation: negative stride -1");
}

TEST(ParserHostile, ShapesBeyond64BitsAreRefusedBeforeAnythingIsSized) {
  // numel, the contiguous strides or the byte size of each would overflow int64.
  for (const char* type : {"f32[4611686018427387904,4]", "f64[0,4611686018427387904,4]",
                           "f32[3037000500,3037000500]", "f32[2,2]{4611686018427387904,1}",
                           "f32[2]@9223372036854775807", "b8[9223372036854775807,2]"}) {
    std::string text = std::string("graph g(%x: ") + type + ") {\n  return (%x)\n}\n";
    EXPECT_NE(parse_error(text).find("is too large to address in 64 bits"), std::string::npos)
        << type << ": " << parse_error(text);
  }
  std::string dims65 = "graph g(%x: f32[1";
  for (int i = 0; i < 64; ++i) dims65 += ",1";
  EXPECT_EQ(parse_error(dims65 + "]) {\n  return (%x)\n}\n"),
            "line 1, column 16: bad type annotation: more than 64 sizes");
}

TEST(ParserHostile, RawBytesAreEscapedAndTokensTruncated) {
  EXPECT_EQ(parse_error("graph g(%x: f32[2]) {\n  \x07\n}\n"),
            "line 2, column 3: expected a statement (%result: type = op(...), or return (...)), "
            "found the byte 0x07");
  std::string m = parse_error("graph g(%x: f32[2]) {\n  %y: f32[2] = aten.\x1b[31m" +
                              std::string(100000, 'a') + "(%x)\n}");
  EXPECT_LE(m.size(), 320u) << m;
  EXPECT_TRUE(printable_line(m)) << m;
  EXPECT_EQ(m.rfind("line 2, column 16: unknown op 'aten.'", 0), 0u) << m;
  std::string name = parse_error("graph g(%\"a\\x01b\": f32[2]) {\n  return (%\"a\\x02b\")\n}\n");
  EXPECT_EQ(name, "line 2, column 11: unknown value %a\\x02b (not defined before this use)");
}

TEST(ParserHostile, GraphProgramReportsFileLineColumn) {
  try {
    GraphProgram::parse(std::string(1000, '[') + "\x01", "fuzzed.graph");
    FAIL() << "accepted";
  } catch (const GraphParseError& e) {
    EXPECT_EQ(std::string(e.what()), "fuzzed.graph:1:1: expected 'graph' at the start of the text");
  }
}

TEST(ParserHostile, VerifyErrorsPointAtTheNodesStatement) {
  std::string text =
      "graph g(%x: f32[2]) {\n  %a: f32[2] = aten.tanh.default(%x)\n\n  # comment\n"
      "     %b: f32[3] = aten.tanh.default(%a)\n  return (%b)\n}\n";
  std::vector<SourceLocation> where;
  parse_graph(text, &where);
  ASSERT_EQ(where.size(), 2u);
  EXPECT_EQ(where[1].line, 5u);
  EXPECT_EQ(where[1].column, 6u);
  try {
    GraphProgram::parse(text, "g.graph");
    FAIL() << "verified";
  } catch (const GraphParseError& e) {
    EXPECT_EQ(e.line(), 5);
    EXPECT_EQ(e.column(), 6);
    EXPECT_EQ(
        std::string(e.what()).rfind("g.graph:5:6: verify_graph: node %b = aten.tanh.default: ", 0),
        0u)
        << e.what();
  }
}

TEST(ParserHostile, VerifierTurnsEveryMetaFailureIntoANamedError) {
  // Parses (arity and kinds are right) but the metadata is nonsense for the op: each must be a
  // std::invalid_argument naming the node, whatever the meta function throws.
  for (const char* stmt :
       {"%y: f32[2] = aten.select.int(%x, 5, 0)", "%y: f32[2] = aten.select.int(%x, 0, 99)",
        "%y: f32[2] = aten.permute.default(%x, [0, 0, 7])",
        "%y: f32[2] = aten.view.default(%x, [-1, -1])",
        "%y: f32[2] = aten.expand.default(%x, [4611686018427387904, 4611686018427387904])",
        "%y: f32[2] = aten.cat.default([], 0)", "%y: f32[2] = aten.unsqueeze.default(%x, 99)"}) {
    std::string text = std::string("graph g(%x: f32[2]) {\n  ") + stmt + "\n  return (%y)\n}\n";
    Graph g = parse_graph(text);
    try {
      verify_graph(g);
      ADD_FAILURE() << "verified: " << stmt;
    } catch (const std::invalid_argument& e) {
      std::string m = e.what();
      EXPECT_EQ(m.rfind("verify_graph: node %y = ", 0), 0u) << m;
      EXPECT_LE(m.size(), 300u) << m;
      EXPECT_TRUE(printable_line(m)) << m;
    }
  }
}

TEST(ParserHostile, HugePoolingKernelIsAnErrorNotAnOverflow) {
  // Found by graph_parser_fuzz: the pooling meta's output size wrapped (signed overflow, UB).
  Graph g = parse_graph(
      "graph g(%x: f64[1,2,4,6]) {\n"
      "  %y: f32[12,3], %i: i64[12,3] = aten.max_pool2d_with_indices.default(%x, "
      "9223372036854775807)\n"
      "  return (%y)\n}\n");
  try {
    verify_graph(g);
    FAIL() << "verified";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "verify_graph: node %y = aten.max_pool2d_with_indices.default: ", 0),
              0u)
        << e.what();
  }
}

TEST(ParserHostile, VerifierRefusesGeometryItCannotFake) {
  // Built in memory, past the parser's checks: strides whose span overflows int64.
  Graph g("g");
  ops::TensorMeta m = ops::TensorMeta::contiguous({2, 2}, DType::f32);
  m.strides = {int64_t{1} << 62, int64_t{1} << 62};
  ValueId x = g.add_input("x", m);
  ValueId y = g.add_node(ops::lookup("aten.tanh.default"), {x},
                         {ops::TensorMeta::contiguous({2, 2}, DType::f32)}, {"y"})[0];
  g.add_output(y);
  try {
    verify_graph(g);
    FAIL() << "verified";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("%x has the type f32[2,2]{4611686018427387904,"
                                         "4611686018427387904}, whose elements are not "
                                         "addressable"),
              std::string::npos)
        << e.what();
  }
}

TEST(ParserHostile, QuotedNamesWithControlBytesRoundTrip) {
  std::string text = "graph \"g\\x00\"(%\"x\\x07\": f32[2]) {\n  return (%\"x\\x07\")\n}\n";
  Graph g = parse_graph(text);
  EXPECT_EQ(g.value(g.inputs()[0]).name, std::string("x\x07"));
  EXPECT_EQ(print_graph(parse_graph(print_graph(g))), print_graph(g));
}

}  // namespace
}  // namespace aotgrad::graph
