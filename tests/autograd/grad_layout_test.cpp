// The layout contract of gradients (issue 11, item 1): the products' VJPs (mm, addmm, bmm, and
// linear and matmul through them) return each gradient in the memory layout of the operand it
// belongs to, and AccumulateGrad keeps a gradient with the leaf's layout without copying it.
//
// Copies are counted with the allocator's statistics: a backward pass through linear (whose
// weight reaches addmm transposed) must allocate exactly as many blocks as the same pass
// through a weight stored in the product's own orientation, and the .grad() it leaves is a
// plain contiguous tensor with the reference values.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>

#include "aotgrad/aotgrad.h"
#include "aotgrad/memory.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::pattern;

namespace {

// Blocks allocated while `f` runs.
uint64_t allocations_in(const std::function<void()>& f) {
  const uint64_t before = ag::memory_stats().num_allocs;
  f();
  return ag::memory_stats().num_allocs - before;
}

Tensor leaf(const ag::IntList& sizes, int64_t mul) {
  return pattern(sizes, mul).requires_grad_();
}

void expect_plain_like(const Tensor& grad, const Tensor& param) {
  ASSERT_TRUE(grad.defined());
  EXPECT_FALSE(grad.is_view());
  EXPECT_EQ(grad.sizes(), param.sizes());
  EXPECT_EQ(grad.strides(), param.strides());
}

}  // namespace

TEST(GradLayout, LinearWeightGradientIsNotCopied) {
  const Tensor x = pattern({8, 16}, 13);
  // The reference: the same product with the weight stored as [in, out], the orientation the
  // product reads, so its gradient needs no transpose anywhere.
  Tensor w_in_out = leaf({16, 32}, 7), b_ref = leaf({32}, 5);
  Tensor loss_ref = ag::add(ag::mm(x, w_in_out), b_ref).sum();
  const uint64_t reference = allocations_in([&] { loss_ref.backward(); });

  Tensor weight = leaf({32, 16}, 7), bias = leaf({32}, 5);
  Tensor loss = ag::linear(x, weight, bias).sum();
  const uint64_t linear = allocations_in([&] { loss.backward(); });
  // add + sum versus addmm: the bias gradient is one sum either way; a copy of the weight's
  // gradient would be one block more.
  EXPECT_EQ(linear, reference);
  expect_plain_like(weight.grad(), weight);
  expect_plain_like(bias.grad(), bias);
  EXPECT_TRUE(allclose(weight.grad(), w_in_out.grad().t(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(bias.grad(), b_ref.grad(), 1e-12, 1e-12));
}

TEST(GradLayout, MlpStepCopiesNoWeightGradient) {
  const Tensor x = pattern({6, 10}, 11);
  Tensor w1 = leaf({12, 10}, 3), b1 = leaf({12}, 17), w2 = leaf({4, 12}, 19), b2 = leaf({4}, 23);
  Tensor w1_ref = leaf({10, 12}, 3), b1_ref = leaf({12}, 17);
  Tensor w2_ref = leaf({12, 4}, 19), b2_ref = leaf({4}, 23);
  // Same values, stored as [in, out]: copy w1/w2's values into the transposed leaves.
  {
    ag::NoGradGuard no_grad;
    w1_ref.copy_(w1.t());
    w2_ref.copy_(w2.t());
  }
  auto step = [](const Tensor& h0, auto&& layer1, auto&& layer2) {
    return layer2(ag::relu(layer1(h0))).pow(2).sum();
  };
  Tensor loss = step(
      x, [&](const Tensor& h) { return ag::linear(h, w1, b1); },
      [&](const Tensor& h) { return ag::linear(h, w2, b2); });
  Tensor loss_ref = step(
      x, [&](const Tensor& h) { return ag::add(ag::mm(h, w1_ref), b1_ref); },
      [&](const Tensor& h) { return ag::add(ag::mm(h, w2_ref), b2_ref); });
  const uint64_t reference = allocations_in([&] { loss_ref.backward(); });
  const uint64_t mlp = allocations_in([&] { loss.backward(); });
  EXPECT_EQ(mlp, reference);
  for (const Tensor& p : {w1, b1, w2, b2}) expect_plain_like(p.grad(), p);
  EXPECT_TRUE(allclose(w1.grad(), w1_ref.grad().t(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(w2.grad(), w2_ref.grad().t(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(b1.grad(), b1_ref.grad(), 1e-12, 1e-12));

  // A second step accumulates into the same .grad() tensors, still contiguous.
  Tensor again = step(
      x, [&](const Tensor& h) { return ag::linear(h, w1, b1); },
      [&](const Tensor& h) { return ag::linear(h, w2, b2); });
  again.backward();
  expect_plain_like(w1.grad(), w1);
  EXPECT_TRUE(allclose(w1.grad(), ag::mul(w1_ref.grad().t(), 2.0), 1e-12, 1e-12));
}

TEST(GradLayout, ProductGradientsFollowTheOperandLayout) {
  // mm with both operands stored transposed: each gradient has its operand's strides.
  Tensor a_base = leaf({5, 4}, 7), b_base = leaf({6, 5}, 11);
  const Tensor a = a_base.t(), b = b_base.t();  // [4, 5] and [5, 6], column-major
  const Tensor g = pattern({4, 6}, 13);
  std::vector<Tensor> grads = ag::autograd::grad({ag::mm(a, b)}, {a, b}, {g});
  EXPECT_EQ(grads[0].strides(), a.strides());
  EXPECT_EQ(grads[1].strides(), b.strides());
  EXPECT_TRUE(allclose(grads[0], ag::mm(g, b.t()), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(grads[1], ag::mm(a.t(), g), 1e-12, 1e-12));

  // bmm, the same per batch.
  Tensor p_base = leaf({3, 5, 4}, 7), q_base = leaf({3, 6, 5}, 11);
  const Tensor p = p_base.transpose(1, 2), q = q_base.transpose(1, 2);
  const Tensor gb = pattern({3, 4, 6}, 13);
  grads = ag::autograd::grad({ag::bmm(p, q)}, {p, q}, {gb});
  EXPECT_EQ(grads[0].strides(), p.strides());
  EXPECT_EQ(grads[1].strides(), q.strides());
  EXPECT_TRUE(allclose(grads[0], ag::bmm(gb, q.transpose(1, 2)), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(grads[1], ag::bmm(p.transpose(1, 2), gb), 1e-12, 1e-12));

  // The leaves behind them get plain row-major gradients without a copy.
  Tensor loss = ag::bmm(p_base.transpose(1, 2), q_base.transpose(1, 2)).sum();
  loss.backward();
  expect_plain_like(p_base.grad(), p_base);
  expect_plain_like(q_base.grad(), q_base);
}

// PyTorch 1.13's AccumulateGrad (utils::obeys_layout_contract / clone_obey_contract): a leaf
// whose elements are dense and non-overlapping gets a .grad() with its own strides, whatever the
// layout of the gradient that reached it; any other leaf a contiguous one. torch 1.13:
// x = randn(4, 3).t().detach().requires_grad_(); (x * 2).sum().backward(): x.grad.stride() is
// (1, 3); x = randn(2, 1, 3).permute(2, 1, 0)...: (1, 3, 3); x = randn(4, 3)[:, :2]...: (2, 1).
// Ours gave the transposed leaf a contiguous .grad() (the values were right).
TEST(GradLayout, FirstGradientTakesTheStridesOfADenseLeaf) {
  auto strides_of_grad = [](const Tensor& x, double scale) {
    (x * scale).sum().backward();
    return x.grad().strides();
  };
  Tensor t = pattern({4, 3}, 1).t().detach().requires_grad_();
  EXPECT_EQ(strides_of_grad(t, 2.0), (ag::IntList{1, 3}));
  EXPECT_TRUE(allclose(t.grad(), ag::full({3, 4}, 2.0).to(t.dtype()), 0, 0)) << t.grad();
  EXPECT_EQ(strides_of_grad(t, 3.0), (ag::IntList{1, 3}));  // accumulated in place
  EXPECT_TRUE(allclose(t.grad(), ag::full({3, 4}, 5.0).to(t.dtype()), 0, 0)) << t.grad();
  Tensor p = pattern({2, 1, 3}, 1).permute({2, 1, 0}).detach().requires_grad_();
  EXPECT_EQ(strides_of_grad(p, 2.0), (ag::IntList{1, 3, 3}));
  Tensor s = pattern({4, 3}, 1).slice(1, 0, 2).detach().requires_grad_();
  EXPECT_EQ(strides_of_grad(s, 2.0), (ag::IntList{2, 1}));
  // The same through a compiled function: its gradients reach the same AccumulateGrad.
  Tensor c = pattern({4, 3}, 1).t().detach().requires_grad_();
  auto f = ag::aot_function([](const Tensor& x) { return (x * 2.0).sum(); });
  f(c).backward();
  EXPECT_EQ(c.grad().strides(), (ag::IntList{1, 3}));
  EXPECT_TRUE(allclose(c.grad(), ag::full({3, 4}, 2.0).to(c.dtype()), 0, 0)) << c.grad();
}
