// Tests of the pointwise family: values against hand-computed numbers, type promotion,
// strided / broadcast / empty / 0-dim inputs, meta == kernel, gradcheck for every VJP.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::gradcheck;
using testing::test_input;
using V = std::vector<double>;
using Fn = testing::Fn;

Tensor f32(const std::vector<float>& v, const IntList& s) {
  return from_vector(v, s);
}
Tensor f64(const V& v, const IntList& s) {
  return from_vector(v, s);
}
Tensor i64(const std::vector<int64_t>& v, const IntList& s) {
  return from_vector(v, s);
}
Tensor b8(const std::vector<bool>& v, const IntList& s) {
  return from_vector(v, s);
}

// The transpose of a fresh contiguous [cols, rows] tensor: non-contiguous, built without the
// views family so these tests do not depend on it.
Tensor transposed(const Tensor& contiguous_cols_rows) {
  const Tensor& t = contiguous_cols_rows;
  return make_view(t, {t.size(1), t.size(0)}, {t.stride(1), t.stride(0)}, 0);
}

Tensor call_row(const char* name, ops::OpArgs args) {
  return ops::call1(ops::lookup(name), std::move(args));
}

// ---- arithmetic values ----

TEST(PointwiseArith, AddSubMulDivValues) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2}), b = f32({10, 20, 30, 40}, {2, 2});
  EXPECT_EQ(add(a, b).to_vector<float>(), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(add(a, b, 2).to_vector<float>(), (std::vector<float>{21, 42, 63, 84}));
  EXPECT_EQ(sub(a, b).to_vector<float>(), (std::vector<float>{-9, -18, -27, -36}));
  EXPECT_EQ(sub(a, b, 0.5).to_vector<float>(), (std::vector<float>{-4, -8, -12, -16}));
  EXPECT_EQ(mul(a, b).to_vector<float>(), (std::vector<float>{10, 40, 90, 160}));
  EXPECT_EQ(div(b, a).to_vector<float>(), (std::vector<float>{10, 10, 10, 10}));
  EXPECT_EQ(add(a, 1.5).to_vector<float>(), (std::vector<float>{2.5, 3.5, 4.5, 5.5}));
  EXPECT_EQ(add(a, 1, 3).to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(sub(a, 1).to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(sub(a, 1, 2).to_vector<float>(), (std::vector<float>{-1, 0, 1, 2}));
  EXPECT_EQ(mul(a, -2).to_vector<float>(), (std::vector<float>{-2, -4, -6, -8}));
  EXPECT_EQ(div(a, 4).to_vector<float>(), (std::vector<float>{0.25, 0.5, 0.75, 1}));
  EXPECT_EQ((a + b * a - a / 2).to_vector<float>(), (std::vector<float>{10.5, 41, 91.5, 162}));
  EXPECT_EQ((1.0 - a).to_vector<float>(), (std::vector<float>{0, -1, -2, -3}));
}

TEST(PointwiseArith, Broadcasting) {
  Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3}), row = f64({10, 20, 30}, {3});
  Tensor col = f64({100, 200}, {2, 1});
  EXPECT_EQ(add(a, row).to_vector<double>(), (V{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(add(row, a).sizes(), (IntList{2, 3}));
  EXPECT_EQ(mul(a, col).to_vector<double>(), (V{100, 200, 300, 800, 1000, 1200}));
  // [2,1] with [3] -> [2,3], both operands broadcast.
  EXPECT_EQ(sub(col, row).to_vector<double>(), (V{90, 80, 70, 190, 180, 170}));
  // 0-dim operand.
  EXPECT_EQ(mul(a, f64({2}, {})).to_vector<double>(), (V{2, 4, 6, 8, 10, 12}));
  Tensor s = add(f64({1}, {}), f64({2}, {}));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 3);
}

TEST(PointwiseArith, BroadcastErrorNamesOpAndShapes) {
  Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3}), b = f32({1, 2}, {2});
  try {
    add(a, b);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("aten.add.Tensor"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  }
}

TEST(PointwiseArith, EmptyAndZeroDim) {
  Tensor e = make_tensor({0, 3}, DType::f32);
  Tensor r = add(e, f32({1, 2, 3}, {3}));
  EXPECT_EQ(r.sizes(), (IntList{0, 3}));
  EXPECT_EQ(exp(e).numel(), 0);
  EXPECT_EQ(gt(e, 1.0).sizes(), (IntList{0, 3}));
  Tensor z = scalar_tensor(2.0, DType::f32);
  EXPECT_FLOAT_EQ(exp(z).item<float>(), std::exp(2.0f));
  EXPECT_EQ(exp(z).dim(), 0);
}

TEST(PointwiseArith, IntegerArithmeticWrapsAndDividesTruly) {
  Tensor a = i64({7, -7, 9}, {3}), b = i64({2, 2, 3}, {3});
  EXPECT_EQ(add(a, b).dtype(), DType::i64);
  EXPECT_EQ(mul(a, b).to_vector<int64_t>(), (std::vector<int64_t>{14, -14, 27}));
  Tensor q = div(a, b);
  EXPECT_EQ(q.dtype(), DType::f32);
  EXPECT_EQ(q.to_vector<float>(), (std::vector<float>{3.5f, -3.5f, 3.0f}));
  EXPECT_EQ(div(a, 2).dtype(), DType::f32);
  Tensor big = i64({std::numeric_limits<int64_t>::max()}, {1});
  EXPECT_EQ(add(big, 1).item<int64_t>(), std::numeric_limits<int64_t>::min());
  // Large integers stay exact through a Scalar (no trip through double).
  EXPECT_EQ(add(i64({0}, {1}), int64_t{(1LL << 62) + 1}).item<int64_t>(), (1LL << 62) + 1);
}

TEST(PointwiseArith, BoolArithmetic) {
  Tensor t = b8({true, true, false, false}, {4}), u = b8({true, false, true, false}, {4});
  Tensor s = add(t, u);
  EXPECT_EQ(s.dtype(), DType::b8);
  EXPECT_EQ(s.to_vector<bool>(), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(mul(t, u).to_vector<bool>(), (std::vector<bool>{true, false, false, false}));
  Tensor p = add(t, 1);
  EXPECT_EQ(p.dtype(), DType::i64);
  EXPECT_EQ(p.to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 1, 1}));
  EXPECT_EQ(div(t, u).dtype(), DType::f32);
  EXPECT_THROW(sub(t, u), std::invalid_argument);
  EXPECT_THROW(sub(t, 1), std::invalid_argument);
  EXPECT_THROW(neg(t), std::invalid_argument);
}

TEST(PointwiseArith, TypePromotionTable) {
  Tensor fl = f32({1.5f, 2.5f}, {2}), db = f64({1, 2}, {2}), in = i64({1, 2}, {2});
  Tensor bo = b8({true, false}, {2});
  EXPECT_EQ(add(fl, db).dtype(), DType::f64);
  EXPECT_EQ(add(in, fl).dtype(), DType::f32);
  EXPECT_EQ(add(in, bo).dtype(), DType::i64);
  EXPECT_EQ(mul(fl, scalar_tensor(2.0, DType::f64)).dtype(), DType::f32);  // 0-dim: lower priority
  EXPECT_EQ(mul(in, scalar_tensor(2.0, DType::f64)).dtype(), DType::f64);  // but lifts category
  Tensor r = add(in, 2.5);
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3.5f, 4.5f}));
  EXPECT_EQ(add(in, 2).dtype(), DType::i64);
  EXPECT_EQ(mul(fl, 2).dtype(), DType::f32);
  EXPECT_EQ(add(bo, bo).dtype(), DType::b8);
  // Mixed-dtype operands are converted as they are read.
  EXPECT_EQ(add(in, fl).to_vector<float>(), (std::vector<float>{2.5f, 4.5f}));
  EXPECT_EQ(mul(db, bo).to_vector<double>(), (V{1, 0}));
}

TEST(PointwiseArith, AlphaChecks) {
  Tensor in = i64({1, 2}, {2});
  EXPECT_THROW(add(in, in, 0.5), std::invalid_argument);
  EXPECT_THROW(add(in, in, true), std::invalid_argument);
  EXPECT_EQ(add(in, in, 3).to_vector<int64_t>(), (std::vector<int64_t>{4, 8}));
}

TEST(PointwiseArith, HalfPrecisionComputesInFloat) {
  Tensor h = f32({1.5f, -2.0f, 3.25f}, {3}).to(DType::f16);
  Tensor s = add(h, h);
  EXPECT_EQ(s.dtype(), DType::f16);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{3.0f, -4.0f, 6.5f}));
  Tensor bf = mul(f32({2.0f, 0.5f}, {2}).to(DType::bf16), 3);
  EXPECT_EQ(bf.dtype(), DType::bf16);
  EXPECT_EQ(bf.to_vector<float>(), (std::vector<float>{6.0f, 1.5f}));
  EXPECT_EQ(exp(f32({0.0f}, {1}).to(DType::f16)).dtype(), DType::f16);
}

// ---- strided inputs ----

TEST(PointwiseStrided, TransposedExpandedAndOffsetInputs) {
  Tensor base = f32({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor at = transposed(base);  // [[1,3,5],[2,4,6]]
  Tensor b = f32({10, 20, 30, 40, 50, 60}, {2, 3});
  EXPECT_EQ(add(at, b).to_vector<float>(), (std::vector<float>{11, 23, 35, 42, 54, 66}));
  // Expanded (stride-0) input: a row repeated along dim 0.
  Tensor row = f32({1, 2, 3}, {3});
  Tensor expanded = make_view(row, {2, 3}, {0, 1}, 0);
  EXPECT_EQ(mul(expanded, b).to_vector<float>(), (std::vector<float>{10, 40, 90, 40, 100, 180}));
  // Offset view with a step: elements 1, 3, 5 of a 6-vector.
  Tensor flat = f32({0, 1, 2, 3, 4, 5}, {6});
  Tensor odd = make_view(flat, {3}, {2}, 1);
  EXPECT_EQ(neg(odd).to_vector<float>(), (std::vector<float>{-1, -3, -5}));
  EXPECT_EQ(add(odd, odd).to_vector<float>(), (std::vector<float>{2, 6, 10}));
  // A fully expanded tensor reads one value.
  Tensor one = f32({7}, {1});
  EXPECT_EQ(sub(make_view(one, {2, 2}, {0, 0}, 0), 1).to_vector<float>(),
            (std::vector<float>{6, 6, 6, 6}));
}

// Large enough for several blocks and the OpenMP path; compares against a plain loop.
TEST(PointwiseStrided, LargeNonContiguousMatchesReference) {
  const int64_t rows = 300, cols = 257;
  std::vector<double> v(rows * cols);
  for (size_t k = 0; k < v.size(); ++k) v[k] = std::sin(0.01 * static_cast<double>(k));
  Tensor base = f64(v, {cols, rows});
  Tensor at = transposed(base);  // [rows, cols], strides {1, rows}
  Tensor b = f32(std::vector<float>(cols, 0.5f), {cols});
  Tensor r = mul(add(at, b, 2), at);
  ASSERT_EQ(r.dtype(), DType::f64);
  std::vector<double> got = r.to_vector<double>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double x = v[j * rows + i];
      ASSERT_DOUBLE_EQ(got[i * cols + j], (x + 2 * 0.5) * x) << i << "," << j;
    }
  Tensor e = exp(at);
  std::vector<double> ge = e.to_vector<double>();
  for (int64_t i = 0; i < rows; i += 7)
    for (int64_t j = 0; j < cols; j += 5)
      ASSERT_DOUBLE_EQ(ge[i * cols + j], std::exp(v[j * rows + i]));
}

// The same through the views family's ops (transpose, slice, expand), values and gradients.
TEST(PointwiseStrided, ThroughViewOps) {
  Tensor m = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(add(m.t(), f64({10, 20}, {2})).to_vector<double>(), (V{11, 24, 12, 25, 13, 26}));
  Tensor cols = m.slice(1, 0, 3, 2);  // [[1,3],[4,6]]
  EXPECT_EQ(mul(cols, cols).to_vector<double>(), (V{1, 9, 16, 36}));
  EXPECT_EQ(sub(f64({1, 2}, {2}).expand({3, 2}), 1).to_vector<double>(), (V{0, 1, 0, 1, 0, 1}));
  Fn fn = [](const std::vector<Tensor>& x) {
    return mul(x[0].t(), x[1].slice(0, 1, 4, 1)) + exp(x[0].t().slice(1, 0, 2, 1)).sum(1, true);
  };
  EXPECT_TRUE(gradcheck(fn, {test_input({2, 3}, -1, 1, 31), test_input({5, 2}, -1, 1, 32)}));
}

// ---- unary values ----

TEST(PointwiseUnary, MathValues) {
  V x = {0.25, 1.0, 2.0};
  Tensor t = f64(x, {3});
  auto check = [&](const Tensor& got, double (*f)(double)) {
    std::vector<double> g = got.to_vector<double>();
    for (size_t k = 0; k < x.size(); ++k) EXPECT_NEAR(g[k], f(x[k]), 1e-14) << k;
  };
  check(exp(t), [](double v) { return std::exp(v); });
  check(log(t), [](double v) { return std::log(v); });
  check(sqrt(t), [](double v) { return std::sqrt(v); });
  check(rsqrt(t), [](double v) { return 1 / std::sqrt(v); });
  check(sin(t), [](double v) { return std::sin(v); });
  check(cos(t), [](double v) { return std::cos(v); });
  check(tanh(t), [](double v) { return std::tanh(v); });
  check(sigmoid(t), [](double v) { return 1 / (1 + std::exp(-v)); });
  check(neg(t), [](double v) { return -v; });
}

TEST(PointwiseUnary, IntegralInputsGiveDefaultFloat) {
  Tensor in = i64({0, 1, 4}, {3});
  EXPECT_EQ(exp(in).dtype(), DType::f32);
  EXPECT_EQ(sqrt(in).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(sigmoid(b8({false}, {1})).to_vector<float>(), (std::vector<float>{0.5f}));
  EXPECT_EQ(neg(in).dtype(), DType::i64);
  EXPECT_EQ(relu(i64({-3, 4}, {2})).to_vector<int64_t>(), (std::vector<int64_t>{0, 4}));
  EXPECT_THROW(gelu(in), std::invalid_argument);
}

TEST(PointwiseUnary, ReluKeepsNaNAndZeroesNegatives) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> r = relu(f64({-1, 0, 2, nan}, {4})).to_vector<double>();
  EXPECT_EQ(r[0], 0);
  EXPECT_EQ(r[1], 0);
  EXPECT_EQ(r[2], 2);
  EXPECT_TRUE(std::isnan(r[3]));
}

TEST(PointwiseUnary, SigmoidSaturatesWithoutNaN) {
  std::vector<float> r = sigmoid(f32({-200, 200}, {2})).to_vector<float>();
  EXPECT_EQ(r[0], 0.0f);
  EXPECT_EQ(r[1], 1.0f);
}

TEST(PointwiseUnary, GeluBothForms) {
  // Reference values: the formulas of torch.nn.functional.gelu evaluated in Python's math (f64).
  Tensor x = f64({-2.0, -0.5, 0.0, 1.0, 3.0}, {5});
  V erf_ref = {-0.04550026389635842, -0.15426876936299344, 0.0, 0.8413447460685429,
               2.99595030590511};
  V tanh_ref = {-0.04540230591222494, -0.15428599017485606, 0.0, 0.8411919906082768,
                2.996362607918227};
  EXPECT_TRUE(allclose(gelu(x), f64(erf_ref, {5}), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(gelu(x, "tanh"), f64(tanh_ref, {5}), 1e-10, 1e-10));
  EXPECT_THROW(gelu(x, "fast"), std::invalid_argument);
}

TEST(PointwiseUnary, PowValues) {
  Tensor x = f64({0.5, 2.0, 4.0}, {3});
  EXPECT_EQ(pow(x, 2).to_vector<double>(), (V{0.25, 4, 16}));
  EXPECT_EQ(pow(x, 0.5).to_vector<double>(), (V{std::sqrt(0.5), std::sqrt(2.0), 2}));
  EXPECT_TRUE(allclose(pow(x, -1.5), f64({std::pow(0.5, -1.5), std::pow(2.0, -1.5), 0.125}, {3})));
  EXPECT_EQ(pow(x, 0).to_vector<double>(), (V{1, 1, 1}));
  EXPECT_EQ(pow(x, 3).to_vector<double>(), (V{0.125, 8, 64}));
  Tensor n = i64({-2, 3, 5}, {3});
  Tensor ip = pow(n, 3);
  EXPECT_EQ(ip.dtype(), DType::i64);
  EXPECT_EQ(ip.to_vector<int64_t>(), (std::vector<int64_t>{-8, 27, 125}));
  EXPECT_EQ(pow(n, 0.5).dtype(), DType::f32);
  EXPECT_THROW(pow(n, -1), std::invalid_argument);
  EXPECT_EQ(pow(b8({true, false}, {2}), 2).dtype(), DType::i64);
}

// ---- backward ops ----

TEST(PointwiseBackwardOps, Values) {
  Tensor g = f64({1, 2, 3}, {3}), y = f64({0.5, -0.25, 0.0}, {3});
  EXPECT_EQ(call_row("aten.tanh_backward.default", {g, y}).to_vector<double>(),
            (V{0.75, 2 * 0.9375, 3}));
  EXPECT_EQ(call_row("aten.sigmoid_backward.default", {g, y}).to_vector<double>(),
            (V{0.25, 2 * 1.25 * -0.25, 0}));
  EXPECT_EQ(call_row("aten.threshold_backward.default", {g, y, Scalar(0)}).to_vector<double>(),
            (V{1, 0, 0}));
  EXPECT_EQ(call_row("aten.threshold_backward.default", {g, y, Scalar(-0.5)}).to_vector<double>(),
            (V{1, 2, 3}));
}

// gelu_backward against central differences of gelu.
TEST(PointwiseBackwardOps, GeluBackwardMatchesDifferences) {
  V xs = {-3.0, -1.0, -0.2, 0.0, 0.7, 2.5};
  Tensor x = f64(xs, {6}), ones_g = f64(V(6, 1.0), {6});
  for (const char* approx : {"none", "tanh"}) {
    std::vector<double> d = call_row("aten.gelu_backward.default", {ones_g, x, std::string(approx)})
                                .to_vector<double>();
    for (size_t k = 0; k < xs.size(); ++k) {
      const double h = 1e-6;
      double up = gelu(f64({xs[k] + h}, {1}), approx).item<double>();
      double down = gelu(f64({xs[k] - h}, {1}), approx).item<double>();
      EXPECT_NEAR(d[k], (up - down) / (2 * h), 1e-8) << approx << " x=" << xs[k];
    }
  }
}

// ---- meta agrees with kernel ----

TEST(PointwiseMeta, MetaMatchesKernelOutputs) {
  std::vector<Tensor> samples = {f32({1, 2, 3, 4, 5, 6}, {2, 3}), f64({1, 2, 3}, {3}),
                                 i64({1, 2}, {2, 1}), scalar_tensor(2.0, DType::f64),
                                 b8({true, false, true}, {3})};
  int checked = 0;
  for (const ops::OpDef* op : ops::all_ops()) {
    const ops::Schema& s = op->parsed_schema();
    if (op->name.find("backward") != std::string_view::npos ||
        op->name.find("where") != std::string_view::npos)
      continue;
    bool pointwise_family = false;
    for (std::string_view n :
         {"aten.add.", "aten.sub.", "aten.mul.", "aten.div.", "aten.neg.", "aten.exp.", "aten.log.",
          "aten.sqrt.", "aten.rsqrt.", "aten.sin.", "aten.cos.", "aten.tanh.", "aten.sigmoid.",
          "aten.relu.", "aten.pow.Tensor_Scalar", "aten.eq.", "aten.gt.", "aten.lt."})
      pointwise_family = pointwise_family || op->name.rfind(n, 0) == 0;
    if (!pointwise_family) continue;
    for (const Tensor& a : samples) {
      for (const Tensor& b : samples) {
        ops::OpArgs args{a};
        if (s.args.size() > 1 && s.args[1].type == ops::ArgType::tensor)
          args.push_back(b);
        else if (s.args.size() > 1)
          args.push_back(Scalar(2));
        ops::normalize(*op, args);
        std::vector<ops::TensorMeta> meta;
        try {
          meta = op->meta(args);
        } catch (const std::invalid_argument&) {
          EXPECT_THROW(op->kernel(args), std::invalid_argument) << op->name;
          continue;
        }
        Tensor out = op->kernel(args).at(0);
        EXPECT_EQ(meta[0].dtype, out.dtype()) << op->name;
        EXPECT_EQ(meta[0].sizes, out.sizes()) << op->name;
        EXPECT_EQ(meta[0].strides, out.strides()) << op->name;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 300);
}

// ---- gradients ----

TEST(PointwiseGrad, BinaryOps) {
  std::vector<std::pair<const char*, Fn>> fns = {
      {"add", [](const std::vector<Tensor>& x) { return add(x[0], x[1]); }},
      {"add alpha", [](const std::vector<Tensor>& x) { return add(x[0], x[1], 2.5); }},
      {"sub", [](const std::vector<Tensor>& x) { return sub(x[0], x[1]); }},
      {"sub alpha", [](const std::vector<Tensor>& x) { return sub(x[0], x[1], -3); }},
      {"mul", [](const std::vector<Tensor>& x) { return mul(x[0], x[1]); }},
      {"div", [](const std::vector<Tensor>& x) { return div(x[0], x[1]); }},
  };
  for (auto& [name, fn] : fns) {
    EXPECT_TRUE(gradcheck(fn, {test_input({2, 3}, -1, 1, 1), test_input({2, 3}, 0.5, 2, 2)}))
        << name;
    // Non-contiguous first input.
    Tensor base = test_input({3, 2}, -1, 1, 3, false);
    Tensor at = transposed(base).requires_grad_();
    EXPECT_TRUE(gradcheck(fn, {at, test_input({2, 3}, 0.5, 2, 4)})) << name << " (transposed)";
  }
}

TEST(PointwiseGrad, BinaryOpsBroadcasting) {
  std::vector<std::pair<const char*, Fn>> fns = {
      {"add", [](const std::vector<Tensor>& x) { return add(x[0], x[1], 2); }},
      {"sub", [](const std::vector<Tensor>& x) { return sub(x[0], x[1]); }},
      {"mul", [](const std::vector<Tensor>& x) { return mul(x[0], x[1]); }},
      {"div", [](const std::vector<Tensor>& x) { return div(x[0], x[1]); }},
  };
  for (auto& [name, fn] : fns) {
    EXPECT_TRUE(gradcheck(fn, {test_input({2, 3}, -1, 1, 5), test_input({3}, 0.5, 2, 6)})) << name;
    EXPECT_TRUE(gradcheck(fn, {test_input({2, 1}, -1, 1, 7), test_input({1, 3}, 0.5, 2, 8)}))
        << name;
  }
}

TEST(PointwiseGrad, ScalarOps) {
  std::vector<std::pair<const char*, Fn>> fns = {
      {"add.Scalar", [](const std::vector<Tensor>& x) { return add(x[0], 2.0, 3); }},
      {"sub.Scalar", [](const std::vector<Tensor>& x) { return sub(x[0], 2.0); }},
      {"mul.Scalar", [](const std::vector<Tensor>& x) { return mul(x[0], -1.5); }},
      {"div.Scalar", [](const std::vector<Tensor>& x) { return div(x[0], 4); }},
      {"neg", [](const std::vector<Tensor>& x) { return neg(x[0]); }},
  };
  for (auto& [name, fn] : fns) {
    EXPECT_TRUE(gradcheck(fn, {test_input({3, 4}, -1, 1, 9)})) << name;
    EXPECT_TRUE(gradcheck(fn, {test_input({}, -1, 1, 10)})) << name << " (0-dim)";
  }
}

TEST(PointwiseGrad, UnaryOps) {
  struct Case {
    const char* name;
    Fn fn;
    double lo, hi;
  };
  std::vector<Case> cases = {
      {"exp", [](const std::vector<Tensor>& x) { return exp(x[0]); }, -2, 2},
      {"log", [](const std::vector<Tensor>& x) { return log(x[0]); }, 0.5, 3},
      {"sqrt", [](const std::vector<Tensor>& x) { return sqrt(x[0]); }, 0.5, 3},
      {"rsqrt", [](const std::vector<Tensor>& x) { return rsqrt(x[0]); }, 0.5, 3},
      {"sin", [](const std::vector<Tensor>& x) { return sin(x[0]); }, -3, 3},
      {"cos", [](const std::vector<Tensor>& x) { return cos(x[0]); }, -3, 3},
      {"tanh", [](const std::vector<Tensor>& x) { return tanh(x[0]); }, -2, 2},
      {"sigmoid", [](const std::vector<Tensor>& x) { return sigmoid(x[0]); }, -3, 3},
      {"relu", [](const std::vector<Tensor>& x) { return relu(x[0]); }, -1, 1},
      {"gelu", [](const std::vector<Tensor>& x) { return gelu(x[0]); }, -3, 3},
      {"gelu tanh", [](const std::vector<Tensor>& x) { return gelu(x[0], "tanh"); }, -3, 3},
      {"pow 2", [](const std::vector<Tensor>& x) { return pow(x[0], 2); }, 0.5, 2},
      {"pow 0.5", [](const std::vector<Tensor>& x) { return pow(x[0], 0.5); }, 0.5, 2},
      {"pow -1.5", [](const std::vector<Tensor>& x) { return pow(x[0], -1.5); }, 0.5, 2},
      {"pow 3", [](const std::vector<Tensor>& x) { return pow(x[0], 3); }, -2, 2},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(gradcheck(c.fn, {test_input({2, 5}, c.lo, c.hi, 11)})) << c.name;
    Tensor base = test_input({5, 2}, c.lo, c.hi, 12, false);
    EXPECT_TRUE(gradcheck(c.fn, {transposed(base).requires_grad_()})) << c.name << " (transposed)";
    EXPECT_TRUE(gradcheck(c.fn, {test_input({}, c.lo, c.hi, 13)})) << c.name << " (0-dim)";
  }
}

TEST(PointwiseGrad, PowZeroExponentGivesZeroGradient) {
  Tensor x = test_input({3}, 0.5, 2, 14);
  Tensor y = pow(x, 0);
  std::vector<Tensor> g = autograd::grad({y}, {x}, {f64({1, 1, 1}, {3})});
  EXPECT_EQ(g[0].to_vector<double>(), (V{0, 0, 0}));
}

// The backward ops' own VJPs (double backward), checked as functions of (grad, saved value).
TEST(PointwiseGrad, BackwardOpsAreDifferentiable) {
  std::vector<std::pair<const char*, Fn>> fns = {
      {"tanh_backward",
       [](const std::vector<Tensor>& x) {
         return call_row("aten.tanh_backward.default", {x[0], x[1]});
       }},
      {"sigmoid_backward",
       [](const std::vector<Tensor>& x) {
         return call_row("aten.sigmoid_backward.default", {x[0], x[1]});
       }},
      {"gelu_backward",
       [](const std::vector<Tensor>& x) {
         return call_row("aten.gelu_backward.default", {x[0], x[1]});
       }},
      {"gelu_backward tanh",
       [](const std::vector<Tensor>& x) {
         return call_row("aten.gelu_backward.default", {x[0], x[1], std::string("tanh")});
       }},
  };
  for (auto& [name, fn] : fns)
    EXPECT_TRUE(gradcheck(fn, {test_input({2, 3}, -1, 1, 15), test_input({2, 3}, -2, 2, 16)}))
        << name;
  // threshold_backward: linear in grad, zero gradient for self (kept away from the threshold).
  Fn thr = [](const std::vector<Tensor>& x) {
    return call_row("aten.threshold_backward.default", {x[0], x[1], Scalar(0.1)});
  };
  EXPECT_TRUE(
      gradcheck(thr, {test_input({2, 3}, -1, 1, 17), f64({-1, 0.5, 2, 0, 0.3, -0.2}, {2, 3})}));
}

TEST(PointwiseGrad, MixedDtypeGradientHasInputDtype) {
  Tensor a = f32({1, 2}, {2}).requires_grad_();
  Tensor s = scalar_tensor(3.0, DType::f64).requires_grad_();
  Tensor y = mul(a, s);
  ASSERT_EQ(y.dtype(), DType::f32);
  std::vector<Tensor> g = autograd::grad({y}, {a, s}, {f32({1, 1}, {2})});
  EXPECT_EQ(g[0].dtype(), DType::f32);
  EXPECT_EQ(g[1].dtype(), DType::f64);
  EXPECT_EQ(g[1].dim(), 0);
  EXPECT_DOUBLE_EQ(g[1].item<double>(), 3.0);
}

TEST(PointwiseGrad, EagerMulSumBackward) {
  Tensor a = f64({1, 2, 3}, {3}).requires_grad_();
  Tensor b = f64({4, 5, 6}, {3}).requires_grad_();
  Tensor y = (a * b).sum();
  y.backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (V{4, 5, 6}));
  EXPECT_EQ(b.grad().to_vector<double>(), (V{1, 2, 3}));
}

TEST(PointwiseGrad, EagerChainBackward) {
  // y = sum(relu(x) * exp(x)); dy/dx = (x > 0) * exp(x) + relu(x) * exp(x).
  Tensor x = f64({-1, 0.5, 2}, {3}).requires_grad_();
  Tensor y = (relu(x) * exp(x)).sum();
  y.backward();
  V expected;
  for (double v : {-1.0, 0.5, 2.0})
    expected.push_back((v > 0 ? 1 : 0) * std::exp(v) + std::max(v, 0.0) * std::exp(v));
  EXPECT_TRUE(allclose(x.grad(), f64(expected, {3}), 1e-12, 1e-12));
}

TEST(PointwiseGrad, IntegerAndComparisonOutputsDoNotRequireGrad) {
  Tensor x = f32({1, 2}, {2}).requires_grad_();
  EXPECT_TRUE(mul(x, i64({2, 3}, {2})).requires_grad());
  EXPECT_FALSE(gt(x, 1.0).requires_grad());
}

// ---- traced VJPs: compiled == eager, and backward graphs read like PyTorch's ----

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

// Runs fn eagerly and through aot_function; returns the backward graph text.
std::string expect_compiled_matches_eager(const char* name, BinaryFn fn, const IntList& a_sizes,
                                          const IntList& b_sizes) {
  Tensor a = test_input(a_sizes, 0.5, 2, 21), b = test_input(b_sizes, 0.5, 2, 22);
  Tensor a2 = a.detach().requires_grad_(), b2 = b.detach().requires_grad_();
  Tensor eager = fn(a, b).sum();
  eager.backward();
  auto f = aot_function(fn);
  Tensor out = f(a2, b2).sum();
  out.backward();
  EXPECT_TRUE(allclose(out, eager, 1e-12, 1e-12)) << name;
  EXPECT_TRUE(allclose(a2.grad(), a.grad(), 1e-12, 1e-12)) << name;
  EXPECT_TRUE(allclose(b2.grad(), b.grad(), 1e-12, 1e-12)) << name;
  return f.graphs().backward;
}

TEST(PointwiseAot, CompiledMatchesEager) {
  std::vector<std::pair<const char*, BinaryFn>> fns = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b, 2); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b, 0.5); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"unary chain",
       [](const Tensor& a, const Tensor& b) {
         return exp(a) * log(b) + sqrt(a) * rsqrt(b) - sin(a) * cos(b) + pow(a, -1.5) / 3 - neg(b);
       }},
      {"activations",
       [](const Tensor& a, const Tensor& b) {
         return tanh(a - 1) * sigmoid(b) + relu(a - b) + gelu(a - 1) * gelu(b - 1, "tanh");
       }},
  };
  for (auto& [name, fn] : fns) {
    expect_compiled_matches_eager(name, fn, {2, 3}, {2, 3});
    expect_compiled_matches_eager(name, fn, {2, 3}, {3});  // broadcasting
  }
}

TEST(PointwiseAot, BackwardGraphsUsePyTorchBackwardOps) {
  std::string g =
      expect_compiled_matches_eager("activations",
                                    [](const Tensor& a, const Tensor& b) {
                                      return tanh(a) * sigmoid(b) + relu(a - b) + gelu(a, "tanh");
                                    },
                                    {2, 3}, {2, 3});
  for (const char* op : {"aten.tanh_backward.default", "aten.sigmoid_backward.default",
                         "aten.threshold_backward.default", "aten.gelu_backward.default"})
    EXPECT_NE(g.find(op), std::string::npos) << op << " missing from\n" << g;
  EXPECT_NE(g.find("approximate"), std::string::npos) << g;
}

}  // namespace
}  // namespace aotgrad
