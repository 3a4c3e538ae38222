// Tests of the comparison family: eq / gt / lt values, promotion before comparing, broadcasting,
// b8 results; where values, promotion, broadcasting and its gradient.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"

namespace aotgrad {
namespace {

using testing::gradcheck;
using testing::test_input;
using B = std::vector<bool>;
using V = std::vector<double>;

Tensor f32(const std::vector<float>& v, const IntList& s) {
  return from_vector(v, s);
}
Tensor f64(const V& v, const IntList& s) {
  return from_vector(v, s);
}
Tensor i64(const std::vector<int64_t>& v, const IntList& s) {
  return from_vector(v, s);
}
Tensor b8(const B& v, const IntList& s) {
  return from_vector(v, s);
}

TEST(CompareOps, TensorValues) {
  Tensor a = f32({1, 2, 3, 4}, {4}), b = f32({4, 2, 1, 4}, {4});
  Tensor e = eq(a, b);
  EXPECT_EQ(e.dtype(), DType::b8);
  EXPECT_EQ(e.to_vector<bool>(), (B{false, true, false, true}));
  EXPECT_EQ(gt(a, b).to_vector<bool>(), (B{false, false, true, false}));
  EXPECT_EQ(lt(a, b).to_vector<bool>(), (B{true, false, false, false}));
}

TEST(CompareOps, NeGeLeValues) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  Tensor a = f64({1, 2, 3, kNaN}, {4}), b = f64({4, 2, 1, kNaN}, {4});
  EXPECT_EQ(ne(a, b).to_vector<bool>(), (B{true, false, true, true}));  // NaN != NaN
  EXPECT_EQ(ge(a, b).to_vector<bool>(), (B{false, true, true, false}));
  EXPECT_EQ(le(a, b).to_vector<bool>(), (B{true, true, false, false}));
  EXPECT_EQ(ne(a, 2).to_vector<bool>(), (B{true, false, true, true}));
  EXPECT_EQ(ge(a, 2).to_vector<bool>(), (B{false, true, true, false}));
  EXPECT_EQ(le(a, 2).to_vector<bool>(), (B{true, true, false, false}));
  // Promotion before comparing and broadcasting: i64 [2, 1] against f32 [3].
  Tensor i = i64({1, 3}, {2, 1});
  EXPECT_EQ(ne(i, f32({1, 2.5, 3}, {3})).to_vector<bool>(),
            (B{false, true, true, true, true, false}));
  EXPECT_EQ(ge(i, 2.5).to_vector<bool>(), (B{false, true}));
  EXPECT_FALSE(ne(test_input({3}, -1, 1, 1).requires_grad_(), 0.0).requires_grad());
}

TEST(CompareOps, ScalarValues) {
  Tensor a = i64({1, 2, 3}, {3});
  EXPECT_EQ(eq(a, 2).to_vector<bool>(), (B{false, true, false}));
  EXPECT_EQ(gt(a, 1.5).to_vector<bool>(), (B{false, true, true}));  // compared in f32
  EXPECT_EQ(lt(a, 3).to_vector<bool>(), (B{true, true, false}));
  EXPECT_EQ(gt(a, 1.5).dtype(), DType::b8);
  // A f32 tensor equals the f32 rounding of a double scalar, as in torch.
  EXPECT_EQ(eq(f32({0.1f}, {1}), 0.1).item<bool>(), true);
  EXPECT_EQ(eq(b8({true, false}, {2}), true).to_vector<bool>(), (B{true, false}));
}

TEST(CompareOps, PromotesBeforeComparing) {
  // 2^53 + 1 is not a double: compared in i64 it differs from 2^53, in f64 it would not.
  const int64_t big = (int64_t{1} << 53) + 1;
  EXPECT_FALSE(eq(i64({big}, {1}), i64({big - 1}, {1})).item<bool>());
  EXPECT_TRUE(eq(i64({2}, {1}), f64({2.0}, {1})).item<bool>());
  EXPECT_TRUE(lt(b8({false}, {1}), f32({0.5f}, {1})).item<bool>());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(eq(f64({nan}, {1}), f64({nan}, {1})).item<bool>(), false);
}

TEST(CompareOps, Broadcasting) {
  Tensor col = f64({1, 2}, {2, 1}), row = f64({0, 1.5, 3}, {3});
  Tensor r = gt(col, row);
  EXPECT_EQ(r.sizes(), (IntList{2, 3}));
  EXPECT_EQ(r.to_vector<bool>(), (B{true, false, false, true, true, false}));
  EXPECT_THROW(eq(f64({1, 2}, {2}), f64({1, 2, 3}, {3})), std::invalid_argument);
  Tensor base = f64({1, 2, 3, 4}, {2, 2});
  Tensor tr = make_view(base, {2, 2}, {1, 2}, 0);  // transpose: [[1,3],[2,4]]
  EXPECT_EQ(lt(tr, base).to_vector<bool>(), (B{false, false, true, false}));
}

TEST(CompareOps, NoGradient) {
  Tensor a = f64({1, 2}, {2}).requires_grad_();
  EXPECT_FALSE(eq(a, a).requires_grad());
  EXPECT_FALSE(lt(a, 1.0).requires_grad());
}

TEST(CompareWhere, Values) {
  Tensor c = b8({true, false, true}, {3});
  Tensor r = where(c, f32({1, 2, 3}, {3}), f32({10, 20, 30}, {3}));
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 20, 3}));
}

TEST(CompareWhere, BroadcastsAndPromotes) {
  Tensor c = b8({true, false}, {2, 1});
  Tensor a = i64({1, 2, 3}, {3});
  Tensor b = scalar_tensor(-1.5, DType::f64);  // 0-dim f64 lifts i64 to f64
  Tensor r = where(c, a, b);
  EXPECT_EQ(r.sizes(), (IntList{2, 3}));
  EXPECT_EQ(r.dtype(), DType::f64);
  EXPECT_EQ(r.to_vector<double>(), (V{1, 2, 3, -1.5, -1.5, -1.5}));
  EXPECT_EQ(where(c, f32({1}, {1}), scalar_tensor(2.0, DType::f64)).dtype(), DType::f32);
}

TEST(CompareWhere, ConditionMustBeBool) {
  Tensor x = f32({1, 2}, {2});
  try {
    where(x, x, x);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("condition"), std::string::npos) << e.what();
  }
  EXPECT_THROW(where(b8({true, false, true}, {3}), x, x), std::invalid_argument);
}

TEST(CompareWhere, Gradient) {
  Tensor c = b8({true, false, false, true, true, false}, {2, 3});
  testing::Fn fn = [c](const std::vector<Tensor>& x) { return where(c, x[0], x[1]); };
  EXPECT_TRUE(gradcheck(fn, {test_input({2, 3}, -1, 1, 1), test_input({2, 3}, -1, 1, 2)}));
  // Broadcast self and other: gradients are summed back to their shapes.
  EXPECT_TRUE(gradcheck(fn, {test_input({3}, -1, 1, 3), test_input({2, 1}, -1, 1, 4)}));
  // Broadcast condition.
  Tensor crow = b8({true, false, true}, {3});
  testing::Fn fn2 = [crow](const std::vector<Tensor>& x) { return where(crow, x[0], x[1]); };
  EXPECT_TRUE(gradcheck(fn2, {test_input({2, 3}, -1, 1, 5), test_input({}, -1, 1, 6)}));
}

TEST(CompareWhere, EagerGradientValues) {
  Tensor c = b8({true, false, true}, {3});
  Tensor a = f64({1, 2, 3}, {3}).requires_grad_();
  Tensor b = f64({4, 5, 6}, {3}).requires_grad_();
  std::vector<Tensor> g = autograd::grad({where(c, a, b)}, {a, b}, {f64({1, 2, 3}, {3})});
  EXPECT_EQ(g[0].to_vector<double>(), (V{1, 0, 3}));
  EXPECT_EQ(g[1].to_vector<double>(), (V{0, 2, 0}));
}

}  // namespace
}  // namespace aotgrad
