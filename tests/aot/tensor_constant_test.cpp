// Tensors a compiled function builds from data (issue 10, item 12; reference §6 #112, PyTorch's
// lift_fresh_copy): recorded as aotgrad.tensor_constant nodes with their values written in the
// graph, rebuilt fresh on every call, kept by dead-code elimination and both partitioners where
// the forward or the backward reads them, printed and parsed back exactly. A tensor the function
// captures instead is refused: a constant would go stale.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "aotgrad/aotgrad.h"
#include "aotgrad/graph_program.h"
#include "aotgrad/indexing.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::DType;
using ag::Tensor;
using ag::testing::contains;
using ag::testing::expect_unsupported;
using ag::testing::leaf;
using ag::testing::run_scenario;
using ag::testing::TensorList;

namespace {

Tensor f64s(std::vector<double> v) {
  return ag::from_vector(v, {static_cast<int64_t>(v.size())});
}

}  // namespace

TEST(TensorConstant, LiteralUsedInTheForwardAndTheBackward) {
  // d(a * k)/da = k: the backward reads the constant, under every partitioner.
  run_scenario([] { return TensorList{leaf({3}, 1)}; },
               [](const TensorList& a) {
                 return (a[0] * f64s({1.5, -2.0, 0.25})).sin();
               });
  for (const char* partitioner : {"default", "min_cut"}) {
    ag::AotConfig cfg;
    cfg.partitioner = partitioner;
    auto f = ag::aot_function(
        [](const Tensor& a) {
          return (a * f64s({1.5, -2.0, 0.25})).sum();
        },
        cfg);
    Tensor x = leaf({3}, 2);
    f(x).backward();
    EXPECT_TRUE(ag::testing::allclose(x.grad(), f64s({1.5, -2.0, 0.25}), 0, 0)) << partitioner;
    ag::CompiledGraphs g = f.graphs();
    EXPECT_TRUE(contains(g.forward,
                         "= aotgrad.tensor_constant.default(values=\"1.5, -2, 0.25\", size=[3], "
                         "dtype=f64)"))
        << g.forward;
  }
}

TEST(TensorConstant, LiteralWrittenInPlaceAndReturned) {
  // Each call builds the literal afresh: writing it, inside or after the call, never leaks into
  // the next call (the harness calls twice and writes every output afterwards).
  run_scenario([] { return TensorList{leaf({2}, 3)}; },
               [](const TensorList& a) {
                 Tensor k = f64s({1.0, 2.0});
                 k.mul_(2.0);
                 return TensorList{a[0] * k, k, f64s({7.0, 8.0})};
               });
}

TEST(TensorConstant, OtherDtypesAndScalars) {
  run_scenario(
      [] {
        return TensorList{leaf({4, 2}, 4)};
      },
      [](const TensorList& a) {
        Tensor rows =
            ag::index_select(a[0], 0, ag::from_vector(std::vector<int64_t>{3, 0, 3}, {3}));
        Tensor mask = ag::from_vector(std::vector<bool>{true, false}, {2});
        Tensor scale = ag::scalar_tensor(0.5, DType::f64);
        return ag::masked_fill(rows, mask, 0.0) * scale;
      });
}

TEST(TensorConstant, LiteralThatRequiresGrad) {
  // A leaf of its own: outputs computed from it require grad; its gradient goes nowhere.
  run_scenario([] { return TensorList{leaf({2}, 5)}; },
               [](const TensorList& a) {
                 Tensor k = f64s({1.0, 2.0});
                 k.requires_grad_();
                 return a[0] * k;
               });
}

TEST(TensorConstant, CapturedTensorIsRefused) {
  Tensor captured = leaf({3}, 6, false);
  expect_unsupported([] { return TensorList{leaf({3}, 7)}; },
                     [captured](const TensorList& a) { return a[0] * captured; },
                     "did not receive as an input (a captured tensor");
}

TEST(TensorConstant, TooLargeALiteralIsRefused) {
  expect_unsupported([] { return TensorList{leaf({3}, 8)}; },
                     [](const TensorList& a) {
                       return a[0].sum() +
                              ag::from_vector(std::vector<double>(70000, 1.0), {70000}).sum();
                     },
                     "up to 65536 elements");
}

// Literals with special values, in every dtype.
Tensor special_literal(int which) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (which) {
    case 0:
      return ag::from_vector(std::vector<double>{0.1, -0.0, 1e-300, 1e300, inf, -inf, nan}, {7});
    case 1:
      return ag::from_vector(std::vector<float>{0.1f, 3.4e38f, -1.5e-45f}, {3});
    case 2:
      return ag::from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 0, 42}, {3});
    case 3:
      return ag::from_vector(std::vector<bool>{true, false}, {1, 2});
    case 4:
      return ag::from_vector(std::vector<float>{0.1f, 65504.f}, {2}).to(DType::f16);
    case 5:
      return ag::from_vector(std::vector<float>{0.1f, -3.0f}, {2}).to(DType::bf16);
    default:
      return ag::from_vector(std::vector<double>{}, {0, 3});
  }
}

TEST(TensorConstant, TextRoundTripsExactly) {
  // Traced, printed, parsed, verified and run again: the same bits.
  for (int which = 0; which < 7; ++which) {
    Tensor literal = special_literal(which);
    auto f = ag::aot_function([which](const Tensor&) { return special_literal(which); });
    Tensor x = leaf({1}, 9, false);
    Tensor compiled = f(x);
    std::string text = f.graphs().inference;
    ag::graph::Graph parsed = ag::graph::parse_graph(text);
    EXPECT_EQ(ag::graph::print_graph(parsed), text);
    Tensor rebuilt = ag::GraphProgram::parse(text).run({x}).outputs.at(0);
    for (const Tensor& t : {compiled, rebuilt}) {
      ASSERT_EQ(t.dtype(), literal.dtype()) << text;
      ASSERT_EQ(t.sizes(), literal.sizes()) << text;
      if (literal.numel() == 0) continue;  // no data (and memcmp wants non-null pointers)
      EXPECT_EQ(std::memcmp(t.impl()->data_bytes(), literal.impl()->data_bytes(),
                            literal.numel() * ag::itemsize(literal.dtype())),
                0)
          << text;
    }
  }
}

TEST(TensorConstant, BadValuesAreReportedByTheVerifier) {
  const char* texts[] = {
      "graph g() {\n  %c: f32[2] = aotgrad.tensor_constant.default(values=\"1, x\", size=[2], "
      "dtype=f32)\n  return (%c)\n}\n",
      "graph g() {\n  %c: f32[3] = aotgrad.tensor_constant.default(values=\"1, 2\", size=[3], "
      "dtype=f32)\n  return (%c)\n}\n",
      "graph g() {\n  %c: i64[1] = aotgrad.tensor_constant.default(values=\"1.5\", size=[1], "
      "dtype=i64)\n  return (%c)\n}\n",
      "graph g() {\n  %c: f32[100000] = aotgrad.tensor_constant.default(values=\"\", "
      "size=[100000], dtype=f32)\n  return (%c)\n}\n",
  };
  const char* needles[] = {"element 1 of 'values' is not a f32 number (it reads 'x')",
                           "'values' holds 2 elements, but its size asks for 3",
                           "element 0 of 'values' is not a i64 number", "exceeds 65536 elements"};
  for (size_t i = 0; i < std::size(texts); ++i) {
    try {
      ag::GraphProgram::parse(texts[i]);
      ADD_FAILURE() << "accepted: " << texts[i];
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), needles[i])) << e.what();
    }
  }
}

TEST(TensorConstant, DeadCodeEliminationDropsAnUnusedConstant) {
  auto f = ag::aot_function([](const Tensor& a) {
    Tensor unused = f64s({1.0, 2.0});
    Tensor used = f64s({3.0});
    (void)(unused * 2.0);
    return a * used;
  });
  ag::NoGradGuard no_grad;
  f(leaf({1}, 9));
  std::string g = f.graphs().inference;
  EXPECT_TRUE(contains(g, "values=\"3\"")) << g;
  EXPECT_FALSE(contains(g, "values=\"1, 2\"")) << g;
}
