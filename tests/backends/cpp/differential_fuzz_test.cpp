// A differential fuzzer for the cpp backend: random graphs of pointwise ops (unary, binary with
// broadcasting, scalar, comparison + where, threshold_backward; exp, erf, log, sqrt, rsqrt, pow on
// bounded arguments), views (t, expand; slices and selects at a storage offset), matmuls, linear
// layers with activations and residual adds (GEMM epilogues), cats of kernel results (written in
// place, also through flattening views) read back through a slice, row sums, means, maxima,
// softmax and log_softmax, column sums and means, run under the cpp backend and the interpreter
// on the same inputs. Each graph holds ~40 nodes, so one compiler run
// covers many kernels. The CI mode runs two graphs with fixed seeds; AOTGRAD_CPP_FUZZ_GRAPHS=N runs
// N more (seeds from AOTGRAD_CPP_FUZZ_SEED, default 1) for a longer session (scripts/fuzz style).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpp/cpp_test_util.h"
#include "graph/verifier.h"

namespace {

namespace ag = aotgrad;

struct FuzzValue {
  std::string name;
  ag::IntList sizes, strides;
  bool is_bool = false;
  int64_t offset = 0;  // storage offset in elements (slices and selects of inputs)
};

class GraphFuzzer {
 public:
  GraphFuzzer(uint64_t seed, bool f64) : rng_(seed), t_(f64 ? "f64" : "f32") {
    m_ = pick(2, 9);
    n_ = pick(2, 9);
    p_ = pick(2, 5);
  }

  std::string generate(int nodes) {
    std::ostringstream sig;
    add_input("x0", {m_, n_});
    add_input("x1", {m_, n_});
    add_input("xn", {n_});
    add_input("xm", {m_, 1});
    add_input("xt", {n_, m_});
    add_input("xs", {});
    add_input("w", {n_, p_});
    add_input("wsq", {n_, n_});
    add_input("bn", {n_});
    add_input("mask", {m_, n_}, true);
    add_input("xw", {m_, n_ + 3});
    add_input("xr", {m_ + 2, n_});
    add_input("x3", {2, m_, n_});
    for (int i = 0; i < nodes; ++i) step(i);
    std::string text = "graph fuzz(" + signature_ + ") {\n" + body_.str() + "  return (";
    // The last few values and a random sample of the rest.
    std::vector<std::string> outs;
    for (size_t i = 0; i < values_.size(); ++i)
      if (i + 4 >= values_.size() || pick(0, 5) == 0) outs.push_back("%" + values_[i].name);
    for (size_t i = 0; i < outs.size(); ++i) text += (i ? ", " : "") + outs[i];
    return text + ")\n}\n";
  }

 private:
  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  std::string type(const FuzzValue& v) const {
    std::string s = std::string(v.is_bool ? "b8" : t_) + ag::shape_to_string(v.sizes);
    if (v.strides != ag::contiguous_strides(v.sizes)) {
      s += "{";
      for (size_t i = 0; i < v.strides.size(); ++i)
        s += (i ? "," : "") + std::to_string(v.strides[i]);
      s += "}";
    }
    if (v.offset) s += "@" + std::to_string(v.offset);
    for (char& c : s)
      if (c == ' ') c = '\0';
    s.erase(std::remove(s.begin(), s.end(), '\0'), s.end());
    return s;
  }

  void add_input(const std::string& name, const ag::IntList& sizes, bool is_bool = false) {
    values_.push_back({name, sizes, ag::contiguous_strides(sizes), is_bool});
    signature_ += (signature_.empty() ? "%" : ", %") + name + ": " + type(values_.back());
  }

  const FuzzValue& define(const ag::IntList& sizes, const ag::IntList& strides, bool is_bool,
                          const std::string& call, int64_t offset = 0) {
    values_.push_back({"v" + std::to_string(defined_++), sizes, strides, is_bool, offset});
    body_ << "  %" << values_.back().name << ": " << type(values_.back()) << " = " << call << "\n";
    return values_.back();
  }

  // A float value of shape [m, n] (contiguous or a view), or of any shape when `any`.
  const FuzzValue& operand(bool full) {
    for (;;) {
      const FuzzValue& v = values_[pick(0, static_cast<int64_t>(values_.size()) - 1)];
      if (v.is_bool) continue;
      if (!full || v.sizes == ag::IntList{m_, n_}) return v;
    }
  }
  // Something that broadcasts against [m, n].
  const FuzzValue& broadcast_operand() {
    for (;;) {
      const FuzzValue& v = operand(false);
      if (v.sizes == ag::IntList{m_, n_} || v.sizes == ag::IntList{n_} ||
          v.sizes == ag::IntList{m_, 1} || v.sizes == ag::IntList{1, n_} || v.sizes.empty())
        return v;
    }
  }

  void step(int i) {
    static const char* unary[] = {"sin", "cos", "tanh", "sigmoid", "relu", "neg", "abs", "sign"};
    const ag::IntList full{m_, n_}, contiguous = ag::contiguous_strides(full);
    switch (pick(0, 17)) {
      case 0:
      case 1:
      case 2: {
        const FuzzValue& a = operand(pick(0, 3) > 0);
        define(a.sizes, ag::contiguous_strides(a.sizes), false,
               std::string("aten.") + unary[pick(0, 7)] + ".default(%" + a.name + ")");
        break;
      }
      case 3:
      case 4:
      case 5: {
        static const char* binary[] = {"add.Tensor", "sub.Tensor", "mul.Tensor"};
        std::string a = operand(true).name, b = broadcast_operand().name;
        if (pick(0, 1)) std::swap(a, b);
        define(full, contiguous, false,
               std::string("aten.") + binary[pick(0, 2)] + "(%" + a + ", %" + b + ")");
        break;
      }
      case 6: {
        const FuzzValue& a = operand(false);
        define(a.sizes, ag::contiguous_strides(a.sizes), false,
               std::string(pick(0, 1) ? "aten.mul.Scalar(%" : "aten.add.Scalar(%") + a.name + ", " +
                   std::to_string(pick(-3, 3)) + ".5)");
        break;
      }
      case 7: {
        std::string a = operand(true).name, b = broadcast_operand().name;
        std::string c =
            define(full, contiguous, true, "aten.gt.Tensor(%" + a + ", %" + b + ")").name;
        define(full, contiguous, false, "aten.where.self(%" + c + ", %" + a + ", %" + b + ")");
        break;
      }
      case 8: {
        std::string a = operand(true).name, b = operand(true).name;
        std::string call = pick(0, 1)
                               ? "aten.threshold_backward.default(%" + a + ", %" + b + ", 0.0)"
                               : "aten.masked_fill.Scalar(%" + a + ", %mask, 0.25)";
        define(full, contiguous, false, call);
        break;
      }
      case 9:  // views: read in place by the kernels that consume them
        if (pick(0, 1))
          define(full, {1, m_}, false, "aten.t.default(%xt)");
        else
          define(full, {1, 0}, false,
                 "aten.expand.default(%" + std::string(pick(0, 1) ? "xm" : sum_of_row()) + ", [" +
                     std::to_string(m_) + ", " + std::to_string(n_) + "])");
        break;
      case 10:
        if (pick(0, 1)) {
          linear_chain();
          break;
        }
        define({m_, p_}, ag::contiguous_strides({m_, p_}), false,
               "aten.mm.default(%" + operand(true).name + ", %w)");
        break;
      case 12:
        bounded_math();
        break;
      case 14:
        offset_view();
        break;
      case 15:
        cat_then_slice();
        break;
      case 16: {
        // Column reductions (a bias gradient's sum; not fused: they reduce a non-last dim).
        const FuzzValue& a = operand(true);
        if (pick(0, 1))
          define({1, n_}, {n_, 1}, false, "aten.sum.dim_IntList(%" + a.name + ", [0], true)");
        else
          define({n_}, {1}, false, "aten.mean.dim(%" + a.name + ", [0])");
        break;
      }
      case 13: {
        const FuzzValue& a = operand(true);
        define({m_, 1}, {1, 1}, false,
               std::string(pick(0, 1) ? "aten.amax.default(%" : "aten.mean.dim(%") + a.name +
                   ", [1], true)");
        break;
      }
      case 11:
        if (pick(0, 1)) {
          define(
              full, contiguous, false,
              std::string(pick(0, 1) ? "aten._softmax.default(%" : "aten._log_softmax.default(%") +
                  operand(true).name + ", -1, false)");
          break;
        }
        [[fallthrough]];
      default:
        sum_of_row();
        break;
    }
    (void)i;
  }

  // The functions the generated code computes with its own math (exp, erf) or libm's (log,
  // sqrt, pow), on a bounded argument (sin of an operand, scaled or shifted): results stay below
  // ~12, so neither side overflows to inf (which the comparison cannot subtract), and a later sin
  // or cos of them does not turn an ulp of difference into a different value (exp(30 sin x) did).
  void bounded_math() {
    const ag::IntList full{m_, n_}, contiguous = ag::contiguous_strides(full);
    std::string s =
        define(full, contiguous, false, "aten.sin.default(%" + operand(true).name + ")").name;
    switch (pick(0, 5)) {
      case 0:
        s = define(full, contiguous, false, "aten.mul.Scalar(%" + s + ", 2.5)").name;
        define(full, contiguous, false, "aten.exp.default(%" + s + ")");
        break;
      case 1:
        s = define(full, contiguous, false, "aten.mul.Scalar(%" + s + ", 4.5)").name;
        define(full, contiguous, false, "aten.erf.default(%" + s + ")");
        break;
      default: {
        // Positive arguments: s + 1.5 is in [0.5, 2.5].
        s = define(full, contiguous, false, "aten.add.Scalar(%" + s + ", 1.5)").name;
        static const char* positive[] = {"aten.log.default(%", "aten.sqrt.default(%",
                                         "aten.rsqrt.default(%", "aten.pow.Tensor_Scalar(%"};
        const int64_t f = pick(0, 3);
        define(full, contiguous, false,
               positive[f] + s + (f == 3 ? (pick(0, 1) ? ", 2.5)" : ", -0.5)") : ")"));
        break;
      }
    }
  }

  // A linear layer's product, maybe an activation, maybe a residual add (before or after the
  // activation; sometimes another product, so that two products meet at one add): what the cpp
  // backend fuses into one oneDNN matmul with post-ops when the intermediates are used only there.
  void linear_chain() {
    const ag::IntList full{m_, n_}, contiguous = ag::contiguous_strides(full);
    const size_t first = values_.size();
    auto product = [&] {
      std::string x = operand(true).name;
      return define(full, contiguous, false,
                    pick(0, 1) ? "aten.addmm.default(%bn, %" + x + ", %wsq)"
                               : "aten.mm.default(%" + x + ", %wsq)")
          .name;
    };
    std::string v = product();
    auto activation = [&] {
      static const char* act[] = {"aten.relu.default(%", "aten.gelu.default(%",
                                  "aten.gelu.default(%"};
      if (int64_t a = pick(0, 3); a < 3)
        v = define(full, contiguous, false, act[a] + v + (a == 2 ? ", approximate=\"tanh\")" : ")"))
                .name;
    };
    auto residual = [&] {
      if (pick(0, 2) == 0) return;
      std::string r = pick(0, 2) == 0 ? product() : operand(true).name;
      v = define(full, contiguous, false,
                 "aten.add.Tensor(%" + (pick(0, 1) ? v + ", %" + r : r + ", %" + v) + ")")
              .name;
    };
    if (pick(0, 1)) {
      residual();
      activation();
    } else {
      activation();
      residual();
    }
    // Half the time the chain's intermediates are used nowhere else (nor returned): the case
    // where the whole chain fuses.
    if (pick(0, 1) && values_.size() > first + 1)
      values_.erase(values_.begin() + static_cast<std::ptrdiff_t>(first), values_.end() - 1);
  }

  // An [m, n] view at a storage offset, read in place by the kernels that consume it: columns or
  // rows of a wider input, or one matrix of a 3-D one.
  void offset_view() {
    const ag::IntList full{m_, n_};
    switch (pick(0, 2)) {
      case 0: {
        const int64_t start = pick(0, 3);
        define(full, {n_ + 3, 1}, false,
               "aten.slice.Tensor(%xw, 1, " + std::to_string(start) + ", " +
                   std::to_string(start + n_) + ")",
               start);
        break;
      }
      case 1: {
        const int64_t start = pick(0, 2);
        define(full, ag::contiguous_strides(full), false,
               "aten.slice.Tensor(%xr, 0, " + std::to_string(start) + ", " +
                   std::to_string(start + m_) + ")",
               start * n_);
        break;
      }
      default: {
        const int64_t index = pick(0, 1);
        define(full, ag::contiguous_strides(full), false,
               "aten.select.int(%x3, 0, " + std::to_string(index) + ")", index * m_ * n_);
        break;
      }
    }
  }

  // Two [m, n] kernel results concatenated (the cpp backend writes each straight into its slice
  // of the result), directly along dim 0 or 1, or flattened through views along dim 0; then one
  // [m, n] part of the result read back as a view.
  void cat_then_slice() {
    const ag::IntList full{m_, n_}, contiguous = ag::contiguous_strides(full);
    auto part = [&] {
      static const char* unary[] = {"sin", "neg", "relu", "tanh"};
      return define(
                 full, contiguous, false,
                 std::string("aten.") + unary[pick(0, 3)] + ".default(%" + operand(true).name + ")")
          .name;
    };
    const int64_t how = pick(0, 2);
    // b is sometimes an operand (then copied at the cat step); the flattening views need a
    // contiguous source, so there both are kernel results.
    std::string a = part(), b = how == 2 || pick(0, 2) ? part() : operand(true).name;
    const bool second = pick(0, 1) == 1;
    switch (how) {
      case 0: {
        const ag::IntList cs{2 * m_, n_};
        std::string c = define(cs, ag::contiguous_strides(cs), false,
                               "aten.cat.default([%" + a + ", %" + b + "], 0)")
                            .name;
        define(full, contiguous, false,
               "aten.slice.Tensor(%" + c + ", 0, " + std::to_string(second ? m_ : 0) + ", " +
                   std::to_string(second ? 2 * m_ : m_) + ")",
               second ? m_ * n_ : 0);
        break;
      }
      case 1: {
        const ag::IntList cs{m_, 2 * n_};
        std::string c = define(cs, ag::contiguous_strides(cs), false,
                               "aten.cat.default([%" + a + ", %" + b + "], 1)")
                            .name;
        define(full, {2 * n_, 1}, false,
               "aten.slice.Tensor(%" + c + ", 1, " + std::to_string(second ? n_ : 0) + ", " +
                   std::to_string(second ? 2 * n_ : n_) + ")",
               second ? n_ : 0);
        break;
      }
      default: {
        const int64_t mn = m_ * n_;
        auto flat = [&](const std::string& v) {
          return define({mn}, {1}, false,
                        "aten.view.default(%" + v + ", [" + std::to_string(mn) + "])")
              .name;
        };
        std::string fa = flat(a), fb = flat(b);
        std::string c =
            define({2 * mn}, {1}, false, "aten.cat.default([%" + fa + ", %" + fb + "], 0)").name;
        std::string r = define({2, m_, n_}, ag::contiguous_strides({2, m_, n_}), false,
                               "aten.view.default(%" + c + ", [2, " + std::to_string(m_) + ", " +
                                   std::to_string(n_) + "])")
                            .name;
        define(full, contiguous, false,
               "aten.select.int(%" + r + ", 0, " + std::to_string(second ? 1 : 0) + ")",
               second ? mn : 0);
        break;
      }
    }
  }

  std::string sum_of_row() {
    return define({m_, 1}, {1, 1}, false,
                  "aten.sum.dim_IntList(%" + operand(true).name + ", [1], true)")
        .name;
  }

  std::mt19937_64 rng_;
  int64_t defined_ = 0;  // values defined so far (values_ leaves out a fused chain's inside)
  std::string t_;
  int64_t m_, n_, p_;
  std::vector<FuzzValue> values_;
  std::string signature_;
  std::ostringstream body_;
};

void fuzz_one(uint64_t seed, bool f64) {
  std::string text = GraphFuzzer(seed, f64).generate(40);
  SCOPED_TRACE("seed " + std::to_string(seed) + (f64 ? " f64" : " f32") + "\n" + text);
  ag::graph::Graph g = ag::graph::parse_graph(text);
  ag::graph::verify_graph(g);
  ag::testing::expect_cpp_matches_interpreter(
      g, ag::testing::graph_inputs(g, seed),
      f64 ? ag::testing::Tolerances{1e-12, 1e-10} : ag::testing::Tolerances{1e-5, 1e-4});
}

TEST(CppDifferentialFuzz, FixedSeedF32) {
  fuzz_one(11, false);
}

TEST(CppDifferentialFuzz, FixedSeedF64) {
  fuzz_one(12, true);
}

TEST(CppDifferentialFuzz, LongerModeFromTheEnvironment) {
  const char* n = std::getenv("AOTGRAD_CPP_FUZZ_GRAPHS");
  if (!n) GTEST_SKIP() << "set AOTGRAD_CPP_FUZZ_GRAPHS=N for N more random graphs";
  const char* s = std::getenv("AOTGRAD_CPP_FUZZ_SEED");
  uint64_t first = s ? std::strtoull(s, nullptr, 10) : 1;
  for (uint64_t k = 0; k < std::strtoull(n, nullptr, 10); ++k) {
    fuzz_one(first + k, k % 2 == 1);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
