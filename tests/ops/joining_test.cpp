// Joining and splitting: cat / stack values (hand-computed and recorded from PyTorch 1.13), dtype
// promotion, legacy empty inputs, non-contiguous inputs; split / split_with_sizes / chunk / unbind
// view geometry and storage sharing; errors; finite-difference gradients; compiled == eager,
// including an in-place write through a piece inside a compiled function; a PyTorch-style graph
// holding a multi-output split node, parsed and run.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "aot/joint.h"
#include "aotgrad/aotgrad.h"
#include "backends/interpreter.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::contains;
using testing::error_of;
using testing::expect_compiled_matches_eager;
using testing::gradcheck;
using testing::inputs;
using testing::iota;
using testing::test_input;
using testing::values;

// ---- cat ----

TEST(JoiningCat, ValuesAlongEachDim) {
  Tensor a = iota({2, 3}), b = iota({2, 1}, 10), c = iota({1, 3}, 20);
  Tensor r = cat({a, b}, 1);
  EXPECT_EQ(r.sizes(), (IntList{2, 4}));
  EXPECT_EQ(values(r), (std::vector<float>{0, 1, 2, 10, 3, 4, 5, 11}));
  EXPECT_EQ(values(cat({a, b}, -1)), values(r));
  Tensor r0 = cat({a, c, a}, 0);
  EXPECT_EQ(r0.sizes(), (IntList{5, 3}));
  EXPECT_EQ(values(r0), (std::vector<float>{0, 1, 2, 3, 4, 5, 20, 21, 22, 0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(r0.is_contiguous());
  EXPECT_FALSE(r0.is_view());
}

TEST(JoiningCat, NonContiguousAndExpandedInputs) {
  Tensor t = iota({3, 2}).t();                     // [2, 3], strides [1, 2]
  Tensor e = iota({1, 1}, 7).expand({2, 2});       // stride 0
  Tensor s = iota({2, 6}, 100).slice(1, 1, 6, 2);  // [2, 3], offset 1, stride 2
  EXPECT_FALSE(t.is_contiguous());
  Tensor r = cat({t, e, s}, 1);
  EXPECT_EQ(values(r), (std::vector<float>{0, 2, 4, 7, 7, 101, 103, 105,  //
                                           1, 3, 5, 7, 7, 107, 109, 111}));
}

TEST(JoiningCat, PromotesLikeTorch) {
  // torch.cat([f32, f64]) -> f64; [i64, b8] -> i64; [b8, f32] -> f32.
  Tensor f = iota({2}), d = from_vector(std::vector<double>{0.5}, {1});
  Tensor i = from_vector(std::vector<int64_t>{3, 4}, {2});
  Tensor b = from_vector(std::vector<bool>{true}, {1});
  Tensor fd = cat({f, d});
  EXPECT_EQ(fd.dtype(), DType::f64);
  EXPECT_EQ(fd.to_vector<double>(), (std::vector<double>{0, 1, 0.5}));
  Tensor ib = cat({i, b});
  EXPECT_EQ(ib.dtype(), DType::i64);
  EXPECT_EQ(ib.to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 1}));
  EXPECT_EQ(cat({b, f}).dtype(), DType::f32);
}

TEST(JoiningCat, EmptyAndLegacyEmptyInputs) {
  Tensor a = iota({2, 2});
  // A [0] tensor is skipped whatever the rank of the others (and still takes part in promotion).
  Tensor r = cat({a, zeros({0}, DType::f64)}, 1);
  EXPECT_EQ(r.sizes(), (IntList{2, 2}));
  EXPECT_EQ(r.dtype(), DType::f64);
  EXPECT_EQ(values(r), values(a));
  EXPECT_EQ(cat({zeros({0}), zeros({0})}).sizes(), (IntList{0}));
  Tensor z = zeros({2, 0});
  EXPECT_EQ(values(cat({z, a, z}, 1)), values(a));
  EXPECT_EQ(cat({zeros({0, 3}), zeros({0, 3})}, 0).sizes(), (IntList{0, 3}));
  EXPECT_EQ(cat({iota({1, 1})}, 0).sizes(), (IntList{1, 1}));
}

TEST(JoiningCat, IntegerAndBoolValues) {
  Tensor i = from_vector(std::vector<int64_t>{1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(cat({i, i.t()}, 1).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 2, 1, 3, 3, 4, 2, 4}));
  Tensor b = from_vector(std::vector<bool>{true, false}, {2});
  EXPECT_EQ(cat({b, b}).to_vector<bool>(), (std::vector<bool>{true, false, true, false}));
}

TEST(JoiningCat, ErrorsNameTheProblem) {
  std::string e = error_of<std::invalid_argument>([] { cat({}, 0); });
  EXPECT_TRUE(contains(e, "aten.cat.default") && contains(e, "non-empty")) << e;
  e = error_of<std::invalid_argument>([] { cat({iota({2}), scalar_tensor(1.0, DType::f32)}); });
  EXPECT_TRUE(contains(e, "zero-dimensional tensor (at position 1)")) << e;
  e = error_of<std::invalid_argument>([] { cat({iota({2, 2}), iota({3, 2})}, 1); });
  EXPECT_TRUE(contains(e, "expected size 2 but got size 3") && contains(e, "tensor 1")) << e;
  e = error_of<std::invalid_argument>([] { cat({iota({2, 2}), iota({2, 2, 3})}, 1); });
  EXPECT_TRUE(contains(e, "same number of dimensions")) << e;
  e = error_of<std::invalid_argument>([] { cat({iota({2, 2})}, 2); });
  EXPECT_TRUE(contains(e, "aten.cat.default")) << e;
}

// ---- stack ----

TEST(JoiningStack, ValuesAndNewDimPosition) {
  Tensor a = iota({2, 3}), b = iota({2, 3}, 10);
  Tensor s0 = stack({a, b});
  EXPECT_EQ(s0.sizes(), (IntList{2, 2, 3}));
  EXPECT_EQ(values(s0), (std::vector<float>{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15}));
  Tensor s2 = stack({a, b}, -1);
  EXPECT_EQ(s2.sizes(), (IntList{2, 3, 2}));
  EXPECT_EQ(values(s2), (std::vector<float>{0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15}));
  Tensor s1 = stack({a.t(), b.t()}, 1);  // non-contiguous inputs
  EXPECT_EQ(s1.sizes(), (IntList{3, 2, 2}));
  EXPECT_EQ(values(s1), (std::vector<float>{0, 3, 10, 13, 1, 4, 11, 14, 2, 5, 12, 15}));
  // 0-dim inputs stack into a vector, as torch.stack([tensor(1.), tensor(2.)]).
  Tensor v = stack({scalar_tensor(1.0, DType::f32), scalar_tensor(2.0, DType::f64)});
  EXPECT_EQ(v.sizes(), (IntList{2}));
  EXPECT_EQ(v.dtype(), DType::f64);
  EXPECT_EQ(v.to_vector<double>(), (std::vector<double>{1, 2}));
}

TEST(JoiningStack, Errors) {
  std::string e = error_of<std::invalid_argument>([] { stack({iota({2, 3}), iota({3, 3})}); });
  EXPECT_TRUE(contains(e, "aten.stack.default") && contains(e, "[2, 3] at entry 0") &&
              contains(e, "[3, 3] at entry 1"))
      << e;
  e = error_of<std::invalid_argument>([] { stack({iota({2})}, 3); });
  EXPECT_TRUE(contains(e, "aten.stack.default")) << e;
}

// ---- split family: views ----

TEST(JoiningSplit, SplitPiecesAreViews) {
  Tensor x = iota({5, 2});
  std::vector<Tensor> p = split(x, 2);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].sizes(), (IntList{2, 2}));
  EXPECT_EQ(p[2].sizes(), (IntList{1, 2}));
  EXPECT_EQ(p[1].storage_offset(), 4);
  EXPECT_EQ(p[2].storage_offset(), 8);
  for (const Tensor& t : p) {
    EXPECT_TRUE(t.is_view());
    EXPECT_TRUE(t._base().is_same(x));
    EXPECT_EQ(t.storage(), x.storage());
  }
  EXPECT_EQ(values(p[2]), (std::vector<float>{8, 9}));
  // Along the last dim, with a negative dim: strided pieces.
  std::vector<Tensor> q = split(iota({2, 5}), 3, -1);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[1].sizes(), (IntList{2, 2}));
  EXPECT_EQ(q[1].strides(), (IntList{5, 1}));
  EXPECT_EQ(values(q[1]), (std::vector<float>{3, 4, 8, 9}));
  // Writes through a piece reach the base.
  p[1].fill_(-1.0);
  EXPECT_EQ(values(x), (std::vector<float>{0, 1, 2, 3, -1, -1, -1, -1, 8, 9}));
}

TEST(JoiningSplit, SplitWithSizesChunkUnbind) {
  Tensor x = iota({2, 6});
  std::vector<Tensor> s = split_with_sizes(x, {1, 0, 5}, 1);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].sizes(), (IntList{2, 0}));
  EXPECT_EQ(values(s[2]), (std::vector<float>{1, 2, 3, 4, 5, 7, 8, 9, 10, 11}));
  // torch.chunk(zeros(5, 3), 4) gives 3 pieces of 2, 2, 1 rows.
  std::vector<Tensor> c = chunk(zeros({5, 3}), 4);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[2].sizes(), (IntList{1, 3}));
  // An empty dim still gives `chunks` empty pieces.
  std::vector<Tensor> ce = chunk(zeros({0, 3}), 3);
  ASSERT_EQ(ce.size(), 3u);
  EXPECT_EQ(ce[0].sizes(), (IntList{0, 3}));
  ASSERT_EQ(split(zeros({0, 3}), 2).size(), 1u);
  ASSERT_EQ(split(zeros({0}), 0).size(), 1u);
  std::vector<Tensor> u = unbind(x, -1);
  ASSERT_EQ(u.size(), 6u);
  EXPECT_EQ(u[4].sizes(), (IntList{2}));
  EXPECT_EQ(u[4].strides(), (IntList{6}));
  EXPECT_EQ(u[4].storage_offset(), 4);
  EXPECT_EQ(values(u[4]), (std::vector<float>{4, 10}));
  EXPECT_TRUE(u[4]._base().is_same(x));
  EXPECT_TRUE(unbind(zeros({0, 2})).empty());
  // Pieces of a non-contiguous tensor keep its strides.
  std::vector<Tensor> t = chunk(x.t(), 2, 0);
  EXPECT_EQ(t[1].strides(), (IntList{1, 6}));
  EXPECT_EQ(values(t[1]), (std::vector<float>{3, 9, 4, 10, 5, 11}));
}

TEST(JoiningSplit, Errors) {
  std::string e = error_of<std::invalid_argument>([] { split(iota({3}), 0); });
  EXPECT_TRUE(contains(e, "aten.split.Tensor") && contains(e, "split_size can only be 0")) << e;
  e = error_of<std::invalid_argument>([] { split(iota({3}), -1); });
  EXPECT_TRUE(contains(e, "non-negative")) << e;
  e = error_of<std::invalid_argument>([] { split_with_sizes(iota({3}), {1, 1}); });
  EXPECT_TRUE(contains(e, "aten.split_with_sizes.default") && contains(e, "sum to 2") &&
              contains(e, "exactly to 3"))
      << e;
  e = error_of<std::invalid_argument>([] { chunk(iota({3}), 0); });
  EXPECT_TRUE(contains(e, "aten.chunk.default") && contains(e, "greater than 0")) << e;
  e = error_of<std::invalid_argument>([] { unbind(scalar_tensor(1.0, DType::f32)); });
  EXPECT_TRUE(contains(e, "aten.unbind.int") && contains(e, "0-dim")) << e;
  e = error_of<std::invalid_argument>([] { split(iota({2, 2}), 1, 2); });
  EXPECT_TRUE(contains(e, "aten.split.Tensor")) << e;
}

// ---- gradients ----

TEST(JoiningGrad, CatAndStack) {
  Tensor a = test_input({2, 3}, -1, 1, 1), b = test_input({2, 2}, -1, 1, 2);
  Tensor c = test_input({3, 2}, -1, 1, 3);  // used transposed: non-contiguous
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& x) {
        return cat({x[0], x[1], x[2].t()}, -1);
      },
      {a, b, c}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& x) { return cat({x[0], x[0]}, 0); }, {a}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& x) {
        return cat({x[0], zeros({0}, DType::f64), x[1]}, 1);
      },
      {a, b}));
  Tensor d = test_input({2, 3}, -1, 1, 4);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& x) {
        return stack({x[0], x[1]}, 1);
      },
      {a, d}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& x) {
        return stack({x[0].t(), x[1].t()}, -1);
      },
      {a, d}));
}

TEST(JoiningGrad, PromotedInputsGetGradientsOfTheirOwnDtype) {
  Tensor f = test_input({2}, -1, 1, 1, false).to(DType::f32).requires_grad_();
  Tensor d = test_input({3}, -1, 1, 2);
  Tensor y = cat({f, d});
  EXPECT_EQ(y.dtype(), DType::f64);
  y.sum().backward();
  EXPECT_EQ(f.grad().dtype(), DType::f32);
  EXPECT_EQ(d.grad().dtype(), DType::f64);
  EXPECT_EQ(f.grad().to_vector<double>(), (std::vector<double>{1, 1}));
}

TEST(JoiningGrad, SplitFamilyWithUnusedPieces) {
  Tensor x = test_input({5, 3}, -1, 1, 5);
  // Only some pieces reach the output: the others' gradients are zeros.
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return split(in[0], 2)[1] * 2.0; }, {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> p = split(in[0], 2, 0);
        return p[0].sum() + p[2].exp().sum();
      },
      {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> p = split_with_sizes(in[0], {2, 0, 1}, -1);
        return p[2] * p[0].slice(1, 0, 1);
      },
      {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> p = chunk(in[0].t(), 2, 1);  // non-contiguous input
        return p[1].tanh();
      },
      {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> r = unbind(in[0], 1);
        return r[0] * r[2];
      },
      {x}));
}

// ---- compiled == eager ----

TEST(JoiningCompiled, CatStackSplitChunkUnbind) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    std::vector<Tensor> p = split(x, 2, 1);
    std::vector<Tensor> rows = unbind(y, 0);
    Tensor joined = cat({p[1], p[0] * rows[0], stack({rows[1], rows[1]}, 1)}, 1);
    return chunk(joined, 3, 1)[1].tanh();
  };
  auto g = expect_compiled_matches_eager(
      fn, inputs(test_input({2, 4}, -1, 1, 1), test_input({3, 2}, -1, 1, 2)));
  // Traced, each call is one multi-output node; the backward joins the pieces' gradients with
  // cat (split, chunk) and stack (unbind), as PyTorch's VJPs do.
  EXPECT_TRUE(contains(g.forward, "aten.split.Tensor(%primals_1, split_size=2, dim=1)"))
      << g.forward;
  EXPECT_TRUE(contains(g.forward, "aten.unbind.int(%primals_2)")) << g.forward;
  EXPECT_TRUE(contains(g.forward, "aten.chunk.default(")) << g.forward;
  EXPECT_TRUE(contains(g.backward, "aten.stack.default")) << g.backward;
  EXPECT_TRUE(contains(g.backward, "aten.cat.default")) << g.backward;
}

TEST(JoiningCompiled, InPlaceWriteThroughAPieceReachesTheInput) {
  // The second piece is written in place; the write must show in x and in the result, compiled
  // exactly as eagerly.
  auto fn = [](const Tensor& x) {
    Tensor y = x.clone();
    {
      // Eager forbids writing a piece of split / unbind with grad mode on (it would need a
      // history for every piece); under no_grad the write is allowed and hidden from autograd.
      NoGradGuard no_grad;
      std::vector<Tensor> p = split(y, 1, 0);
      p[1].mul_(3.0);
      std::vector<Tensor> cols = unbind(y, 1);
      cols[0].add_(1.0);
    }
    return y * 2.0;
  };
  expect_compiled_matches_eager(fn, inputs(test_input({3, 2}, -1, 1, 3)));
  auto mutate_input = [](Tensor x) {
    chunk(x, 2, 0)[1].zero_();
    return x + 1.0;
  };
  NoGradGuard no_grad;
  expect_compiled_matches_eager(mutate_input, inputs(test_input({3, 2}, -1, 1, 4, false)));
}

// A graph as PyTorch's make_fx writes it: one multi-output split node, cat in the backward.
TEST(JoiningGraphText, MultiOutputSplitNodeParsesAndRuns) {
  const std::string text = R"(graph forward(%x: f32[5,2]) {
  %a: f32[2,2], %b: f32[2,2], %c: f32[1,2] = aten.split.Tensor(%x, 2)
  %cat: f32[5,2] = aten.cat.default([%c, %a, %b])
  return (%cat, %b)
})";
  graph::Graph g = graph::parse_graph(text);
  EXPECT_NO_THROW(graph::verify_graph(g));
  auto run = backends::compile_interpreter(g);
  std::vector<Tensor> out = run({iota({5, 2})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{8, 9, 0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{4, 5, 6, 7}));
}

// The joint graph of such a graph runs split's own VJP under the tracer: the pieces' gradients
// (zeros for the unused one) joined by one cat. It matches eager autograd through the split row.
TEST(JoiningGraphText, JointOfMultiOutputSplitUsesCat) {
  const std::string text = R"(graph forward(%x: f64[5,2]) {
  %a: f64[2,2], %b: f64[2,2], %c: f64[1,2] = aten.split.Tensor(%x, 2)
  %mul: f64[2,2] = aten.mul.Tensor(%a, %b)
  return (%mul)
})";
  graph::Graph fw = graph::parse_graph(text);
  aot::JointGraph j = aot::build_joint(fw, std::vector<bool>(fw.values().size(), true));
  const std::string joint_text = graph::print_graph(j.graph);
  EXPECT_TRUE(contains(joint_text, "aten.cat.default")) << joint_text;
  EXPECT_NO_THROW(graph::verify_graph(j.graph));
  Tensor x = test_input({5, 2}, -1, 1, 7), t = test_input({2, 2}, -1, 1, 8, false);
  std::vector<Tensor> out = backends::compile_interpreter(j.graph)({x.detach(), t});
  ASSERT_EQ(out.size(), 2u);
  std::vector<Tensor> p = split(x, 2);
  (p[0] * p[1]).backward(t);
  EXPECT_TRUE(allclose(out[1], x.grad(), 1e-12, 1e-12));
}

}  // namespace
}  // namespace aotgrad
