// Exact cache keys (aot/guard_key.h, aot_detail::flatten_arg): two calls share a specialization
// exactly when every guarded attribute is equal — scalar type and bits, dtype, sizes, strides,
// storage offset, requires_grad, whether and how a tensor is a view, grad mode, duplicate/alias
// pattern, list length. Checked on
// generated pairs of calls against a plain description of each call (the reference).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "testing/exactness.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::DType;
using ag::Tensor;
using ag::testing::pattern;

namespace {

// ---- The reference: a call described as plain values, equal exactly when the calls are. ----

enum class ScalarType { f64, f32, i64, i32, u64, boolean };

struct Desc {
  ScalarType scalar_type = ScalarType::f64;
  uint64_t scalar_bits = 0;  // the value's bytes, zero-extended
  DType dtype = DType::f64;
  int64_t rows = 2, cols = 3;
  bool transposed = false;  // strides of a column-major view
  int64_t offset = 0;
  bool requires_grad = false;
  // a: 0 no view, 1 a view, 2 a view made under no_grad, 3 a piece of unbind (aot::CallerView)
  int view = 0;
  bool grad_mode = true;
  int alias = 0;  // b: 0 a tensor of its own, 1 the same tensor as a, 2 a view overlapping a
  size_t list_len = 0;
  bool operator==(const Desc&) const = default;
};

std::string to_string(const Desc& d) {
  std::ostringstream os;
  os << "scalar(type " << static_cast<int>(d.scalar_type) << ", bits 0x" << std::hex
     << d.scalar_bits << std::dec << ") " << ag::dtype_name(d.dtype) << "[" << d.rows << ","
     << d.cols << "]" << (d.transposed ? " transposed" : "") << " offset " << d.offset
     << (d.requires_grad ? " requires_grad" : "") << " view " << d.view
     << (d.grad_mode ? "" : " no_grad") << " alias " << d.alias << " list " << d.list_len;
  return os.str();
}

template <typename T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

template <typename T>
T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// A value of the type, often one that differs from another only in its last bits, its sign or
// its NaN payload, or sits at the end of the integer range.
uint64_t random_scalar(ScalarType type, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  double nan = std::numeric_limits<double>::quiet_NaN();
  switch (type) {
    case ScalarType::f64: {
      const double special[] = {0.0,
                                -0.0,
                                1e-7,
                                2e-7,
                                std::nextafter(1e-7, 1.0),
                                nan,
                                std::numeric_limits<double>::infinity(),
                                1.5};
      if (pick(4) == 0) return bits_of(nan) | (1 + pick(3));  // NaN payloads
      return bits_of(special[pick(std::size(special))]);
    }
    case ScalarType::f32: {
      const float special[] = {0.0f, -0.0f, 1e-7f, 2e-7f, std::nextafter(1e-7f, 1.0f), 1.5f};
      if (pick(4) == 0) return bits_of(std::numeric_limits<float>::quiet_NaN()) | (1 + pick(3));
      return bits_of(special[pick(std::size(special))]);
    }
    case ScalarType::i64: {
      const int64_t special[] = {0,
                                 1,
                                 -1,
                                 std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::max() - 1,
                                 std::numeric_limits<int64_t>::min(),
                                 int64_t{1} << 53,
                                 (int64_t{1} << 53) + 1};
      return bits_of(special[pick(std::size(special))]);
    }
    case ScalarType::i32: {
      const int32_t special[] = {0, 1, -1, std::numeric_limits<int32_t>::max(),
                                 std::numeric_limits<int32_t>::min()};
      return bits_of(special[pick(std::size(special))]);
    }
    case ScalarType::u64: {
      const uint64_t special[] = {0, 1, std::numeric_limits<uint64_t>::max(),
                                  std::numeric_limits<uint64_t>::max() - 1, uint64_t{1} << 63};
      return special[pick(std::size(special))];
    }
    case ScalarType::boolean:
      return pick(2);
  }
  return 0;
}

Desc random_desc(std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return static_cast<int>(rng() % n); };
  Desc d;
  d.scalar_type = static_cast<ScalarType>(pick(6));
  d.scalar_bits = random_scalar(d.scalar_type, rng);
  d.dtype = pick(2) ? DType::f64 : DType::f32;
  d.rows = 2 + pick(2);
  d.cols = 2 + pick(2);
  d.transposed = pick(2);
  d.offset = pick(3);
  d.requires_grad = pick(2);
  d.view = pick(4);
  d.grad_mode = pick(2);
  d.alias = pick(3);
  d.list_len = static_cast<size_t>(pick(3));
  return d;
}

// `d` with one attribute drawn again (possibly to the value it had).
Desc mutate(Desc d, std::mt19937_64& rng) {
  Desc fresh = random_desc(rng);
  switch (rng() % 11) {
    case 0:
      d.scalar_type = fresh.scalar_type;
      d.scalar_bits = random_scalar(d.scalar_type, rng);
      break;
    case 1:
      d.scalar_bits = random_scalar(d.scalar_type, rng);
      break;
    case 2:
      d.dtype = fresh.dtype;
      break;
    case 3:
      d.rows = fresh.rows;
      break;
    case 4:
      d.transposed = fresh.transposed;
      break;
    case 5:
      d.offset = fresh.offset;
      break;
    case 6:
      d.requires_grad = fresh.requires_grad;
      break;
    case 7:
      d.grad_mode = fresh.grad_mode;
      break;
    case 8:
      d.alias = fresh.alias;
      break;
    case 9:
      d.view = fresh.view;
      break;
    default:
      d.list_len = fresh.list_len;
      break;
  }
  return d;
}

// ---- Building and making the call a description stands for. ----

auto fn = [](const Tensor& a, const Tensor& b, const std::vector<Tensor>& list, auto s) {
  Tensor r = a.sum() * static_cast<double>(s) + b.sum();
  for (const Tensor& t : list) r = r + t.sum();
  return r;
};

struct Call {
  Tensor a, b;
  std::vector<Tensor> list;
};

Call build(const Desc& d) {
  Call c;
  Tensor buffer = pattern({64}, 37, 101, d.dtype);
  ag::IntList strides = d.transposed ? ag::IntList{1, d.rows} : ag::IntList{d.cols, 1};
  // A view's base requires grad where `a` must (a view made under no_grad requires grad through
  // its base, a piece through its history).
  Tensor base = d.requires_grad && d.view != 0 ? buffer.detach().requires_grad_() : buffer;
  if (d.view == 0) {
    c.a = ag::as_strided(buffer, {d.rows, d.cols}, strides, d.offset).detach();
    if (d.requires_grad) c.a.requires_grad_();
  } else if (d.view == 1) {
    c.a = ag::as_strided(base, {d.rows, d.cols}, strides, d.offset);
  } else if (d.view == 2) {
    ag::NoGradGuard no_grad;
    c.a = ag::as_strided(base, {d.rows, d.cols}, strides, d.offset);
  } else {
    ag::IntList piece_strides = {64, strides[0], strides[1]};
    c.a = ag::unbind(ag::as_strided(base, {1, d.rows, d.cols}, piece_strides, d.offset), 0)[0];
  }
  if (d.alias == 1)
    c.b = c.a;
  else if (d.alias == 2)
    c.b = ag::as_strided(buffer, {4}, {1}, 2);
  else
    c.b = pattern({3});
  for (size_t i = 0; i < d.list_len; ++i)
    c.list.push_back(pattern({2}, 5 + static_cast<int64_t>(i)));
  return c;
}

template <typename F>
Tensor invoke(F& f, const Desc& d) {
  Call c = build(d);
  std::optional<ag::NoGradGuard> no_grad;
  if (!d.grad_mode) no_grad.emplace();
  switch (d.scalar_type) {
    case ScalarType::f64:
      return f(c.a, c.b, c.list, from_bits<double>(d.scalar_bits));
    case ScalarType::f32:
      return f(c.a, c.b, c.list, from_bits<float>(d.scalar_bits));
    case ScalarType::i64:
      return f(c.a, c.b, c.list, from_bits<int64_t>(d.scalar_bits));
    case ScalarType::i32:
      return f(c.a, c.b, c.list, from_bits<int32_t>(d.scalar_bits));
    case ScalarType::u64:
      return f(c.a, c.b, c.list, d.scalar_bits);
    case ScalarType::boolean:
      return f(c.a, c.b, c.list, d.scalar_bits != 0);
  }
  return Tensor();
}

// Bit for bit under the interpreter; within a few ulp under a fusing default compiler
// (testing/exactness.h).
bool same_value(const Tensor& x, const Tensor& y) {
  double a = x.to(DType::f64).item<double>(), b = y.to(DType::f64).item<double>();
  if (bits_of(a) == bits_of(b) || (std::isnan(a) && std::isnan(b))) return true;
  return !ag::testing::default_compiler_is_exact() &&
         std::abs(a - b) <= ag::testing::compiled_rtol() * std::abs(b);
}

}  // namespace

TEST(CacheKey, CallsShareASpecializationExactlyWhenEveryGuardIsEqual) {
  std::mt19937_64 rng(20240611);
  size_t shared = 0, distinct = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Desc first = random_desc(rng);
    Desc second = rng() % 4 == 0 ? first : mutate(first, rng);
    auto f = ag::aot_function(fn);
    invoke(f, first);
    Tensor got = invoke(f, second);
    bool reused = f.num_compilations() == 1;
    // The function never reads where `a` starts in its storage, so the offset is guarded only
    // where inputs overlap (alias 1 and 2: the members are rebuilt from the storage).
    Desc first_any = first, second_any = second;
    if (first.alias == 0) first_any.offset = second_any.offset = 0;
    ASSERT_EQ(reused, first_any == second_any)
        << "trial " << trial << "\nfirst:  " << to_string(first)
        << "\nsecond: " << to_string(second);
    Tensor want = invoke(fn, second);
    EXPECT_TRUE(same_value(got, want)) << "trial " << trial << ": " << got << " vs " << want << "\n"
                                       << to_string(second);
    (reused ? shared : distinct) += 1;
  }
  EXPECT_GT(shared, 150u);  // both sides of the property were exercised
  EXPECT_GT(distinct, 200u);
}

// The values std::to_string (6 decimals) could not tell apart, and the types a double could not.
TEST(CacheKey, ScalarKeysAreExact) {
  auto key = [](auto v) {
    std::vector<Tensor> flat;
    std::string k;
    ag::aot_detail::flatten_arg(v, flat, k);
    return k;
  };
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(key(1e-7), key(2e-7));
  EXPECT_NE(key(0.0), key(-0.0));
  EXPECT_NE(key(nan), key(from_bits<double>(bits_of(nan) | 1)));
  EXPECT_EQ(key(nan), key(nan));
  EXPECT_NE(key(std::numeric_limits<int64_t>::max()), key(std::numeric_limits<int64_t>::max() - 1));
  EXPECT_NE(key(uint64_t{0} - 1), key(int64_t{-1}));
  EXPECT_NE(key(true), key(1));
  EXPECT_NE(key(1), key(int64_t{1}));
  EXPECT_NE(key(1.0f), key(1.0));
  EXPECT_EQ(key(2e-7), key(2e-7));
}

TEST(CacheKey, TinyScalarsGiveTheirOwnAnswers) {
  auto f = ag::aot_function([](const Tensor& x, double s) { return x * s; });
  Tensor x = pattern({4});
  Tensor a = f(x, 1e-7), b = f(x, 2e-7);
  EXPECT_EQ(f.num_compilations(), 2u);
  EXPECT_TRUE(ag::testing::allclose(a, x * 1e-7, 0, 0)) << a;
  EXPECT_TRUE(ag::testing::allclose(b, x * 2e-7, 0, 0)) << b;
  EXPECT_TRUE(ag::testing::allclose(f(x, 1e-7), x * 1e-7, 0, 0));
  EXPECT_EQ(f.num_compilations(), 2u);
}

// Whether an input is a view decides its trace: a geometry changed under no_grad leaves a
// view's gradient regenerated from its base, but a plain tensor's laid out as it was. A
// specialization traced for one was served to the other, with the other's gradient (transposed
// here), before the key held it.
TEST(CacheKey, AViewAndAPlainTensorOfOneGeometryTakeTheirOwnTraces) {
  auto f = [](Tensor x) {
    {
      ag::NoGradGuard no_grad;
      ag::t_(x);
    }
    return x.exp();
  };
  auto grad_of = [](auto& fn, bool view) {
    Tensor l = pattern({3, 3}, 20).requires_grad_();
    Tensor y = l * 1.0;
    Tensor out = fn(view ? y.view({3, 3}) : y);
    (out * pattern({3, 3}, 21)).sum().backward();
    return l.grad();
  };
  for (bool view_first : {false, true}) {
    auto compiled = ag::aot_function(f);
    for (bool view : {view_first, !view_first}) {
      Tensor got = grad_of(compiled, view), want = grad_of(f, view);
      EXPECT_TRUE(ag::testing::allclose(got, want, 1e-12, ag::testing::compiled_rtol()))
          << (view ? "view" : "plain") << " input, second call " << (view != view_first) << "\n"
          << got << "\n"
          << want;
    }
    EXPECT_EQ(compiled.num_compilations(), 2u);
  }
  // The two eager gradients differ, so the check above can fail.
  EXPECT_FALSE(ag::testing::allclose(grad_of(f, true), grad_of(f, false), 1e-3, 0));
}

// A leaf that requires grad and a non-leaf take their own traces: eager refuses to write the
// leaf in place, and its AccumulateGrad keeps the sizes the leaf had when first reached. Served a
// non-leaf's specialization, a leaf was written without eager's error, and took a gradient of
// sizes where eager's backward raises.
TEST(CacheKey, ALeafAndANonLeafTakeTheirOwnTraces) {
  auto write = [](Tensor x) {
    x.mul_(2.0);
    return x * 1.0;
  };
  auto resize = [](Tensor x) {
    {
      ag::NoGradGuard no_grad;
      ag::unsqueeze_(x, 0);
    }
    Tensor r = x.squeeze(0).exp();
    {
      ag::NoGradGuard no_grad;
      ag::squeeze_(x, 0);
    }
    return r;
  };
  auto error_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  auto non_leaf = [] { return pattern({2, 3}, 7).requires_grad_() * 1.0; };
  auto a_leaf = [] { return pattern({2, 3}, 7).requires_grad_(); };

  auto compiled_write = ag::aot_function(write);
  compiled_write(non_leaf());
  std::string eager = error_of([&] { write(a_leaf()); });
  std::string compiled = error_of([&] { compiled_write(a_leaf()); });
  EXPECT_NE(eager.find("a leaf Variable that requires grad is being used in an in-place"),
            std::string::npos)
      << eager;
  EXPECT_NE(compiled.find("a leaf Variable that requires grad is being used in an in-place"),
            std::string::npos)
      << compiled;

  auto compiled_resize = ag::aot_function(resize);
  compiled_resize(non_leaf()).sum().backward();
  eager = error_of([&] { resize(a_leaf()).sum().backward(); });
  compiled = error_of([&] { compiled_resize(a_leaf()).sum().backward(); });
  EXPECT_NE(eager, "");
  EXPECT_EQ(compiled, eager);
  EXPECT_EQ(compiled_resize.num_compilations(), 2u);
}
