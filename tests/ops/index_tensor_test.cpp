// PyTorch's advanced indexing (issue 18): index.Tensor and index_put with `Tensor?[]` indices —
// values against PyTorch 1.13 (pasted from torch), None entries, masks, negative and broadcast
// indices, adjacent and separated index dims, errors, finite-difference gradients, compiled ==
// eager under every partitioner, and the `Tensor?[]` graph text.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::gradcheck;
using testing::longs;
using testing::test_input;
using V = std::vector<double>;

Tensor x234() {
  return to(arange(24.0).view({2, 3, 4}), DType::f64);
}

V values(const Tensor& t) {
  return to(t, DType::f64).contiguous().to_vector<double>();
}

void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(IndexTensor, ValuesMatchPyTorch) {
  // x[[1, 0, 1]]
  Tensor a = index(x234(), {longs({1, 0, 1}, {3})});
  EXPECT_EQ(a.sizes(), (IntList{3, 3, 4}));
  EXPECT_EQ(values(a).front(), 12.0);
  EXPECT_EQ(values(a)[12], 0.0);
  // x[:, [[2], [0]], [1, 3]]: adjacent index dims broadcast to [2, 2] and stay in place.
  Tensor b = index(x234(), {Tensor(), longs({2, 0}, {2, 1}), longs({1, 3}, {2})});
  EXPECT_EQ(b.sizes(), (IntList{2, 2, 2}));
  EXPECT_EQ(values(b), (V{9, 11, 1, 3, 21, 23, 13, 15}));
  // x[[1, 0], :, [-1, 0]]: separated by a None, B comes first; negative indices wrap.
  Tensor c = index(x234(), {longs({1, 0}, {2}), Tensor(), longs({-1, 0}, {2})});
  EXPECT_EQ(c.sizes(), (IntList{2, 3}));
  EXPECT_EQ(values(c), (V{15, 19, 23, 0, 4, 8}));
  // x[x.sum(2) > 20] (a 2-D mask) and x[:, [True, False, True]].
  Tensor m = index(x234(), {gt(x234().sum(std::vector<int64_t>{2}), 20.0)});
  EXPECT_EQ(m.sizes(), (IntList{5, 4}));
  EXPECT_EQ(values(m).front(), 4.0);
  Tensor n = index(x234(), {Tensor(), testing::bools({true, false, true}, {3})});
  EXPECT_EQ(n.sizes(), (IntList{2, 2, 4}));
  EXPECT_EQ(values(n), (V{0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23}));
  // A transposed self reads through its strides.
  EXPECT_EQ(values(index(x234().transpose(0, 2), {longs({3}, {1})})),
            values(index(x234(), {Tensor(), Tensor(), longs({3}, {1})}).transpose(0, 2)));
}

TEST(IndexPut, ValuesMatchPyTorch) {
  Tensor y = zeros({3, 4}, DType::f64);
  EXPECT_EQ(values(index_put(y, {longs({0, 2, 0}, {3})}, to(arange(1.0, 5.0), DType::f64),
                             /*accumulate=*/true)),
            (V{2, 4, 6, 8, 0, 0, 0, 0, 1, 2, 3, 4}));
  EXPECT_EQ(values(index_put(y, {Tensor(), longs({1, -1}, {2})}, full({}, 5.0, DType::f64))),
            (V{0, 5, 0, 5, 0, 5, 0, 5, 0, 5, 0, 5}));
  Tensor z =
      index_put(zeros({2, 3, 4}, DType::f64), {longs({1, 0}, {2}), Tensor(), longs({-1, 0}, {2})},
                to(arange(3.0).view({1, 3}), DType::f64), true);
  EXPECT_EQ(values(z), (V{0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2}));
  EXPECT_EQ(values(y), V(12, 0.0));  // functional: self untouched
  Tensor w = zeros({3, 4}, DType::f64);
  index_put_(w, {longs({1}, {1})}, full({}, 2.0, DType::f64));
  EXPECT_EQ(values(w), (V{0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0}));
}

TEST(IndexTensor, Errors) {
  expect_error([] { index(x234(), {longs({2}, {1})}); },
               "index 2 is out of bounds for dimension 0 with size 2");
  expect_error([] { index(x234(), {Tensor(), longs({-4}, {1})}); }, "valid indices are -3 to 2");
  expect_error(
      [] {
        index(x234(), {longs({0}, {1}), longs({0}, {1}), longs({0}, {1}), longs({0}, {1})});
      },
      "too many indices");
  expect_error([] { index(x234(), {longs({0, 1}, {2}), longs({0, 1, 2}, {3})}); }, "broadcast");
  expect_error([] { index(x234(), {full({2}, 1.0)}); }, "must be i64 or b8");
  expect_error(
      [] {
        index(x234(), {testing::bools({true, false, true}, {3})});
      },
      "does not match the shape");
  expect_error(
      [] {
        index_put(zeros({3, 4}), {longs({0, 1}, {2})}, ones({3}));
      },
      "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape "
      "[2, 4]");
  expect_error([] { index_put(zeros({3, 4}), {longs({0}, {1})}, ones({4}, DType::f64)); }, "dtype");
}

TEST(IndexTensor, Gradcheck) {
  Tensor x = test_input({3, 4}, -1, 1, 41).requires_grad_();
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        // Duplicate and negative indices: their gradients add up.
        return index(in[0], {longs({0, 2, -3}, {3}), Tensor()});
      },
      {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return index(in[0], {longs({1, 2}, {2, 1}), longs({3, 0, 0}, {3})});
      },
      {x}));
  Tensor v = test_input({2, 1}, -1, 1, 42).requires_grad_();
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return index_put(in[0], {longs({2, 0}, {2}), longs({1, 3}, {2})}, in[1].view({2}));
      },
      {x, v}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return index_put(in[0], {Tensor(), longs({1, 1}, {2})}, in[1], /*accumulate=*/true);
      },
      {x, test_input({3, 1}, -1, 1, 43).requires_grad_()}));
}

TEST(IndexTensor, CompiledMatchesEagerUnderEveryPartitioner) {
  testing::run_scenario(
      [] {
        return testing::TensorList{testing::leaf({3, 4}, 1), testing::leaf({2}, 2)};
      },
      [](const testing::TensorList& a) {
        Tensor i = index(a[0], {Tensor(), longs({3, -1, 0}, {3})});
        Tensor j = index(a[0].exp(), {longs({2, 0}, {2}), longs({1, 1}, {2})});
        Tensor p = index_put(a[0], {longs({1, 1}, {2})}, a[1].view({2, 1}), true);
        Tensor q = index_put(a[0].sin(), {Tensor(), longs({0, 2}, {2})}, a[1]);
        return testing::TensorList{i * 2.0, j * a[1], p.exp(), q};
      });
}

TEST(IndexTensor, MaskIsRefusedWhileTracing) {
  auto f = aot_function([](const Tensor& x) { return index(x, {gt(x, 0.0)}); });
  try {
    f(test_input({3, 4}, -1, 1, 44));
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("depends on the mask's values"), std::string::npos)
        << e.what();
  }
}

TEST(IndexTensor, OptionalTensorListGraphTextRoundTrips) {
  const std::string text =
      "graph g(%x: f32[2,3,4], %i: i64[2]) {\n"
      "  %index: f32[2,3] = aten.index.Tensor(%x, [%i, none, %i])\n"
      "  %index_put: f32[2,3,4] = aten.index_put.default(%x, [none, %i], %index, true)\n"
      "  return (%index, %index_put)\n"
      "}\n";
  const std::string printed = graph::print_graph(graph::parse_graph(text));
  EXPECT_NE(printed.find("aten.index.Tensor(%x, [%i, none, %i])"), std::string::npos) << printed;
  EXPECT_NE(printed.find("aten.index_put.default(%x, [none, %i], %index"), std::string::npos)
      << printed;
  EXPECT_EQ(graph::print_graph(graph::parse_graph(printed)), printed);
  try {
    graph::parse_graph(
        "graph g(%x: f32[2], %i: i64[1]) {\n"
        "  %c: f32[2] = aten.cat.default([%x, none])\n"
        "  return (%c)\n"
        "}\n");
    ADD_FAILURE() << "cat accepted a none tensor";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("expects a list of tensor values, got none"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace aotgrad
