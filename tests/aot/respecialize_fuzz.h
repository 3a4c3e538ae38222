// What respecialize_fuzz_test.cpp draws: calls of one compiled function whose inputs differ in
// every property a guard may hold (CallSpec; whether an input is a view and how it was made too),
// the setups that realize them (make_setup), and the small function bodies that make those
// properties matter (Body: in-place writes into inputs and their views, outputs that are views of
// inputs, arithmetic).
//
// A CallSpec is plain data: it prints (describe) so a failing call can be rebuilt by hand, and
// make_setup builds the same tensors from it every time, so the eager and the compiled side see
// inputs of one aliasing structure and equal values.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "eager_oracle.h"

namespace aotgrad::testing::respec {

// viewed: contiguous, but a view (of a tensor of its own); sliced_under_no_grad: sliced, the
// slice made under no_grad (a view whose autograd rules differ, autograd/view_creation.h).
enum class Layout : int { contiguous, transposed, sliced, expanded, viewed, sliced_under_no_grad };
// A leaf that requires grad, a non-leaf (a view of, or equal to, leaf * 1), or neither.
enum class GradKind : int { none, leaf, non_leaf };
enum class Alias : int {
  independent,          // a and b from storages of their own
  same_tensor,          // b is a
  overlapping_views,    // two overlapping row slices of one base (a synthetic base)
  overlapping_storage,  // overlapping, but b reaches the storage through a detached alias
  disjoint_views,       // row slices of one base that share no element
  base_and_view,        // a is the base, b a broadcast view of one of its rows
};
enum class ScalarType : int { f64, f32, i64 };

inline const char* name(Layout l) {
  static const char* n[] = {"contiguous", "transposed", "sliced",
                            "expanded",   "viewed",     "sliced-under-no_grad"};
  return n[static_cast<int>(l)];
}
inline const char* name(GradKind g) {
  static const char* n[] = {"no-grad", "leaf", "non-leaf"};
  return n[static_cast<int>(g)];
}
inline const char* name(Alias a) {
  static const char* n[] = {"independent",         "same-tensor",    "overlapping-views",
                            "overlapping-storage", "disjoint-views", "base-and-view"};
  return n[static_cast<int>(a)];
}

// One call: inputs a and b of shape [m, n] and the scalar argument s, under a grad mode.
struct CallSpec {
  int64_t m = 2, n = 3;
  DType dtype_a = DType::f32, dtype_b = DType::f32;  // aliased inputs share dtype_a
  Layout layout_a = Layout::contiguous, layout_b = Layout::contiguous;  // independent inputs
  GradKind grad_a = GradKind::none, grad_b = GradKind::none;  // aliased: grad_a is the base's
  Alias alias = Alias::independent;
  // Rows past the inputs: at the end of an aliased base (a synthetic base grows, the inputs'
  // guards do not), before a sliced input (a storage offset).
  int64_t extra_rows = 0;
  bool no_grad = false;  // the call runs under NoGradGuard
  ScalarType scalar_type = ScalarType::f64;
  double scalar = 2.0;
  uint64_t values = 1;  // seeds the input values; no guard depends on it

  // Everything but the values: calls with equal identities must share a specialization.
  std::string identity() const {
    std::ostringstream s;
    s << "m=" << m << " n=" << n << " dtypes=" << dtype_name(dtype_a) << "," << dtype_name(dtype_b)
      << " alias=" << name(alias) << " a=" << name(layout_a) << "/" << name(grad_a)
      << " b=" << name(layout_b) << "/" << name(grad_b) << " extra_rows=" << extra_rows
      << " no_grad=" << no_grad << " scalar=" << scalar
      << (scalar_type == ScalarType::f64   ? "(double)"
          : scalar_type == ScalarType::f32 ? "(float)"
                                           : "(int64_t)");
    return s.str();
  }
  std::string describe() const { return identity() + " values=" + std::to_string(values); }
};

inline CallSpec random_spec(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  CallSpec s;
  s.m = pick(1, 4);
  s.n = pick(1, 4);
  s.dtype_a = pick(0, 3) ? DType::f32 : DType::f64;
  s.dtype_b = pick(0, 4) ? s.dtype_a : (s.dtype_a == DType::f32 ? DType::f64 : DType::f32);
  s.layout_a = static_cast<Layout>(pick(0, 5));
  s.layout_b = static_cast<Layout>(pick(0, 5));
  s.grad_a = static_cast<GradKind>(pick(0, 2));
  s.grad_b = static_cast<GradKind>(pick(0, 2));
  s.alias = pick(0, 1) ? Alias::independent : static_cast<Alias>(pick(1, 5));
  s.extra_rows = pick(0, 2);
  s.no_grad = pick(0, 4) == 0;
  s.scalar_type = static_cast<ScalarType>(pick(0, 2));
  static const double scalars[] = {2.0, -1.0, 0.5, -0.0};
  s.scalar = scalars[pick(0, 3)];
  if (s.scalar_type == ScalarType::i64) s.scalar = s.scalar == 0.5 ? 3.0 : std::trunc(s.scalar);
  s.values = static_cast<uint64_t>(pick(1, 1000));
  return s;
}

// `s` with one property changed: the neighbour most likely to share or just miss its key.
inline CallSpec vary_one(CallSpec s, std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  CallSpec r = random_spec(rng);
  switch (pick(0, 11)) {
    case 0:
      s.m = r.m;
      break;
    case 1:
      s.n = r.n;
      break;
    case 2:
      s.dtype_a = r.dtype_a;
      s.dtype_b = r.dtype_b;
      break;
    case 3:
      s.layout_a = r.layout_a;
      break;
    case 4:
      s.layout_b = r.layout_b;
      break;
    case 5:
      s.grad_a = r.grad_a;
      break;
    case 6:
      s.grad_b = r.grad_b;
      break;
    case 7:
      s.alias = r.alias;
      break;
    case 8:
      s.extra_rows = r.extra_rows;
      break;
    case 9:
      s.no_grad = !s.no_grad;
      break;
    case 10:
      s.scalar_type = r.scalar_type;
      s.scalar = r.scalar;
      break;
    default:
      break;  // only the values change
  }
  s.values = r.values;
  return s;
}

inline Tensor values_of(const IntList& sizes, DType dtype, uint64_t seed) {
  return test_input(sizes, -1.0, 1.0, seed, false).to(dtype);
}

// A tensor with `g`'s autograd standing, built from the fresh tensor `raw` by `view` (which must
// keep raw's autograd history: a view or an identity); records the leaves that get gradients.
template <typename View>
Tensor with_grad(Tensor raw, GradKind g, std::vector<Tensor>& leaves, const View& view) {
  if (g == GradKind::non_leaf) {
    raw.requires_grad_();
    leaves.push_back(raw);
    return view(raw * 1.0);
  }
  if (g == GradKind::none) return view(raw);
  Tensor x = view(raw).detach();
  x.requires_grad_();
  leaves.push_back(x);
  return x;
}

// An [m, n] input of the given layout.
inline Tensor independent_input(const CallSpec& s, Layout l, GradKind g, DType dtype, uint64_t seed,
                                std::vector<Tensor>& leaves) {
  const int64_t m = s.m, n = s.n, k = s.extra_rows;
  switch (l) {
    case Layout::contiguous:
      return with_grad(values_of({m, n}, dtype, seed), g, leaves, [](Tensor t) { return t; });
    case Layout::transposed:
      return with_grad(values_of({n, m}, dtype, seed), g, leaves, [](Tensor t) { return t.t(); });
    case Layout::sliced:
      return with_grad(values_of({m + 1 + k, n + 1}, dtype, seed), g, leaves,
                       [&](Tensor t) { return t.slice(0, 1 + k, 1 + k + m).slice(1, 1, n + 1); });
    case Layout::expanded:
      return with_grad(values_of({1, n}, dtype, seed), g, leaves, [&](Tensor t) {
        return t.expand({m, n});
      });
    case Layout::viewed:
      return with_grad(values_of({m, n}, dtype, seed), g, leaves, [&](Tensor t) {
        return t.view({m, n});
      });
    case Layout::sliced_under_no_grad:
      return with_grad(values_of({m + 1 + k, n + 1}, dtype, seed), g, leaves, [&](Tensor t) {
        NoGradGuard no_grad;
        return t.slice(0, 1 + k, 1 + k + m).slice(1, 1, n + 1);
      });
  }
  return Tensor();
}

inline OracleSetup make_setup(const CallSpec& s) {
  OracleSetup setup;
  std::vector<Tensor>& leaves = setup.leaves;
  const int64_t m = s.m, n = s.n, k = s.extra_rows;
  auto base = [&](int64_t rows) {
    return with_grad(values_of({rows, n}, s.dtype_a, s.values), s.grad_a, leaves,
                     [](Tensor t) { return t; });
  };
  Tensor a, b;
  switch (s.alias) {
    case Alias::independent:
      a = independent_input(s, s.layout_a, s.grad_a, s.dtype_a, s.values, leaves);
      b = independent_input(s, s.layout_b, s.grad_b, s.dtype_b, s.values + 7919, leaves);
      break;
    case Alias::same_tensor:
      a = b = independent_input(s, s.layout_a, s.grad_a, s.dtype_a, s.values, leaves);
      break;
    case Alias::overlapping_views: {
      Tensor B = base(m + 1 + k);
      a = B.slice(0, 0, m);
      b = B.slice(0, 1, m + 1);
      break;
    }
    case Alias::overlapping_storage: {
      Tensor B = base(m + 1 + k);
      a = B.slice(0, 0, m);
      b = B.detach().slice(0, 1, m + 1);
      break;
    }
    case Alias::disjoint_views: {
      Tensor B = base(2 * m + k);
      a = B.slice(0, 0, m);
      b = B.slice(0, m + k, 2 * m + k);
      break;
    }
    case Alias::base_and_view: {
      a = base(m);
      b = a.select(0, k % m).unsqueeze(0).expand({m, n});
      break;
    }
  }
  setup.inputs = {a, b};
  return setup;
}

// What every guard key holds for sure (grad mode, the scalar's type and bits, dtypes, sizes and
// requires_grad): a call whose coarse key no earlier compile had cannot share its artifact.
inline std::string coarse_key(const CallSpec& s, const std::vector<Tensor>& inputs) {
  std::ostringstream k;
  k << s.no_grad << " " << static_cast<int>(s.scalar_type) << " ";
  uint64_t bits = 0;
  std::memcpy(&bits, &s.scalar, sizeof bits);
  k << bits;
  for (const Tensor& t : inputs)
    k << " " << dtype_name(t.dtype()) << shape_to_string(t.sizes()) << t.requires_grad();
  return k.str();
}

// The function bodies: generic in the scalar's type, which is part of the key.
struct Body {
  int which = 0;
  static constexpr int kCount = 7;

  template <typename S>
  std::vector<Tensor> operator()(const Tensor& a_in, const Tensor& b_in, S s) const {
    Tensor a = a_in, b = b_in;
    switch (which) {
      case 0:  // write into a; b's transpose out
        a.mul_(s);
        return {a + b, b.t(), a.sum(1)};
      case 1:  // no writes; views of both inputs out
        return {a.select(0, 0), (a * b).sum(0) * s, b.unsqueeze(0)};
      case 2: {  // a write no autograd sees; a view of the written input out
        {
          NoGradGuard no_grad;
          b.add_(s);
        }
        return {a.exp() * b, b.slice(1, 0, 1)};
      }
      case 3: {  // a write through a view of a, and that view out
        Tensor v = a.select(1, 0);
        v.add_(b.select(1, 0) * s);
        return {a.tanh(), v};
      }
      case 4:  // writes into both; the second reads the first's result
        a.add_(1.0);
        b.mul_(a);
        return {a * s, b.sum()};
      case 5:  // a product with a transposed input
        return {mm(a, b.t().to(a.dtype())) * s, b.sigmoid()};
      default: {  // geometry changes autograd does not see, read between: views, plain
        {         // tensors and leaves take their gradients differently. (b, which may be or
          NoGradGuard no_grad;  // view a, is not read: aotgrad refuses some such reads.)
          unsqueeze_(a, 0);
        }
        Tensor r = a.squeeze(0).exp() * s;
        {
          NoGradGuard no_grad;
          squeeze_(a, 0);
        }
        return {r, r.sum()};
      }
    }
  }
};

inline const char* describe_body(int which) {
  static const char* text[] = {
      "a.mul_(s); return {a + b, b.t(), a.sum(1)}",
      "return {a.select(0, 0), (a * b).sum(0) * s, b.unsqueeze(0)}",
      "{no_grad; b.add_(s);} return {a.exp() * b, b.slice(1, 0, 1)}",
      "v = a.select(1, 0); v.add_(b.select(1, 0) * s); return {a.tanh(), v}",
      "a.add_(1.0); b.mul_(a); return {a * s, b.sum()}",
      "return {mm(a, b.t().to(a.dtype())) * s, b.sigmoid()}",
      "{no_grad; a.unsqueeze_(0);} r = a.squeeze(0).exp() * s; {no_grad; a.squeeze_(0);} "
      "return {r, r.sum()}",
  };
  return text[which];
}

// Calls fn(a, b, s) with the spec's scalar type, under the spec's grad mode.
template <typename Fn>
std::vector<Tensor> call_spec(const CallSpec& s, const Fn& fn, const std::vector<Tensor>& in) {
  std::optional<NoGradGuard> no_grad;
  if (s.no_grad) no_grad.emplace();
  switch (s.scalar_type) {
    case ScalarType::f64:
      return fn(in[0], in[1], s.scalar);
    case ScalarType::f32:
      return fn(in[0], in[1], static_cast<float>(s.scalar));
    case ScalarType::i64:
      return fn(in[0], in[1], static_cast<int64_t>(s.scalar));
  }
  return {};
}

}  // namespace aotgrad::testing::respec
