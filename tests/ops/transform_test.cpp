// Ops real models record beyond the core families (issue 18): constant_pad_nd, roll,
// unsafe_split, new_zeros/new_ones/new_full and fill.Tensor — values against PyTorch 1.13
// (pasted from torch), errors, finite-difference gradients and compiled == eager under every
// partitioner.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::gradcheck;
using testing::test_input;
using V = std::vector<double>;

Tensor x34() {
  return to(arange(12.0).view({3, 4}), DType::f64);
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

TEST(ConstantPad, ValuesMatchPyTorch) {
  Tensor p = constant_pad_nd(x34(), {1, -1, 2, 0}, -1);
  EXPECT_EQ(p.sizes(), (IntList{5, 4}));
  EXPECT_EQ(values(p), (V{-1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 2, -1, 4, 5, 6, -1, 8, 9, 10}));
  Tensor crop = constant_pad_nd(x34(), {0, 0, -1, -1});
  EXPECT_EQ(crop.sizes(), (IntList{1, 4}));
  EXPECT_EQ(values(crop), (V{4, 5, 6, 7}));
  // A transposed input, and cropping a dim to nothing.
  EXPECT_EQ(values(constant_pad_nd(x34().t(), {1, 0})),
            (V{0, 0, 4, 8, 0, 1, 5, 9, 0, 2, 6, 10, 0, 3, 7, 11}));
  EXPECT_EQ(constant_pad_nd(x34(), {-2, -2}).sizes(), (IntList{3, 0}));
}

TEST(ConstantPad, Errors) {
  expect_error([] { constant_pad_nd(x34(), {1}); }, "must be even");
  expect_error([] { constant_pad_nd(x34(), {0, 0, -3, -1}); }, "negative");
  expect_error([] { constant_pad_nd(x34(), {1, 1, 1, 1, 1, 1}); }, "has only 2");
  expect_error([] { constant_pad_nd(x34(), {INT64_MAX, 1}); }, "unrepresentable");
}

TEST(Roll, ValuesMatchPyTorch) {
  EXPECT_EQ(values(roll(x34(), {1}, {1})), (V{3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10}));
  EXPECT_EQ(values(roll(x34(), {1, -1}, {0, 1})), (V{9, 10, 11, 8, 1, 2, 3, 0, 5, 6, 7, 4}));
  EXPECT_EQ(values(roll(x34(), {5})), (V{7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values(roll(x34(), {1, 1}, {1, 1})), (V{2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9}));
  // Shifts wrap, negative dims count from the end, transposed input.
  EXPECT_EQ(values(roll(x34(), {-7}, {-1})), values(roll(x34(), {1}, {1})));
  EXPECT_EQ(values(roll(x34().t(), {1}, {0})), values(roll(x34(), {1}, {1}).t()));
  EXPECT_EQ(values(roll(x34(), {INT64_MIN}, {1})), values(roll(x34(), {0}, {1})));
  expect_error([] { roll(x34(), {1, 2}, {0}); }, "must align");
  expect_error([] { roll(x34(), {1, 2}); }, "exactly one shift");
  expect_error([] { roll(x34(), {1}, {2}); }, "aten.roll.default");
}

TEST(UnsafeSplit, PiecesAreFreshCopies) {
  Tensor x = x34();
  std::vector<Tensor> pieces = unsafe_split(x, 3, 1);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(values(pieces[0]), (V{0, 1, 2, 4, 5, 6, 8, 9, 10}));
  EXPECT_EQ(values(pieces[1]), (V{3, 7, 11}));
  EXPECT_NE(pieces[0].storage(), x.storage());
  EXPECT_TRUE(pieces[0].is_contiguous());
}

TEST(NewFactories, ShapeDtypeAndValues) {
  Tensor x = to(x34(), DType::f32);
  Tensor z = new_zeros(x, {2, 5});
  EXPECT_EQ(z.dtype(), DType::f32);
  EXPECT_EQ(z.sizes(), (IntList{2, 5}));
  EXPECT_EQ(values(z), V(10, 0.0));
  EXPECT_EQ(new_ones(x, {3}, DType::i64).dtype(), DType::i64);
  EXPECT_EQ(values(new_full(x, {2}, 7.5)), (V{7.5, 7.5}));
  EXPECT_FALSE(new_zeros(x.detach().requires_grad_(), {2}).requires_grad());
  expect_error([&] { new_zeros(x, {-1}); }, "aten.new_zeros.default");
}

TEST(FillTensor, ValuesAndGradientToValue) {
  Tensor x = x34();
  Tensor v = full({}, 2.5, DType::f64).requires_grad_();
  Tensor f = fill(x, v);
  EXPECT_EQ(values(f), V(12, 2.5));
  (f * x).sum().backward();
  EXPECT_DOUBLE_EQ(v.grad().item<double>(), 66.0);  // sum of x
  expect_error([&] { fill(x, full({2}, 1.0)); }, "0-dimensional");
}

TEST(TransformOps, Gradcheck) {
  Tensor x = test_input({3, 4}, -1, 1, 31).requires_grad_();
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return constant_pad_nd(in[0], {1, -2, 0, 2}, 3);
      },
      {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return roll(in[0], {2, -1}, {1, 0});
      },
      {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return roll(in[0], {5}); }, {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> p = unsafe_split(in[0], 3, 1);
        return p[0].sum(std::vector<int64_t>{1}) * 2.0 + p[1].view({3});
      },
      {x}));
  Tensor v = test_input({}, -1, 1, 32).requires_grad_();
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return fill(in[0], in[1]) * in[0]; }, {x, v}));
}

TEST(TransformOps, CompiledMatchesEagerUnderEveryPartitioner) {
  testing::run_scenario(
      [] {
        return testing::TensorList{testing::leaf({3, 4}, 1), testing::leaf({}, 2)};
      },
      [](const testing::TensorList& a) {
        Tensor p = constant_pad_nd(a[0], {1, 1, -1, 0}, 0.5);
        Tensor r = roll(a[0], {1, 2}, {0, 1});
        std::vector<Tensor> s = unsafe_split(r, 2, 1);
        Tensor z = new_zeros(a[0], {3, 2});
        return testing::TensorList{p.exp(), s[0] * s[1] + z, fill(a[0], a[1]) * a[0],
                                   ne(a[0], 0.0)};
      });
}

}  // namespace
}  // namespace aotgrad
