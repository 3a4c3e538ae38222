// A differential fuzzer for the second and later calls of a compiled function, for its caches and
// for the memory budget (what a fuzzer that compiles a fresh function per program cannot see):
//
//  - Respecialization: one aot_function is called many times with inputs whose properties change
//    between calls (respecialize_fuzz.h: shapes, strides, storage offsets, dtypes, requires_grad,
//    leaf or not, one tensor passed twice, overlapping or disjoint views of one base, grad mode,
//    the scalar argument's type and value). Every call must match eager (eager_oracle.h) on
//    outputs, input mutations and gradients, whether it compiled or reused a specialization; a
//    call like an earlier compiled one must reuse it; the previous call's Artifact, instantiated,
//    must refuse or match eager on this call's inputs.
//  - Caches: a fresh function (as in a new process: its specialization cache is empty) replays
//    compiled calls from the on-disk AOTAutogradCache (AOTGRAD_CACHE_DIR, one directory per
//    program) bit for bit; a call whose guards no earlier compile had must not hit it.
//  - Memory budget: random small training functions under min_cut at random budgets in [0, 1]:
//    gradients match eager, and the saved activation bytes never grow as the budget shrinks.
//
// Each runs under the interpreter and the cpp compiler. CI runs fixed seeds (a few seconds in a
// release build); AOTGRAD_RESPEC_FUZZ_N=N runs N more programs of each kind, seeds from
// AOTGRAD_RESPEC_FUZZ_SEED (default 1), every fourth under cpp.
#include "respecialize_fuzz.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "eager_oracle.h"

namespace {

namespace ag = aotgrad;
namespace od = aotgrad::testing::oracle_detail;
using ag::Tensor;
using namespace aotgrad::testing::respec;

int pick(std::mt19937_64& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// Points AOTGRAD_CACHE_DIR at a fresh directory while alive, and puts the old value back.
class ScopedCacheDir {
 public:
  explicit ScopedCacheDir(const std::string& tag) {
    if (const char* old = std::getenv("AOTGRAD_CACHE_DIR")) old_ = old;
    dir_ = std::filesystem::temp_directory_path() /
           ("aotgrad_respec_" + std::to_string(::getpid()) + "_" + tag);
    std::filesystem::remove_all(dir_);
    ::setenv("AOTGRAD_CACHE_DIR", dir_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (old_)
      ::setenv("AOTGRAD_CACHE_DIR", old_->c_str(), 1);
    else
      ::unsetenv("AOTGRAD_CACHE_DIR");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  std::filesystem::path dir_;
  std::optional<std::string> old_;
};

// ---- one call, eager and compiled ----

struct CallResult {
  od::Run e, c;
  std::optional<std::string> eager_error, compiled_error;
};

template <typename Compiled>
CallResult run_both(const CallSpec& s, const Body& body, const Compiled& compiled) {
  auto make = [&] { return make_setup(s); };
  CallResult r{od::prepare(make), od::prepare(make), {}, {}};
  try {
    r.e.outs = call_spec(s, body, r.e.setup.inputs);
  } catch (const std::exception& ex) {
    r.eager_error = ex.what();
  }
  try {
    r.c.outs = call_spec(s, compiled, r.c.setup.inputs);
  } catch (const std::exception& ex) {
    r.compiled_error = ex.what();
  }
  return r;
}

// aotgrad refuses, on purpose and with these messages, to write into one of several overlapping
// inputs that require grad and do not view one common base (aot/input_plan.h, Unmergeable), and
// some uses of an input whose sizes changed under no_grad (body 6: a leaf used in several sizes,
// a leaf another input views, a view of it used after; docs/fuzzing.md lists them).
bool refused_on_purpose(const CallSpec& s, const std::string& error) {
  auto says = [&](const char* text) { return error.find(text) != std::string::npos; };
  return (s.alias == Alias::overlapping_storage && says("overlap in memory")) ||
         (says("changed in place under no_grad") && says("Change the geometry before the call"));
}

// Whether autograd refuses to record an op on one of the run's outputs or inputs, and why.
std::optional<std::string> differentiation_refused(const od::Run& r) {
  std::vector<Tensor> ts = r.outs;
  ts.insert(ts.end(), r.setup.inputs.begin(), r.setup.inputs.end());
  try {
    for (const Tensor& t : ts)
      if (t.defined() && t.requires_grad()) (void)(t * 1.0);
  } catch (const std::exception& ex) {
    return std::string(ex.what());
  }
  return std::nullopt;
}

// Adds a failure for every difference from eager; true when both sides ran (so there is a
// compiled result to keep).
bool check_like_eager(CallResult& r, const CallSpec& s, const std::string& where) {
  if (r.eager_error && r.compiled_error) return false;
  if (r.compiled_error && refused_on_purpose(s, *r.compiled_error)) return false;
  if (r.eager_error || r.compiled_error) {
    ADD_FAILURE() << where << "\neager " << (r.eager_error ? "threw: " + *r.eager_error : "ran")
                  << "\ncompiled " << (r.compiled_error ? "threw: " + *r.compiled_error : "ran");
    return false;
  }
  const bool f32_inputs =
      s.dtype_a == ag::DType::f32 || (s.alias == Alias::independent && s.dtype_b == ag::DType::f32);
  od::compare_runs(r.c, r.e, where, ag::testing::OracleTolerances{.f32_inputs = f32_inputs});
  // Recording an op on a view made under no_grad whose storage was written since raises
  // PyTorch's error (view_creation.h); then there is no backward to compare, on either side.
  std::optional<std::string> eager_refusal = differentiation_refused(r.e),
                             compiled_refusal = differentiation_refused(r.c);
  if (eager_refusal && compiled_refusal) return true;
  if (eager_refusal || compiled_refusal) {
    ADD_FAILURE() << where << "\ndifferentiating the results: eager "
                  << (eager_refusal ? "threw: " + *eager_refusal : "ran") << "\ncompiled "
                  << (compiled_refusal ? "threw: " + *compiled_refusal : "ran");
    return true;
  }
  try {
    od::compare_grads(r.c, r.e, where, ag::testing::OracleTolerances{.f32_inputs = f32_inputs});
  } catch (const std::exception& ex) {
    ADD_FAILURE() << where << "\nbackward threw: " << ex.what();
  }
  return true;
}

// A run's results as bytes (geometry and data), after its backward: outputs, inputs, leaf grads.
std::vector<std::string> snapshot(const od::Run& r) {
  auto bytes = [](const Tensor& t) {
    if (!t.defined()) return std::string("undefined");
    Tensor c = t.detach().contiguous();
    std::string s = std::string(ag::dtype_name(t.dtype())) + ag::shape_to_string(t.sizes()) +
                    ag::shape_to_string(t.strides()) + "@" + std::to_string(t.storage_offset());
    s.append(static_cast<const char*>(c.data_ptr()),
             static_cast<size_t>(c.numel()) * ag::itemsize(c.dtype()));
    return s;
  };
  std::vector<std::string> out;
  for (const Tensor& t : r.outs) out.push_back(bytes(t));
  for (const Tensor& t : r.setup.inputs) out.push_back(bytes(t));
  for (const Tensor& t : r.setup.leaves) out.push_back(bytes(t.grad()));
  return out;
}

// ---- respecialization and caches ----

struct Program {
  uint64_t seed = 0;
  Body body;
  ag::AotConfig config;
  std::string header() const {
    return "seed " + std::to_string(seed) + ", " + config.fw_compiler + ", " + config.partitioner +
           ", cache_size_limit " + std::to_string(config.cache_size_limit) + ", body " +
           std::to_string(body.which) + ": " + describe_body(body.which);
  }
};

Program draw_program(uint64_t seed, const std::string& compiler, std::mt19937_64& rng) {
  Program p;
  p.seed = seed;
  p.body.which = pick(rng, 0, Body::kCount - 1);
  p.config.fw_compiler = compiler;
  p.config.partitioner = pick(rng, 0, 1) ? "min_cut" : "default";
  p.config.cache_size_limit = pick(rng, 0, 3) ? 64 : 3;
  p.config.name = "respec";
  return p;
}

struct CompiledCall {
  CallSpec spec;
  std::vector<std::string> results;
};

// The previous call's artifact, instantiated, on this call's inputs: a refusal when the guards
// differ, otherwise eager's results (the same check as the function's own cache, made by
// CompiledArtifact's).
void check_artifact_on(const ag::CompiledArtifact& artifact, const CallSpec& compiled_for,
                       const CallSpec& s, const Body& body, const std::string& where) {
  if (s.scalar_type != compiled_for.scalar_type || s.scalar != compiled_for.scalar ||
      std::signbit(s.scalar) != std::signbit(compiled_for.scalar))
    return;  // the scalar is baked into the artifact, which cannot see this call's
  auto run = [&](const Tensor& a, const Tensor& b, auto) { return artifact({a, b}); };
  CallResult r = run_both(s, body, run);
  if (r.compiled_error && r.compiled_error->rfind("artifact '", 0) == 0) {
    EXPECT_NE(s.identity(), compiled_for.identity())
        << where << "\nthe artifact refused the call it was compiled for: " << *r.compiled_error;
    return;
  }
  check_like_eager(r, s, where + "\n(through the previous call's instantiated artifact)");
}

// A fresh function replays `call` from the disk cache bit for bit, then a call whose coarse
// guards no compile had misses it and matches eager.
void check_disk_cache(const Program& p, const CompiledCall& call,
                      std::set<std::string>& coarse_keys_compiled, std::mt19937_64& rng,
                      const std::string& history) {
  std::string where = p.header() + "\nfresh function replaying " + call.spec.describe() + history;
  auto fresh = ag::aot_function(p.body, p.config);
  CallResult r = run_both(call.spec, p.body, fresh);
  if (!check_like_eager(r, call.spec, where)) return;
  EXPECT_EQ(fresh.stats().disk_hits, 1u) << where << "\nthe artifact cache did not hit";
  EXPECT_TRUE(snapshot(r.c) == call.results)
      << where << "\nresults differ from the compiling call's, bit for bit";

  CallSpec other = vary_one(call.spec, rng);
  std::string key = coarse_key(other, make_setup(other).inputs);
  auto fresh2 = ag::aot_function(p.body, p.config);
  where = p.header() + "\nfresh function, new guards " + other.describe() + history;
  CallResult r2 = run_both(other, p.body, fresh2);
  check_like_eager(r2, other, where);
  if (!coarse_keys_compiled.count(key)) {
    EXPECT_EQ(fresh2.stats().disk_hits, 0u)
        << where << "\nhit the artifact cache with guards no earlier compile had";
  }
  if (fresh2.stats().entries > 0) coarse_keys_compiled.insert(key);
}

void fuzz_respecialization(uint64_t seed, const std::string& compiler, int calls) {
  std::mt19937_64 rng(seed);
  Program p = draw_program(seed, compiler, rng);
  ScopedCacheDir cache_dir("s" + std::to_string(seed) + compiler);
  auto f = ag::aot_function(p.body, p.config);
  std::string history;
  std::set<std::string> compiled_identities, coarse_keys_compiled;
  std::vector<CallSpec> seen;
  std::vector<CompiledCall> compiled_calls;
  std::optional<std::pair<CallSpec, ag::CompiledArtifact>> previous;
  CallSpec s = random_spec(rng);
  for (int k = 0; k < calls; ++k) {
    if (k > 0) {
      int how = pick(rng, 0, 9);
      if (how < 3) {
        s = seen[pick(rng, 0, static_cast<int>(seen.size()) - 1)];
        s.values = static_cast<uint64_t>(pick(rng, 1, 1000));
      } else if (how < 9) {
        s = vary_one(s, rng);
      } else {
        s = random_spec(rng);
      }
    }
    seen.push_back(s);
    history += "\n  call " + std::to_string(k) + ": " + s.describe();
    std::string where = p.header() + history;
    ag::CacheStats before = f.stats();
    CallResult r = run_both(s, p.body, f);
    ag::CacheStats after = f.stats();
    bool ran = check_like_eager(r, s, where);
    if (compiled_identities.count(s.identity())) {
      EXPECT_EQ(after.hits, before.hits + 1)
          << where << "\nthe same call as an earlier compiled one did not reuse its specialization";
    }
    bool compiled = after.entries > before.entries || after.hits > before.hits;
    if (compiled) {
      compiled_identities.insert(s.identity());
      coarse_keys_compiled.insert(coarse_key(s, make_setup(s).inputs));
    }
    if (previous) check_artifact_on(previous->second, previous->first, s, p.body, where);
    if (ran && compiled) previous.emplace(s, ag::instantiate(f.artifact()));
    // Only a call that compiled stored its own artifact: one that reused another call's
    // specialization may differ from it in what the artifact records but no guard holds (which
    // inputs are leaves), and so in its on-disk key.
    if (ran && after.entries > before.entries) compiled_calls.push_back({s, snapshot(r.c)});
    if (::testing::Test::HasFailure()) return;
  }
  for (int replay = 0; replay < 2 && !compiled_calls.empty(); ++replay) {
    const CompiledCall& c =
        compiled_calls[pick(rng, 0, static_cast<int>(compiled_calls.size()) - 1)];
    check_disk_cache(p, c, coarse_keys_compiled, rng, history);
    if (::testing::Test::HasFailure()) return;
  }
}

// ---- memory budget ----

// A small training step: x @ w1, then a random chain of ops on the [m, n] activation, then a
// scalar loss. Ops are numbers so the program prints and the function captures no tensor.
struct TrainingStep {
  std::vector<int> ops;
  static constexpr int kOps = 15;

  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
    const Tensor &x = in[0], &w1 = in[1], &w2 = in[2], &gamma = in[3], &beta = in[4];
    const int64_t m = x.size(0), n = w1.size(1);
    Tensor h = ag::matmul(x, w1), residual = h;
    for (int op : ops) {
      switch (op) {
        case 0:
          h = h.tanh();
          break;
        case 1:
          h = h.sigmoid();
          break;
        case 2:
          h = h.relu();
          break;
        case 3:
          h = h * gamma;
          break;
        case 4:
          h = h + beta;
          break;
        case 5:
          h = ag::matmul(h, w2);
          break;
        case 6:
          h = ag::softmax(h, -1);
          break;
        case 7:
          h = ag::layer_norm(h, {n}, gamma, beta);
          break;
        case 8:
          h = h - h.mean({1}, true);
          break;
        case 9:
          h = h.reshape({n, m}).t();
          break;  // views: a scrambled, transposed [m, n]
        case 10:
          h = h * 1.5;
          ag::tanh_(h);
          break;  // in place on an intermediate
        case 11:
          h = h * 1.0;
          h.mul_(gamma);
          break;  // in place, broadcasting a weight
        case 12:
          h = h + residual;
          residual = h;
          break;  // a residual connection
        case 13:
          h = (h * h).sum({1}, true) * h;
          break;  // a reduction broadcast back
        default:
          h = h.clone();
          h.select(1, 0).mul_(2.0);
          break;  // in place through a view
      }
    }
    return {(h * h).mean()};
  }

  std::string describe() const {
    static const char* names[] = {"tanh",  "sigmoid",     "relu",       "*gamma", "+beta",
                                  "@w2",   "softmax",     "layer_norm", "-mean",  "reshape.t",
                                  "tanh_", "mul_(gamma)", "+residual",  "sum*h",  "select.mul_"};
    std::string s = "x @ w1";
    for (int op : ops) s += " -> " + std::string(names[op]);
    return s + " -> (h * h).mean()";
  }
};

std::vector<Tensor> training_inputs(int64_t m, int64_t k, int64_t n, ag::DType dtype,
                                    bool x_requires_grad) {
  std::vector<Tensor> in{values_of({m, k}, dtype, 1), values_of({k, n}, dtype, 2),
                         values_of({n, n}, dtype, 3), values_of({n}, dtype, 4),
                         values_of({n}, dtype, 5)};
  for (size_t i = 0; i < in.size(); ++i)
    if (i > 0 || x_requires_grad) in[i].requires_grad_();
  return in;
}

// The loss and the gradient of every input that requires grad.
std::vector<Tensor> loss_and_grads(
    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
    const std::vector<Tensor>& in) {
  Tensor loss = fn(in).at(0);
  loss.backward();
  std::vector<Tensor> out{loss.detach()};
  for (const Tensor& t : in)
    if (t.requires_grad()) out.push_back(t.grad());
  return out;
}

// Compiled matches eager (eager_oracle.h's tolerances); in f32, a deep chain of products and
// reductions may amplify rounding past those, so a value also passes when it is no farther from
// the f64 result than four times eager's own f32 error, plus the f32 tolerance.
::testing::AssertionResult close_to_eager(const Tensor& got, const Tensor& want,
                                          const Tensor& exact) {
  ::testing::AssertionResult close = od::close_values(got, want);
  if (close || want.dtype() != ag::DType::f32) return close;
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>(),
                      x = exact.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - x[i]) <= 4 * std::abs(w[i] - x[i]) + 1e-5 + 1.3e-6 * std::abs(x[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": compiled " << g[i] << ", eager " << w[i] << ", f64 " << x[i];
  return ::testing::AssertionSuccess();
}

void fuzz_memory_budget(uint64_t seed, const std::string& compiler, int budgets) {
  std::mt19937_64 rng(seed);
  TrainingStep step;
  for (int i = pick(rng, 2, 8); i > 0; --i)
    step.ops.push_back(pick(rng, 0, TrainingStep::kOps - 1));
  const int64_t m = pick(rng, 1, 5), k = pick(rng, 1, 5), n = pick(rng, 1, 5);
  const ag::DType dtype = pick(rng, 0, 2) ? ag::DType::f64 : ag::DType::f32;
  const bool x_requires_grad = pick(rng, 0, 1);
  std::string header = "seed " + std::to_string(seed) + ", " + compiler +
                       ", m=" + std::to_string(m) + " k=" + std::to_string(k) +
                       " n=" + std::to_string(n) + " " + std::string(ag::dtype_name(dtype)) +
                       ", x " + (x_requires_grad ? "requires grad" : "does not") + "\n" +
                       step.describe();
  auto inputs = [&] { return training_inputs(m, k, n, dtype, x_requires_grad); };
  std::vector<Tensor> want;
  try {
    want = loss_and_grads(step, inputs());
  } catch (const std::exception& ex) {
    ADD_FAILURE() << header << "\neager threw: " << ex.what();
    return;
  }
  // The same step in f64 on the same values: how far eager's own f32 rounding went.
  std::vector<Tensor> exact =
      loss_and_grads(step, training_inputs(m, k, n, ag::DType::f64, x_requires_grad));
  // The default partitioner, then min_cut at 1, at random budgets drawn in decreasing order, at 0.
  std::vector<double> draws{1.0, 0.0};
  for (int b = 0; b < budgets; ++b)
    draws.push_back(std::uniform_real_distribution<double>(0.0, 1.0)(rng));
  std::sort(draws.rbegin(), draws.rend());
  size_t previous_bytes = SIZE_MAX;
  double previous_budget = 1.0;
  for (int run = -1; run < static_cast<int>(draws.size()); ++run) {
    ag::AotConfig config;
    config.fw_compiler = compiler;
    config.name = "budget";
    if (run >= 0) {
      config.partitioner = "min_cut";
      config.activation_memory_budget = draws[run];
    }
    std::string where = header + "\n" + config.partitioner +
                        (run >= 0 ? " at budget " + std::to_string(draws[run]) : "");
    auto f = ag::aot_function(step, config);
    std::vector<Tensor> got;
    try {
      got = loss_and_grads(f, inputs());
    } catch (const std::exception& ex) {
      ADD_FAILURE() << where << "\ncompiled threw: " << ex.what();
      return;
    }
    ASSERT_EQ(got.size(), want.size()) << where;
    for (size_t i = 0; i < want.size(); ++i) {
      std::string what = where + (i == 0 ? "\nloss" : "\ngradient " + std::to_string(i));
      ASSERT_EQ(got[i].defined(), want[i].defined()) << what;
      if (want[i].defined()) {
        EXPECT_TRUE(close_to_eager(got[i], want[i], exact[i])) << what;
      }
    }
    if (run < 0) continue;
    ag::CompiledGraphs g = f.graphs();
    EXPECT_LE(g.saved_activation_bytes, previous_bytes)
        << where << "\nsaved activation bytes grew when the budget shrank from " << previous_budget
        << "\n"
        << g.saved_report;
    previous_bytes = g.saved_activation_bytes;
    previous_budget = draws[run];
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(RespecializeFuzz, FixedSeedsInterpreter) {
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    fuzz_respecialization(seed, "interpreter", 10);
    if (HasFailure()) break;
  }
}

TEST(RespecializeFuzz, FixedSeedsCpp) {
  fuzz_respecialization(101, "cpp", 4);
}

TEST(RespecializeFuzz, MemoryBudgetInterpreter) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    fuzz_memory_budget(seed, "interpreter", 3);
    if (HasFailure()) break;
  }
}

TEST(RespecializeFuzz, MemoryBudgetCpp) {
  fuzz_memory_budget(201, "cpp", 0);
}

// AOTGRAD_RESPEC_FUZZ_N=N: N more programs of each kind, seeds from AOTGRAD_RESPEC_FUZZ_SEED
// (default 1); every fourth runs under cpp. Stops at the first failing seed.
TEST(RespecializeFuzz, LongerModeFromTheEnvironment) {
  const char* n = std::getenv("AOTGRAD_RESPEC_FUZZ_N");
  if (!n) GTEST_SKIP() << "set AOTGRAD_RESPEC_FUZZ_N=N for N more programs of each kind";
  const char* s = std::getenv("AOTGRAD_RESPEC_FUZZ_SEED");
  uint64_t first = s ? std::strtoull(s, nullptr, 10) : 1;
  for (uint64_t k = 0; k < std::strtoull(n, nullptr, 10); ++k) {
    const std::string compiler = k % 4 == 3 ? "cpp" : "interpreter";
    fuzz_respecialization(first + k, compiler, 12);
    if (HasFailure()) break;
    fuzz_memory_budget(first + k, compiler, 3);
    if (HasFailure()) break;
  }
}

}  // namespace
