// Drawing random programs (program_fuzz.h): the setup, then the body one step at a time on a live
// eager copy of the program, so every drawn op fits the shapes its operands have at that point
// (after earlier in-place geometry changes too), and a step eager refuses is dropped.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "aot/program_fuzz.h"

namespace aotgrad::testing::program_fuzz {

namespace {

constexpr int64_t kMaxDims = 4;
constexpr int64_t kMaxNumel = 256;

bool broadcastable(const IntList& x, const IntList& y) {
  for (size_t i = 1; i <= std::min(x.size(), y.size()); ++i) {
    int64_t a = x[x.size() - i], b = y[y.size() - i];
    if (a != b && a != 1 && b != 1) return false;
  }
  return true;
}

// Whether `from` broadcasts to exactly `to` (the right operand of an in-place op).
bool broadcasts_to(const IntList& from, const IntList& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i) {
    int64_t a = from[from.size() - i], b = to[to.size() - i];
    if (a != b && a != 1) return false;
  }
  return true;
}

enum class Kind {
  unary,
  binary,
  scalar,
  where,
  reduce,
  linalg,
  copy,
  cat,
  view,
  inplace,
  metadata
};

class ProgramGenerator {
 public:
  ProgramGenerator(uint64_t seed, int generator) : rng_(seed), generator_(generator) {}

  Program draw(DType dtype) {
    p_.dtype = dtype;
    draw_setup();
    rebuild();
    int64_t target = pick(2, 10);
    for (int tries = 0; tries < 8 * target && static_cast<int64_t>(p_.steps.size()) < target;
         ++tries)
      draw_step();
    draw_outputs();
    return p_;
  }

 private:
  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  const T& one_of(const std::vector<T>& v) {
    return v[static_cast<size_t>(pick(0, static_cast<int64_t>(v.size()) - 1))];
  }
  double draw_scalar() { return one_of(std::vector<double>{0.5, -1.5, 2.0, 0.25, -3.0, 1.0}); }

  void rebuild() { values_ = p_.run_values(p_.make().inputs); }

  void draw_setup() {
    int64_t leaves = pick(1, 3);
    for (int64_t i = 0; i < leaves; ++i) {
      Root r;
      for (int64_t d = pick(1, 3); d > 0; --d) r.sizes.push_back(pick(2, 6));
      r.requires_grad = chance(0.6);
      r.seed = static_cast<uint64_t>(pick(1, 1000000));
      p_.roots.push_back(r);
    }
    if (chance(0.35)) {
      Root r;
      r.times_one_of = static_cast<int>(pick(0, leaves - 1));
      p_.roots.push_back(r);
    }
    int64_t inputs = pick(1, 4);
    for (int64_t i = 0; i < inputs; ++i) {
      InputSpec in;
      if (i > 0 && chance(0.15)) {
        in.same_as = static_cast<int>(pick(0, i - 1));
        p_.inputs.push_back(in);
        continue;
      }
      in.root = static_cast<int>(pick(0, static_cast<int64_t>(p_.roots.size()) - 1));
      p_.inputs.push_back(in);
      if (!chance(0.5)) continue;
      // Views of the root: made on a live setup so their parameters fit.
      for (int64_t k = pick(1, 2); k > 0; --k) {
        Tensor t = p_.make().inputs.back();
        static const std::vector<Op> kSetupViews = {Op::slice,  Op::transpose, Op::t,
                                                    Op::select, Op::unsqueeze, Op::permute,
                                                    Op::view,   Op::slice};
        // Generator 3 also makes the caller's views as autograd treats specially: a piece of a
        // multi-output view, or a view made under no_grad.
        const bool piece = generator_ >= 3 && chance(0.2);
        std::optional<Step> v = piece ? draw_piece(t) : draw_view(one_of(kSetupViews), t);
        if (!v) continue;
        if (generator_ >= 3 && chance(0.3)) v->no_grad = true;
        p_.inputs.back().views.push_back(*v);
        try {
          p_.make();
        } catch (const std::exception&) {
          p_.inputs.back().views.pop_back();
        }
      }
    }
  }

  // A float value index: recent values and inputs more often than the rest.
  std::optional<int> draw_operand(bool prefer_inputs) {
    std::vector<int> floats;
    for (size_t i = 0; i < values_.size(); ++i)
      if (values_[i].dtype() == p_.dtype) floats.push_back(static_cast<int>(i));
    if (floats.empty()) return std::nullopt;
    if (prefer_inputs && chance(0.4))
      return static_cast<int>(pick(0, static_cast<int64_t>(p_.inputs.size()) - 1));
    if (chance(0.5)) {
      int64_t n = static_cast<int64_t>(floats.size());
      return floats[static_cast<size_t>(n - 1 - pick(0, std::min<int64_t>(2, n - 1)))];
    }
    return one_of(floats);
  }

  // A second operand whose shape fits `a` (in place: broadcasts to a's shape exactly).
  std::optional<int> draw_partner(const Tensor& a, bool in_place) {
    std::vector<int> fits;
    for (size_t i = 0; i < values_.size(); ++i) {
      const Tensor& b = values_[i];
      if (b.dtype() != p_.dtype) continue;
      if (in_place ? broadcasts_to(b.sizes(), a.sizes()) : broadcastable(a.sizes(), b.sizes()))
        fits.push_back(static_cast<int>(i));
    }
    if (fits.empty()) return std::nullopt;
    return one_of(fits);
  }

  std::optional<Step> draw_view(Op op, const Tensor& a) {
    Step s;
    s.op = op;
    int64_t dim = a.dim();
    auto any_dim = [&] { return pick(0, dim - 1); };
    switch (op) {
      case Op::view:
      case Op::reshape: {
        IntList sz = a.sizes();
        int64_t choice = pick(0, 3);
        if (choice == 0 || dim == 0) {
          s.ints = {-1};
        } else if (choice == 1 && dim >= 2) {
          int64_t d = pick(0, dim - 2);
          sz[d] *= sz[d + 1];
          sz.erase(sz.begin() + d + 1);
          s.ints = sz;
        } else if (choice == 2 && dim < kMaxDims) {
          sz.insert(sz.begin() + pick(0, dim), 1);
          s.ints = sz;
        } else {
          int64_t d = any_dim();
          if (sz[d] % 2 != 0 || dim >= kMaxDims) return std::nullopt;
          sz[d] /= 2;
          sz.insert(sz.begin() + d, 2);
          s.ints = sz;
        }
        return s;
      }
      case Op::transpose:
      case Op::transpose_: {
        if (dim < 2) return std::nullopt;
        int64_t d0 = any_dim(), d1 = any_dim();
        if (d0 == d1) d1 = (d0 + 1) % dim;
        s.ints = {d0, chance(0.2) ? d1 - dim : d1};
        return s;
      }
      case Op::t:
      case Op::t_:
        if (dim > 2) return std::nullopt;
        return s;
      case Op::permute: {
        if (dim < 2) return std::nullopt;
        s.ints.resize(dim);
        std::iota(s.ints.begin(), s.ints.end(), 0);
        std::shuffle(s.ints.begin(), s.ints.end(), rng_);
        return s;
      }
      case Op::slice: {
        if (dim < 1) return std::nullopt;
        int64_t d = any_dim(), n = a.size(d);
        int64_t start = pick(0, n - 1), end = pick(start + 1, n);
        s.ints = {d, start, end, chance(0.25) ? 2 : 1};
        return s;
      }
      case Op::select: {
        if (dim < 1) return std::nullopt;
        int64_t d = any_dim();
        s.ints = {d, chance(0.2) ? -1 : pick(0, a.size(d) - 1)};
        return s;
      }
      case Op::unsqueeze:
      case Op::unsqueeze_:
        if (dim >= kMaxDims) return std::nullopt;
        s.ints = {pick(0, dim)};
        return s;
      case Op::squeeze:
      case Op::squeeze_: {
        if (dim < 1) return std::nullopt;
        std::vector<int64_t> ones;
        for (int64_t d = 0; d < dim; ++d)
          if (a.size(d) == 1) ones.push_back(d);
        s.ints = {!ones.empty() && chance(0.8) ? one_of(ones) : any_dim()};
        return s;
      }
      case Op::expand: {
        IntList sz = a.sizes();
        bool grew = false;
        for (int64_t& n : sz)
          if (n == 1 && chance(0.7)) {
            n = pick(2, 4);
            grew = true;
          }
        if ((!grew || chance(0.3)) && dim < kMaxDims) sz.insert(sz.begin(), pick(2, 3));
        s.ints = sz;
        return s;
      }
      case Op::as_strided: {
        int64_t room = static_cast<int64_t>(a.storage()->nbytes() / itemsize(a.dtype()));
        int64_t p = pick(1, 3), q = pick(1, 3);
        IntList strides = chance(0.5) ? IntList{q, 1} : IntList{1, p};
        if (a.storage_offset() + (p - 1) * strides[0] + (q - 1) * strides[1] >= room)
          return std::nullopt;
        s.ints = {p, q, strides[0], strides[1]};
        return s;
      }
      case Op::alias:
        return s;
      default:
        return std::nullopt;
    }
  }

  // Generator 2's new values: exp, div by a scalar, softmax and log_softmax along a dim, amax.
  std::optional<Step> draw_second_generator_value(const Tensor& a, Step s) {
    switch (pick(0, 4)) {
      case 0:
        s.op = Op::exp;
        return s;
      case 1:
        s.op = Op::div_scalar;
        s.scalar = one_of(std::vector<double>{2.0, -0.5, 4.0});
        return s;
      case 2:
      case 3:
        if (a.dim() == 0) return std::nullopt;
        s.op = chance(0.5) ? Op::softmax : Op::log_softmax;
        s.ints = {pick(0, a.dim() - 1)};
        return s;
      default:
        if (a.dim() == 0) return std::nullopt;
        s.op = Op::amax;
        s.ints = {pick(0, a.dim() - 1), chance(0.5) ? 1 : 0};
        return s;
    }
  }

  // One piece of split, chunk or unbind along a dim of `a`.
  std::optional<Step> draw_piece(const Tensor& a) {
    if (a.dim() < 1) return std::nullopt;
    Step s;
    int64_t d = pick(0, a.dim() - 1), n = a.size(d);
    if (n < 1) return std::nullopt;
    switch (pick(0, 2)) {
      case 0: {
        s.op = Op::split_piece;
        int64_t size = pick(1, n);
        s.ints = {size, d, pick(0, (n + size - 1) / size - 1)};
        return s;
      }
      case 1: {
        s.op = Op::chunk_piece;
        int64_t chunks = pick(1, std::min<int64_t>(n, 3));
        int64_t each = (n + chunks - 1) / chunks;
        s.ints = {chunks, d, pick(0, (n + each - 1) / each - 1)};
        return s;
      }
      default:
        s.op = Op::unbind_piece;
        s.ints = {d, pick(0, n - 1)};
        return s;
    }
  }

  std::optional<Step> draw_op(Kind kind) {
    bool in_place = kind == Kind::inplace || kind == Kind::metadata;
    std::optional<int> ai = draw_operand(in_place);
    if (!ai) return std::nullopt;
    const Tensor& a = values_[static_cast<size_t>(*ai)];
    Step s;
    s.a = *ai;
    switch (kind) {
      case Kind::unary:
        if (generator_ >= 2 && chance(0.25)) return draw_second_generator_value(a, s);
        s.op = one_of(
            std::vector<Op>{Op::neg, Op::sin, Op::cos, Op::tanh, Op::sigmoid, Op::relu, Op::abs});
        return s;
      case Kind::binary: {
        std::optional<int> b = draw_partner(a, false);
        if (!b) return std::nullopt;
        s.op = one_of(std::vector<Op>{Op::add, Op::sub, Op::mul});
        s.b = *b;
        return s;
      }
      case Kind::scalar:
        s.op = one_of(std::vector<Op>{Op::add_scalar, Op::sub_scalar, Op::mul_scalar});
        s.scalar = draw_scalar();
        return s;
      case Kind::where: {
        if (chance(0.3)) {
          s.op = Op::gt_scalar;
          s.scalar = 0.0;
          return s;
        }
        std::optional<int> b = draw_partner(a, false);
        if (!b) return std::nullopt;
        s.op = Op::where;
        s.b = *b;
        return s;
      }
      case Kind::reduce:
        if (a.dim() == 0 || chance(0.15)) {
          s.op = Op::sum_all;
          return s;
        }
        s.op = chance(0.5) ? Op::sum_dim : Op::mean_dim;
        s.ints = {pick(0, a.dim() - 1), chance(0.5) ? 1 : 0};
        return s;
      case Kind::linalg: {
        if (a.dim() < 1 || a.dim() > 2) return std::nullopt;
        std::vector<int> fits;
        for (size_t i = 0; i < values_.size(); ++i) {
          const Tensor& b = values_[i];
          if (b.dtype() == p_.dtype && b.dim() >= 1 && b.dim() <= 2 && b.size(0) == a.size(-1) &&
              ((a.dim() == 2 && b.dim() == 2) || chance(0.5)))
            fits.push_back(static_cast<int>(i));
        }
        if (fits.empty()) return std::nullopt;
        s.b = one_of(fits);
        bool both_2d = a.dim() == 2 && values_[static_cast<size_t>(s.b)].dim() == 2;
        s.op = both_2d && chance(0.5) ? Op::mm : Op::matmul;
        return s;
      }
      case Kind::copy:
        s.op = one_of(std::vector<Op>{Op::clone, Op::contiguous, Op::detach});
        return s;
      case Kind::cat: {
        if (a.dim() < 1) return std::nullopt;
        int64_t d = pick(0, a.dim() - 1);
        std::vector<int> fits;
        for (size_t i = 0; i < values_.size(); ++i) {
          const Tensor& b = values_[i];
          if (b.dtype() != p_.dtype || b.dim() != a.dim()) continue;
          bool ok = true;
          for (int64_t k = 0; k < a.dim(); ++k) ok = ok && (k == d || a.size(k) == b.size(k));
          if (ok) fits.push_back(static_cast<int>(i));
        }
        s.op = Op::cat;
        s.b = one_of(fits);  // a itself always fits
        s.ints = {d};
        return s;
      }
      case Kind::view: {
        if (generator_ >= 2 && chance(0.2)) {
          std::optional<Step> v = draw_piece(a);
          if (v) v->a = s.a;
          return v;
        }
        Op op = one_of(std::vector<Op>{Op::view, Op::reshape, Op::transpose, Op::t, Op::permute,
                                       Op::slice, Op::slice, Op::select, Op::unsqueeze, Op::squeeze,
                                       Op::expand, Op::as_strided, Op::alias});
        std::optional<Step> v = draw_view(op, a);
        if (v) v->a = s.a;
        return v;
      }
      case Kind::inplace: {
        if (generator_ >= 2 && chance(0.2)) {
          s.op =
              one_of(std::vector<Op>{Op::div_scalar_, Op::leaky_relu_, Op::silu_, Op::hardtanh_});
          if (s.op == Op::div_scalar_) s.scalar = one_of(std::vector<double>{2.0, -0.5, 4.0});
          return s;
        }
        s.op = one_of(std::vector<Op>{Op::add_, Op::sub_, Op::mul_, Op::copy_, Op::add_, Op::copy_,
                                      Op::add_scalar_, Op::mul_scalar_, Op::zero_, Op::fill_,
                                      Op::relu_, Op::sigmoid_, Op::tanh_});
        if (row(s.op).form == Form::method_tensor) {
          std::optional<int> b = draw_partner(a, true);
          if (!b) return std::nullopt;
          s.b = *b;
        }
        if (row(s.op).form == Form::method_scalar) s.scalar = draw_scalar();
        return s;
      }
      case Kind::metadata: {
        Op op = one_of(std::vector<Op>{Op::t_, Op::transpose_, Op::unsqueeze_, Op::squeeze_});
        std::optional<Step> v = draw_view(op, a);
        if (v) v->a = s.a;
        return v;
      }
    }
    return std::nullopt;
  }

  Kind draw_kind() {
    static const std::vector<std::pair<Kind, int>> kWeights = {
        {Kind::unary, 9},  {Kind::binary, 11},  {Kind::scalar, 6},  {Kind::where, 4},
        {Kind::reduce, 6}, {Kind::linalg, 5},   {Kind::copy, 5},    {Kind::cat, 3},
        {Kind::view, 22},  {Kind::inplace, 22}, {Kind::metadata, 5}};
    int total = 0;
    for (const auto& [k, w] : kWeights) total += w;
    int64_t x = pick(0, total - 1);
    for (const auto& [k, w] : kWeights) {
      if (x < w) return k;
      x -= w;
    }
    return Kind::unary;
  }

  void draw_step() {
    if (no_grad_left_ == 0 && chance(0.07)) no_grad_left_ = pick(1, 3);
    std::optional<Step> s = draw_op(draw_kind());
    if (!s) return;
    s->no_grad = no_grad_left_ > 0;
    p_.steps.push_back(*s);
    size_t before = values_.size();
    bool ok = true;
    try {
      apply_step(*s, values_);
      if (values_.size() > before)
        ok = values_.back().dim() <= kMaxDims && values_.back().numel() <= kMaxNumel;
    } catch (const std::exception&) {
      ok = false;
    }
    if (!ok) {
      p_.steps.pop_back();
      rebuild();  // a refused op may have changed its operands before raising
      return;
    }
    if (no_grad_left_ > 0) --no_grad_left_;
  }

  void draw_outputs() {
    for (int64_t k = pick(1, 4); k > 0; --k) {
      int64_t n = static_cast<int64_t>(values_.size());
      if (chance(0.5))
        p_.outputs.push_back(static_cast<int>(n - 1 - pick(0, std::min<int64_t>(2, n - 1))));
      else if (chance(0.3))
        p_.outputs.push_back(static_cast<int>(pick(0, static_cast<int64_t>(p_.inputs.size()) - 1)));
      else
        p_.outputs.push_back(static_cast<int>(pick(0, n - 1)));
    }
  }

  std::mt19937_64 rng_;
  Program p_;
  std::vector<Tensor> values_;  // p_'s value table, eagerly, after the steps drawn so far
  int64_t no_grad_left_ = 0;
  int generator_ = 1;
};

bool all_finite(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) {
    if (!is_floating(t.dtype())) continue;
    for (double x : t.to_vector<double>())
      if (!std::isfinite(x)) return false;
  }
  return true;
}

// Eager must run the program and the oracle's backward without raising.
bool eager_accepts(const Program& p) {
  try {
    OracleSetup setup = p.make();
    std::vector<Tensor> outs = p.run(setup.inputs);
    std::vector<Tensor> all = outs;
    all.insert(all.end(), setup.inputs.begin(), setup.inputs.end());
    if (!all_finite(all)) return false;
    oracle_detail::backward_weighted(all);
    for (const Tensor& l : setup.leaves)
      if (l.grad().defined() && !all_finite({l.grad()})) return false;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::optional<Program> draw_program(uint64_t seed, int attempts, int* discarded, int generator) {
  for (int attempt = 0; attempt < attempts; ++attempt) {
    uint64_t draw_seed = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(attempt);
    Program p = ProgramGenerator(draw_seed, generator).draw(seed % 5 < 3 ? DType::f64 : DType::f32);
    p.seed = seed;
    p.attempt = attempt;
    p.generator = generator;
    if (eager_accepts(p)) return p;
    if (discarded) ++*discarded;
  }
  return std::nullopt;
}

}  // namespace aotgrad::testing::program_fuzz
