// Indexing ops: values against hand-computed ones and ones recorded from PyTorch 1.13 (negative
// dims, non-contiguous inputs and indices, empty and size-1 dims, duplicate indices), index range
// errors, finite-difference gradients of every differentiable row (indices are i64 tensors that
// take no gradient), and compiled == eager for functions built from them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
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
using testing::kF32Tolerances;
using testing::test_input;
using testing::values;

Tensor idx(const std::vector<int64_t>& v, const IntList& sizes) {
  return from_vector(v, sizes);
}
Tensor idx(const std::vector<int64_t>& v) {
  return from_vector(v, {static_cast<int64_t>(v.size())});
}

// ---- index_select ----

TEST(IndexingIndexSelect, ValuesAlongDims) {
  Tensor x = iota({3, 4});
  EXPECT_EQ(values(index_select(x, 0, idx({2, 0, 2}))),
            (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  Tensor r = index_select(x, -1, idx({3, 1}));
  EXPECT_EQ(r.sizes(), (IntList{3, 2}));
  EXPECT_EQ(values(r), (std::vector<float>{3, 1, 7, 5, 11, 9}));
  // Non-contiguous self (torch: index_select(x.t(), 1, [1, 1, 0])).
  EXPECT_EQ(values(index_select(x.t(), 1, idx({1, 1, 0}))),
            (std::vector<float>{4, 4, 0, 5, 5, 1, 6, 6, 2, 7, 7, 3}));
  // Strided index (every other element of [2, 9, 0, 9]) and a 0-dim index.
  Tensor strided = idx({2, 9, 0, 9}).slice(0, 0, 4, 2);
  EXPECT_EQ(values(index_select(x, 0, strided)), (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3}));
  Tensor zero_dim = idx({2}).view({});
  EXPECT_EQ(index_select(x, 1, zero_dim).sizes(), (IntList{3, 1}));
  // Empty index, empty dims, 0-dim self.
  EXPECT_EQ(index_select(x, 0, idx({})).sizes(), (IntList{0, 4}));
  EXPECT_EQ(index_select(zeros({0, 2}), 1, idx({1, 0})).sizes(), (IntList{0, 2}));
  Tensor s = index_select(scalar_tensor(5.0, DType::f32), 0, idx({0}));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<float>(), 5.0f);
}

TEST(IndexingIndexSelect, IntegerAndBoolAndF16) {
  Tensor i = from_vector(std::vector<int64_t>{10, 20, 30}, {3});
  EXPECT_EQ(index_select(i, 0, idx({2, 2, 0})).to_vector<int64_t>(),
            (std::vector<int64_t>{30, 30, 10}));
  Tensor b = from_vector(std::vector<bool>{true, false}, {2});
  EXPECT_EQ(index_select(b, 0, idx({1, 0})).to_vector<bool>(), (std::vector<bool>{false, true}));
  Tensor h = iota({4}).to(DType::f16);
  Tensor hr = index_select(h, 0, idx({3, 1}));
  EXPECT_EQ(hr.dtype(), DType::f16);
  EXPECT_EQ(values(hr), (std::vector<float>{3, 1}));
}

TEST(IndexingIndexSelect, OutOfRangeIndicesNameOpIndexAndRange) {
  Tensor x = iota({3, 4});
  std::string e = error_of<std::invalid_argument>([&] { index_select(x, 1, idx({0, 4})); });
  EXPECT_TRUE(contains(e, "aten.index_select.default") && contains(e, "index 4") &&
              contains(e, "dimension 1") && contains(e, "0 to 3"))
      << e;
  e = error_of<std::invalid_argument>([&] { index_select(x, 0, idx({-1})); });
  EXPECT_TRUE(contains(e, "index -1") && contains(e, "0 to 2")) << e;
  e = error_of<std::invalid_argument>([&] { index_select(zeros({0, 2}), 0, idx({0})); });
  EXPECT_TRUE(contains(e, "no index is valid")) << e;
  // Strided index: the check walks its strides.
  e = error_of<std::invalid_argument>([&] {
    index_select(x, 0, idx({0, 1, 7, 1}).slice(0, 0, 4, 2));
  });
  EXPECT_TRUE(contains(e, "index 7")) << e;
  e = error_of<std::invalid_argument>([&] { index_select(x, 0, iota({2})); });
  EXPECT_TRUE(contains(e, "must be an i64 tensor")) << e;
  e = error_of<std::invalid_argument>([&] { index_select(x, 0, idx({0, 1}, {1, 2})); });
  EXPECT_TRUE(contains(e, "0-D or 1-D")) << e;
}

// ---- gather / scatter_add / index_add ----

TEST(IndexingGather, ValuesMatchTorch) {
  Tensor x = iota({3, 4});
  EXPECT_EQ(values(gather(x, 1, idx({3, 0, 1, 1, 2, 0}, {3, 2}))),
            (std::vector<float>{3, 0, 5, 5, 10, 8}));
  EXPECT_EQ(values(gather(x, 0, idx({2, 1, 0, 2}, {1, 4}))), (std::vector<float>{8, 5, 2, 11}));
  // Non-contiguous self and a negative dim: gather(x.t(), -2, [[2, 1, 0], [0, 0, 1]]).
  EXPECT_EQ(values(gather(x.t(), -2, idx({2, 1, 0, 0, 0, 1}, {2, 3}))),
            (std::vector<float>{2, 5, 8, 0, 4, 9}));
  // Non-contiguous index (transposed) gives the transposed selection.
  Tensor it = idx({0, 2, 1, 0}, {2, 2}).t();  // [[0, 1], [2, 0]]
  EXPECT_EQ(values(gather(x, 0, it)), (std::vector<float>{0, 5, 8, 1}));
  EXPECT_EQ(gather(x, 1, idx({}, {3, 0})).sizes(), (IntList{3, 0}));
  EXPECT_EQ(gather(scalar_tensor(5.0, DType::f32), 0, idx({0}).view({})).item<float>(), 5.0f);
}

TEST(IndexingGather, Errors) {
  Tensor x = iota({3, 2});
  std::string e = error_of<std::invalid_argument>([&] { gather(x, 0, idx({-1, 0}, {1, 2})); });
  EXPECT_TRUE(contains(e, "aten.gather.default") && contains(e, "index -1") &&
              contains(e, "0 to 2"))
      << e;
  e = error_of<std::invalid_argument>([&] { gather(x, 0, idx({0, 0, 0}, {1, 3})); });
  EXPECT_TRUE(contains(e, "larger than self") && contains(e, "dimension 1")) << e;
  e = error_of<std::invalid_argument>([&] { gather(x, 0, idx({0})); });
  EXPECT_TRUE(contains(e, "as many dims")) << e;
}

TEST(IndexingScatterAdd, ValuesWithDuplicatesMatchTorch) {
  Tensor src = iota({2, 3}, 1);
  EXPECT_EQ(values(scatter_add(zeros({3, 3}), 0, idx({0, 1, 2, 0, 0, 2}, {2, 3}), src)),
            (std::vector<float>{5, 5, 0, 0, 2, 0, 0, 0, 9}));
  EXPECT_EQ(values(scatter_add(ones({2, 4}), 1, idx({3, 3, 0, 1}, {2, 2}), src)),
            (std::vector<float>{1, 1, 1, 4, 5, 6, 1, 1}));
  // Index smaller than src in every dim; non-contiguous self.
  EXPECT_EQ(values(scatter_add(zeros({2, 3}).t(), 0, idx({0, 0}, {2, 1}), ones({4, 4}))),
            (std::vector<float>{2, 0, 0, 0, 0, 0}));
  Tensor i = from_vector(std::vector<int64_t>{1, 1}, {2});
  EXPECT_EQ(scatter_add(i, 0, idx({1, 1, 1}), from_vector(std::vector<int64_t>{5, 6, 7}, {3}))
                .to_vector<int64_t>(),
            (std::vector<int64_t>{1, 19}));
  std::string e =
      error_of<std::invalid_argument>([&] { scatter_add(zeros({2}), 0, idx({2}), ones({1})); });
  EXPECT_TRUE(contains(e, "aten.scatter_add.default") && contains(e, "index 2")) << e;
  e = error_of<std::invalid_argument>(
      [&] { scatter_add(zeros({2}), 0, idx({0}), ones({1}, DType::f64)); });
  EXPECT_TRUE(contains(e, "dtype")) << e;
}

TEST(IndexingIndexAdd, ValuesWithDuplicatesAndAlpha) {
  EXPECT_EQ(values(index_add(ones({3, 2}), 0, idx({2, 0, 2}), iota({3, 2}), 2)),
            (std::vector<float>{5, 7, 1, 1, 9, 13}));
  Tensor source = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(values(index_add(zeros({2, 3}), -1, idx({1, 1}), source)),
            (std::vector<float>{0, 3, 0, 0, 7, 0}));
  // Non-contiguous source.
  EXPECT_EQ(values(index_add(zeros({2, 3}), 1, idx({0, 2}), source.t())),
            (std::vector<float>{1, 0, 3, 2, 0, 4}));
  std::string e = error_of<std::invalid_argument>([&] {
    index_add(zeros({2, 3}), 1, idx({0, 3}), source);
  });
  EXPECT_TRUE(contains(e, "aten.index_add.default") && contains(e, "index 3")) << e;
  e = error_of<std::invalid_argument>([&] { index_add(zeros({2, 3}), 1, idx({0}), source); });
  EXPECT_TRUE(contains(e, "source has shape [2, 2], expected [2, 1]")) << e;
}

// ---- embedding ----

TEST(IndexingEmbedding, LookupAndBackwardMatchTorch) {
  Tensor w = iota({5, 2});
  Tensor e = embedding(w, idx({4, 0, 4, 1, 2, 3}, {2, 3}));
  EXPECT_EQ(e.sizes(), (IntList{2, 3, 2}));
  EXPECT_FALSE(e.is_view());
  EXPECT_EQ(values(e), (std::vector<float>{8, 9, 0, 1, 8, 9, 2, 3, 4, 5, 6, 7}));
  Tensor g = iota({2, 3, 2}, 1);
  Tensor ind = idx({4, 0, 4, 1, 4, 3}, {2, 3});
  EXPECT_EQ(values(embedding_dense_backward(g, ind, 6, -1, false)),
            (std::vector<float>{3, 4, 7, 8, 0, 0, 11, 12, 15, 18, 0, 0}));
  EXPECT_EQ(values(embedding_dense_backward(g, ind, 6, 4, false)),
            (std::vector<float>{3, 4, 7, 8, 0, 0, 11, 12, 0, 0, 0, 0}));
  EXPECT_EQ(values(embedding_dense_backward(g, ind, 6, -1, true)),
            (std::vector<float>{3, 4, 7, 8, 0, 0, 11, 12, 5, 6, 0, 0}));
  // Scalar indices, non-contiguous weight, empty indices.
  EXPECT_EQ(values(embedding(w.t().contiguous().t(), idx({3}).view({}))),
            (std::vector<float>{6, 7}));
  EXPECT_EQ(embedding(w, idx({}, {0, 3})).sizes(), (IntList{0, 3, 2}));
}

TEST(IndexingEmbedding, Errors) {
  Tensor w = iota({5, 2});
  std::string e = error_of<std::invalid_argument>([&] { embedding(w, idx({5})); });
  EXPECT_TRUE(contains(e, "aten.embedding.default") && contains(e, "index 5") &&
              contains(e, "of weight") && contains(e, "0 to 4"))
      << e;
  e = error_of<std::invalid_argument>([&] { embedding(iota({5}), idx({1})); });
  EXPECT_TRUE(contains(e, "must be 2-D")) << e;
  e = error_of<std::invalid_argument>([&] {
    embedding_dense_backward(iota({2, 3}), idx({0}), 4, -1, false);
  });
  EXPECT_TRUE(contains(e, "aten.embedding_dense_backward.default") && contains(e, "grad_output"))
      << e;
}

// ---- masked_fill ----

TEST(IndexingMaskedFill, ScalarAndTensorValues) {
  Tensor m = from_vector(std::vector<bool>{true, false, true, false}, {1, 4});
  EXPECT_EQ(values(masked_fill(iota({2, 4}), m, -1.5)),
            (std::vector<float>{-1.5, 1, -1.5, 3, -1.5, 5, -1.5, 7}));
  // self broadcasts to the mask's shape, as torch's out-of-place masked_fill.
  Tensor b = masked_fill(iota({2, 1}), m, 9);
  EXPECT_EQ(b.sizes(), (IntList{2, 4}));
  EXPECT_EQ(values(b), (std::vector<float>{9, 0, 9, 0, 9, 1, 9, 1}));
  // The value is converted to self's dtype: 2.5 into i64 is 2.
  Tensor i = from_vector(std::vector<int64_t>{0, 1, 2, 3}, {4});
  EXPECT_EQ(masked_fill(i, m.view({4}), 2.5).to_vector<int64_t>(),
            (std::vector<int64_t>{2, 1, 2, 3}));
  EXPECT_EQ(values(masked_fill(iota({4}), m.view({4}), scalar_tensor(int64_t{7}, DType::i64))),
            (std::vector<float>{7, 1, 7, 3}));
  // -inf, as causal attention uses it; non-contiguous self.
  Tensor f = masked_fill(iota({2, 2}).t(), from_vector(std::vector<bool>{false, true}, {2}),
                         -std::numeric_limits<double>::infinity());
  std::vector<float> fv = values(f);
  EXPECT_EQ(fv[0], 0.0f);
  EXPECT_TRUE(std::isinf(fv[1]) && fv[1] < 0);
  EXPECT_EQ(fv[2], 1.0f);
  Tensor h =
      masked_fill(iota({2}).to(DType::bf16), from_vector(std::vector<bool>{true, false}, {2}), 4);
  EXPECT_EQ(h.dtype(), DType::bf16);
  EXPECT_EQ(values(h), (std::vector<float>{4, 1}));
}

TEST(IndexingMaskedFill, Errors) {
  std::string e = error_of<std::invalid_argument>([] { masked_fill(iota({2}), idx({1, 0}), 1.0); });
  EXPECT_TRUE(contains(e, "aten.masked_fill.Scalar") && contains(e, "b8")) << e;
  e = error_of<std::invalid_argument>(
      [] { masked_fill(iota({2}), from_vector(std::vector<bool>{true}, {1}), iota({2})); });
  EXPECT_TRUE(contains(e, "aten.masked_fill.Tensor") && contains(e, "0-dim")) << e;
  e = error_of<std::invalid_argument>([] {
    masked_fill(iota({3}), from_vector(std::vector<bool>{true, true}, {2}), 1.0);
  });
  EXPECT_TRUE(contains(e, "do not broadcast")) << e;
}

// ---- tril / triu ----

TEST(IndexingTriangle, ValuesMatchTorch) {
  Tensor a = iota({3, 4}, 1);
  EXPECT_EQ(values(tril(a, -1)), (std::vector<float>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  EXPECT_EQ(values(triu(a, -1)), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12}));
  EXPECT_EQ(values(tril(a)), (std::vector<float>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}));
  EXPECT_EQ(values(triu(a)), (std::vector<float>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
  EXPECT_EQ(values(tril(a, 2)), (std::vector<float>{1, 2, 3, 0, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(values(triu(a, 2)), (std::vector<float>{0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0}));
  // Batched and non-contiguous (torch: arange(1, 13).view(2, 2, 3).transpose(1, 2)).
  Tensor b = iota({2, 2, 3}, 1).transpose(1, 2);
  EXPECT_EQ(values(tril(b)), (std::vector<float>{1, 0, 2, 5, 3, 6, 7, 0, 8, 11, 9, 12}));
  EXPECT_EQ(values(triu(b, 1)), (std::vector<float>{0, 4, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0}));
  // Extreme diagonals, bool and empty.
  EXPECT_EQ(values(tril(a, std::numeric_limits<int64_t>::max())), values(a));
  EXPECT_EQ(values(triu(a, std::numeric_limits<int64_t>::min())), values(a));
  EXPECT_EQ(values(triu(a, 100)), std::vector<float>(12, 0));
  Tensor t = tril(ones({2, 2}, DType::b8));
  EXPECT_EQ(t.to_vector<bool>(), (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(tril(zeros({0, 3})).sizes(), (IntList{0, 3}));
  std::string e = error_of<std::invalid_argument>([] { tril(iota({3})); });
  EXPECT_TRUE(contains(e, "aten.tril.default") && contains(e, "at least 2 dimensions")) << e;
}

// ---- gradients ----

TEST(IndexingGrad, IndexSelectAndIndexAdd) {
  Tensor x = test_input({4, 3}, -1, 1, 1);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return index_select(in[0], 0, idx({3, 0, 3}));
      },
      {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return index_select(in[0].t(), -1, idx({1, 1, 2}));
      },
      {x}));
  Tensor s = test_input({4, 2}, -1, 1, 2);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return index_add(in[0], 1, idx({2, 0}), in[1], 1.5);
      },
      {x, s}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return index_add(in[0], 0, idx({1, 1, 0}), in[1].t());
      },
      {x, test_input({3, 3}, -1, 1, 3)}));
}

TEST(IndexingGrad, GatherAndScatterAdd) {
  Tensor x = test_input({3, 4}, -1, 1, 4);
  Tensor i = idx({3, 0, 1, 1, 2, 0}, {3, 2});
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], 1, i); }, {x}));
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0].t(), 0, i.t()); }, {x}));
  Tensor src = test_input({2, 3}, -1, 1, 5);
  Tensor si = idx({0, 1, 2, 0, 0, 2}, {2, 3});
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, si, in[1]); },
                {test_input({3, 3}, -1, 1, 6), src}));
  // Index smaller than src: src elements outside it get zero gradient.
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return scatter_add(in[0], 1, idx({3, 3}, {1, 2}), in[1]);
      },
      {test_input({2, 4}, -1, 1, 7), src}));
}

TEST(IndexingGrad, EmbeddingAndItsBackward) {
  Tensor w = test_input({5, 3}, -1, 1, 8);
  Tensor ind = idx({4, 0, 4, 1, 4, 3}, {2, 3});
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], ind); }, {w}));
  // padding_idx and scale_grad_by_freq deliberately deviate from the true derivative (the padding
  // row gets none; repeated rows are averaged), so they are compared with PyTorch's gradients.
  Tensor grad_out = iota({2, 3, 2}, 1);
  Tensor w_pad = iota({5, 2}).requires_grad_();
  embedding(w_pad, ind, 4).backward(grad_out);
  EXPECT_EQ(values(w_pad.grad()), (std::vector<float>{3, 4, 7, 8, 0, 0, 11, 12, 0, 0}));
  Tensor w_freq = iota({5, 2}).requires_grad_();
  embedding(w_freq, ind, -1, true).backward(grad_out);
  EXPECT_EQ(values(w_freq.grad()), (std::vector<float>{3, 4, 7, 8, 0, 0, 11, 12, 5, 6}));
  Tensor g = test_input({2, 3, 3}, -1, 1, 10);
  for (int64_t pad : {int64_t{-1}, int64_t{4}})
    for (bool scale : {false, true})
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Tensor>& in) {
            return embedding_dense_backward(in[0], ind, 6, pad, scale);
          },
          {g}))
          << "padding_idx " << pad << " scale " << scale;
}

TEST(IndexingGrad, MaskedFillAndTriangles) {
  Tensor m = from_vector(std::vector<bool>{true, false, true, false, false, true}, {2, 3});
  Tensor x = test_input({2, 3}, -1, 1, 11);
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], m, 0.5); }, {x}));
  // self broadcast over the mask: its gradient is summed back.
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], m, 0.5); },
                        {test_input({1, 3}, -1, 1, 12)}));
  Tensor v = test_input({}, -1, 1, 13);
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) { return masked_fill(in[0].t(), m.t(), in[1]); }, {x, v}));
  Tensor a = test_input({2, 3, 4}, -1, 1, 14);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return tril(in[0], -1); }, {a}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return triu(in[0].transpose(1, 2), 1); }, {a}));
}

// ---- compiled == eager ----

TEST(IndexingCompiled, EmbeddingMaskedFillCat) {
  // A small causal-attention-like block: token and position embeddings, scores masked with a
  // lower-triangular mask, joined with the embeddings.
  auto fn = [](const Tensor& wte, const Tensor& wpe, const Tensor& tokens) {
    Tensor x = embedding(wte, tokens) + embedding(wpe, arange(4));
    Tensor scores = matmul(x, x.transpose(-2, -1));
    Tensor causal = eq(tril(ones({4, 4})), 0.0);
    Tensor att = softmax(masked_fill(scores, causal, -std::numeric_limits<double>::infinity()), -1);
    return cat({matmul(att, x), x}, -1);
  };
  Tensor wte = test_input({7, 3}, -1, 1, 1).to(DType::f32).detach().requires_grad_();
  Tensor wpe = test_input({4, 3}, -1, 1, 2).to(DType::f32).detach().requires_grad_();
  Tensor tokens = idx({6, 0, 6, 2, 1, 1, 3, 5}, {2, 4});
  auto g = expect_compiled_matches_eager(fn, inputs(wte, wpe, tokens), kF32Tolerances);
  EXPECT_TRUE(contains(g.backward, "aten.embedding_dense_backward.default")) << g.backward;
  // Under cpp the attention in it is one fused node (AotConfig::fuse_attention).
  EXPECT_TRUE(contains(g.forward, "aten.masked_fill.Scalar") ||
              contains(g.forward, "aotgrad.masked_attention.default"))
      << g.forward;
}

TEST(IndexingCompiled, GatherScatterIndexSelectTensorFill) {
  auto fn = [](const Tensor& x, const Tensor& src, const Tensor& value, const Tensor& index) {
    Tensor picked = gather(x, 1, index);
    Tensor spread = scatter_add(x, 1, index, src * picked);
    Tensor rows = index_select(spread, 0, index.select(1, 1));  // rows 0, 1, 0
    Tensor mask = gt(rows, 0.25);
    return triu(masked_fill(rows, mask, value), -1).sum(0);
  };
  expect_compiled_matches_eager(fn,
                                inputs(test_input({3, 4}, -1, 1, 3), test_input({3, 2}, -1, 1, 4),
                                       test_input({}, -1, 1, 5), idx({3, 0, 1, 1, 2, 0}, {3, 2})));
}

}  // namespace
}  // namespace aotgrad
