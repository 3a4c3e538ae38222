// The semantics scenario harness (issue 4, modelled on PyTorch's verify_aot_autograd): a function
// that mutates, views and aliases its inputs must behave through aot_function exactly as eagerly,
// with every partitioner, memory budget and keep_inference_input_mutations setting.
//
//   run_scenario(
//       [] { Tensor base = leaf({4, 3}, 1, false);
//            return ScenarioInputs{{base.slice(0, 0, 3), base.slice(0, 1, 4)}, {base}}; },
//       [](const TensorList& a) { Tensor x = a[0]; x.mul_(2.0); return a[1].sum(); });
//
// make_inputs builds the call's inputs from scratch each time (ScenarioInputs: the arguments,
// plus the bases and leaves they were derived from, which are checked too), so the aliasing
// structure of the inputs (views of one base, one tensor passed twice) is reproduced exactly on
// every side. For every configuration the harness runs eager on one setup and the compiled
// function on another, twice (the second compiled call must reuse the specialization), and adds
// a non-fatal failure, tagged with the configuration, for every difference in (and once more
// through the function's Artifact, serialized, read back and instantiated):
//   - outputs: count, defined-ness, dtype, sizes, strides, storage offset, values, requires_grad,
//     is_leaf, grad_fn defined-ness;
//   - aliasing: which outputs share storage with which setup tensors and with each other, which
//     are the very same tensor, and which tensor each output's _base is (a setup tensor, another
//     output, or one intermediate shared with the same outputs);
//   - the setup after the call: values, requires_grad, is_leaf, grad_fn defined-ness, and whether
//     each version counter moved (moved or not: exact counts may differ legitimately);
//   - gradients: backward() of a deterministic weighted sum of the outputs that require grad and
//     of the mutated setup tensors that require grad and are not views, then .grad() of every
//     leaf of the setup;
//   - (by default) mutating every output in place afterwards: the same outputs and setup tensors
//     change, or both sides raise.
// Eager is the oracle: a scenario whose eager run throws is reported. expect_raises_like_eager
// covers functions that raise eagerly, expect_unsupported the cases aotgrad refuses on purpose.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "partition/registry.h"
#include "testing/call_site.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"

namespace aotgrad::testing {

using TensorList = std::vector<Tensor>;

// Deterministic f64 tensors for setups (values in [-1, 1)), and integer / bool ones.
inline Tensor leaf(const IntList& sizes, uint64_t seed, bool requires_grad = true) {
  return test_input(sizes, -1.0, 1.0, seed, requires_grad);
}
inline Tensor longs(const std::vector<int64_t>& values, const IntList& sizes) {
  return from_vector(values, sizes);
}
inline Tensor bools(const std::vector<bool>& values, const IntList& sizes) {
  return from_vector(values, sizes);
}

// The inputs of one call: `args` go to the function; `extra` are the tensors they were made from
// (a base the arguments view, a leaf a non-leaf argument was computed from).
struct ScenarioInputs {
  TensorList args;
  TensorList extra;
};

// A non-leaf input that requires grad (so eager lets the function mutate it), and its leaf.
inline ScenarioInputs nonleaf_setup(const IntList& sizes, uint64_t seed) {
  Tensor l = leaf(sizes, seed);
  return ScenarioInputs{{l * 1.5}, {l}};
}

struct ScenarioOptions {
  bool no_grad = false;  // both calls run under NoGradGuard (backward still runs, outside it)
  Tolerances tol{1e-10, 1e-9};
  // Mutate each output in place after the comparison (under the call's grad mode) and compare
  // again: catches outputs that lost or gained an alias.
  bool mutate_outputs_after = true;
  // When set: whether the compiled function must have chosen an inference graph.
  std::optional<bool> expect_inference;
};

struct ScenarioConfig {
  std::string partitioner;
  double budget = 1.0;
  bool keep_inference_input_mutations = false;
  std::string name() const {
    return partitioner + (partitioner == "min_cut" ? " budget=" + std::to_string(budget) : "") +
           (keep_inference_input_mutations ? " keep_inference_input_mutations" : "");
  }
  AotConfig aot() const {
    AotConfig c;
    c.partitioner = partitioner;
    c.activation_memory_budget = budget;
    c.keep_inference_input_mutations = keep_inference_input_mutations;
    c.name = "scenario";
    // AOTGRAD_TEST_COMPILER=cpp runs every scenario under that backend (the cpp backend's check).
    if (const char* compiler = std::getenv("AOTGRAD_TEST_COMPILER"); compiler && *compiler)
      c.fw_compiler = compiler;
    return c;
  }
};

// Every partitioner (min_cut at budgets 1 and 0), each with keep_inference_input_mutations off
// and on.
inline std::vector<ScenarioConfig> scenario_configs() {
  std::vector<ScenarioConfig> out;
  for (const std::string& p : partition::partitioner_names()) {
    std::vector<double> budgets =
        p == "min_cut" ? std::vector<double>{1.0, 0.0} : std::vector<double>{1.0};
    for (double b : budgets)
      for (bool keep : {false, true}) out.push_back({p, b, keep});
  }
  return out;
}

namespace scenario_detail {

template <typename Make>
ScenarioInputs make_setup(const Make& make) {
  using R = std::decay_t<std::invoke_result_t<const Make&>>;
  if constexpr (std::is_same_v<R, ScenarioInputs>)
    return make();
  else
    return ScenarioInputs{TensorList(make()), {}};
}

inline std::string error_kind(const std::exception& e) {
  if (dynamic_cast<const std::runtime_error*>(&e)) return "std::runtime_error";
  if (dynamic_cast<const std::logic_error*>(&e)) return "std::logic_error";
  return "std::exception";
}

// One side of a call: the setup, the outputs, and the versions before the call.
struct Side {
  ScenarioInputs setup;
  TensorList outs;
  std::vector<uint64_t> versions_before;
  TensorList known() const {  // the setup's tensors: arguments, then extras
    TensorList k = setup.args;
    k.insert(k.end(), setup.extra.begin(), setup.extra.end());
    return k;
  }
};

inline size_t failure_count() {
  return static_cast<size_t>(
      ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count());
}

inline std::vector<uint64_t> versions_of(const TensorList& ts) {
  std::vector<uint64_t> v;
  for (const Tensor& t : ts) v.push_back(t.defined() ? t.version() : 0);
  return v;
}

inline int find_same(const TensorList& ts, const Tensor& t) {
  for (size_t i = 0; i < ts.size(); ++i)
    if (ts[i].defined() && ts[i].is_same(t)) return static_cast<int>(i);
  return -1;
}

inline std::string name_of(size_t k, size_t num_setup) {
  return k < num_setup ? "setup tensor " + std::to_string(k)
                       : "output " + std::to_string(k - num_setup);
}

// Autograd flags, and the storage offset (which expect_same_tensor leaves out; a view replayed
// from the wrong base or an as_strided_ not applied back shows here).
inline void expect_same_flags(const Tensor& c, const Tensor& e, const std::string& what) {
  if (!c.defined() || !e.defined()) return;
  EXPECT_EQ(c.storage_offset(), e.storage_offset()) << what << ": storage_offset";
  EXPECT_EQ(c.requires_grad(), e.requires_grad()) << what << ": requires_grad";
  EXPECT_EQ(c.is_leaf(), e.is_leaf()) << what << ": is_leaf";
  EXPECT_EQ(c.grad_fn() != nullptr, e.grad_fn() != nullptr) << what << ": grad_fn defined";
}

// Outputs and setup tensors: values, geometry, autograd flags.
inline void compare_values(const Side& c, const Side& e, const Tolerances& tol,
                           const std::string& when) {
  TensorList ck = c.known(), ek = e.known();
  for (size_t i = 0; i < ek.size(); ++i) {
    std::string what = when + "setup tensor " + std::to_string(i);
    compare_detail::expect_same_tensor(ck[i], ek[i], what, tol, false);
    expect_same_flags(ck[i], ek[i], what);
  }
  for (size_t i = 0; i < e.outs.size() && i < c.outs.size(); ++i) {
    std::string what = when + "output " + std::to_string(i);
    compare_detail::expect_same_tensor(c.outs[i], e.outs[i], what, tol, false);
    expect_same_flags(c.outs[i], e.outs[i], what);
  }
}

// Which outputs alias which setup tensors and each other, and through which _base.
inline void compare_aliasing(const Side& c, const Side& e, const std::string& when) {
  TensorList ck = c.known(), ek = e.known();
  const size_t ns = ek.size();
  ck.insert(ck.end(), c.outs.begin(), c.outs.end());
  ek.insert(ek.end(), e.outs.begin(), e.outs.end());
  for (size_t o = ns; o < ek.size(); ++o) {
    if (!ek[o].defined() || !ck[o].defined()) continue;
    for (size_t k = 0; k < o; ++k) {
      if (!ek[k].defined() || !ck[k].defined()) continue;
      std::string pair = when + name_of(o, ns) + " and " + name_of(k, ns);
      EXPECT_EQ(ck[o].storage() == ck[k].storage(), ek[o].storage() == ek[k].storage())
          << pair << ": shares storage (compiled " << (ck[o].storage() == ck[k].storage())
          << ", eager " << (ek[o].storage() == ek[k].storage()) << ")";
      EXPECT_EQ(ck[o].is_same(ck[k]), ek[o].is_same(ek[k])) << pair << ": is the same tensor";
    }
    std::string what = when + name_of(o, ns);
    EXPECT_EQ(ck[o].is_view(), ek[o].is_view()) << what << ": is a view (has _base)";
    if (!ek[o].is_view() || !ck[o].is_view()) continue;
    Tensor eb = ek[o]._base(), cb = ck[o]._base();
    int ei = find_same(ek, eb), ci = find_same(ck, cb);
    EXPECT_EQ(ci, ei) << what << ": _base is " << (ci < 0 ? "an intermediate" : name_of(ci, ns))
                      << " compiled, " << (ei < 0 ? "an intermediate" : name_of(ei, ns))
                      << " eager";
    if (ei >= 0 || ci >= 0) continue;
    for (size_t p = ns; p < o; ++p) {  // outputs sharing one intermediate _base
      if (!ek[p].defined() || !ck[p].defined() || !ek[p].is_view() || !ck[p].is_view()) continue;
      EXPECT_EQ(ck[p]._base().is_same(cb), ek[p]._base().is_same(eb))
          << what << " and " << name_of(p, ns) << ": same intermediate _base";
    }
  }
}

inline void compare_versions(const Side& c, const Side& e, const std::string& when) {
  TensorList ck = c.known(), ek = e.known();
  for (size_t i = 0; i < ek.size(); ++i) {
    if (!ek[i].defined() || !ck[i].defined()) continue;
    bool eager_bumped = ek[i].version() != e.versions_before[i];
    bool compiled_bumped = ck[i].version() != c.versions_before[i];
    EXPECT_EQ(compiled_bumped, eager_bumped)
        << when << "setup tensor " << i << ": version counter " << (eager_bumped ? "" : "not ")
        << "bumped by eager, " << (compiled_bumped ? "" : "not ") << "by compiled (eager "
        << e.versions_before[i] << " -> " << ek[i].version() << ", compiled "
        << c.versions_before[i] << " -> " << ck[i].version() << ")";
  }
}

// backward() from the outputs that require grad and the mutated setup tensors that require grad
// that are not views (non-leaves: their grad_fn now includes the mutation). Returns the error
// message, if any.
inline std::string backward_of(const Side& s) {
  TensorList roots, grads;
  for (size_t i = 0; i < s.outs.size(); ++i)
    if (s.outs[i].defined() && s.outs[i].requires_grad()) {
      roots.push_back(s.outs[i]);
      grads.push_back(compare_detail::grad_output_for(s.outs[i], i));
    }
  TensorList k = s.known();
  // Mutated inputs that require grad, views included (their history follows the base's).
  for (size_t i = 0; i < k.size(); ++i)
    if (k[i].defined() && k[i].requires_grad() && !k[i].is_leaf() &&
        k[i].version() != s.versions_before[i]) {
      roots.push_back(k[i]);
      grads.push_back(compare_detail::grad_output_for(k[i], 100 + i));
    }
  if (roots.empty()) return "";
  try {
    autograd::backward(roots, grads);
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
  return "";
}

inline void compare_gradients(const Side& c, const Side& e, const Tolerances& tol,
                              const std::string& when, const std::string& backward_graph) {
  std::string eerr = backward_of(e), cerr = backward_of(c);
  EXPECT_EQ(cerr.empty(), eerr.empty())
      << when << "backward: compiled " << (cerr.empty() ? "ran" : cerr) << "; eager "
      << (eerr.empty() ? "ran" : eerr) << "\nbackward graph:\n"
      << backward_graph;
  TensorList ck = c.known(), ek = e.known();
  for (size_t i = 0; i < ek.size(); ++i)
    if (ek[i].defined() && ck[i].defined() && ek[i].is_leaf() && ck[i].is_leaf())
      compare_detail::expect_same_tensor(ck[i].grad(), ek[i].grad(),
                                         when + "grad of setup tensor " + std::to_string(i), tol,
                                         false);
}

// In-place on every output (eager's error, if any, must be raised by both).
inline std::string mutate_outputs(Side& s, bool no_grad) {
  std::optional<NoGradGuard> guard;
  if (no_grad) guard.emplace();
  try {
    for (Tensor& o : s.outs)
      if (o.defined()) {
        if (is_floating(o.dtype()))
          o.mul_(-2.0);
        else if (o.dtype() == DType::b8)
          o.fill_(true);
        else
          o.add_(3);
      }
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
  return "";
}

// serialize → deserialize → instantiate; false (with a failure) when the bytes do not read back
// to an artifact that serializes to the same bytes and prints the same graphs.
inline bool restore_artifact(const Artifact& a, std::optional<CompiledArtifact>& out) {
  std::string bytes = serialize_artifact(a);
  try {
    Artifact b = deserialize_artifact(bytes);
    EXPECT_TRUE(serialize_artifact(b) == bytes) << "the artifact did not re-serialize exactly";
    CompiledGraphs ga = a.graphs(), gb = b.graphs();
    EXPECT_EQ(gb.forward + gb.backward + gb.joint + gb.inference + gb.meta + gb.saved_report,
              ga.forward + ga.backward + ga.joint + ga.inference + ga.meta + ga.saved_report);
    EXPECT_TRUE(gb.forward_descriptors == ga.forward_descriptors &&
                gb.backward_descriptors == ga.backward_descriptors &&
                gb.inference_descriptors == ga.inference_descriptors)
        << "descriptors changed through serialization";
    out.emplace(instantiate(b));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the artifact did not round-trip: " << e.what();
    return false;
  }
  return true;
}

template <typename F>
TensorList call_flat(F& fn, const TensorList& args, bool no_grad, std::string& error) {
  std::optional<NoGradGuard> guard;
  if (no_grad) guard.emplace();
  try {
    return compare_detail::flatten_result(fn(args));
  } catch (const std::exception& e) {
    error = e.what();
    return {};
  }
}

}  // namespace scenario_detail

// Runs `fn` eagerly and compiled under every configuration and compares everything (see top).
template <typename Make, typename F>
void run_scenario(Make make_inputs, F fn, ScenarioOptions opts = {},
                  CallSite loc = CallSite::current()) {
  namespace sd = scenario_detail;
  ::testing::ScopedTrace trace(loc.file_name(), loc.line_number(), "scenario");
  for (const ScenarioConfig& cfg : scenario_configs()) {
    SCOPED_TRACE(cfg.name());
    auto compiled_fn = aot_function(fn, cfg.aot());
    // Call 3 runs the artifact of the first two, serialized, read back and instantiated: it must
    // behave exactly as the compiled function did, and serialize to the same bytes.
    std::optional<CompiledArtifact> restored;
    auto restored_fn = [&](const TensorList& args) { return (*restored)(args); };
    for (int call = 1; call <= 3; ++call) {
      std::string when = call == 1 ? "" : call == 2 ? "[second call] " : "[restored artifact] ";
      if (call == 3 && !sd::restore_artifact(compiled_fn.artifact(), restored)) return;
      sd::Side e, c;
      e.setup = sd::make_setup(make_inputs);
      c.setup = sd::make_setup(make_inputs);
      e.versions_before = sd::versions_of(e.known());
      c.versions_before = sd::versions_of(c.known());
      std::string eerr, cerr;
      e.outs = sd::call_flat(fn, e.setup.args, opts.no_grad, eerr);
      if (!eerr.empty()) {
        ADD_FAILURE() << "the eager function threw: " << eerr;
        return;
      }
      c.outs = call == 3 ? sd::call_flat(restored_fn, c.setup.args, opts.no_grad, cerr)
                         : sd::call_flat(compiled_fn, c.setup.args, opts.no_grad, cerr);
      if (!cerr.empty()) {
        ADD_FAILURE() << when << "the compiled function threw: " << cerr;
        break;
      }
      CompiledGraphs g = call == 3 ? restored->artifact().graphs() : compiled_fn.graphs();
      std::string graphs = "\nforward:\n" + g.forward + "inference:\n" + g.inference + g.meta;
      if (c.outs.size() != e.outs.size()) {
        ADD_FAILURE() << when << "compiled returned " << c.outs.size() << " outputs, eager "
                      << e.outs.size() << graphs;
        break;
      }
      size_t failures = sd::failure_count();
      sd::compare_values(c, e, opts.tol, when);
      sd::compare_aliasing(c, e, when);
      sd::compare_versions(c, e, when);
      if (opts.expect_inference) {
        EXPECT_EQ(g.is_inference, *opts.expect_inference) << "kind of graph" << graphs;
      }
      if (call == 2) {
        EXPECT_EQ(compiled_fn.num_compilations(), 1u)
            << "the second call with the same setup recompiled";
      }
      sd::compare_gradients(c, e, opts.tol, when, g.backward);
      if (opts.mutate_outputs_after) {
        std::string em = sd::mutate_outputs(e, opts.no_grad),
                    cm = sd::mutate_outputs(c, opts.no_grad);
        EXPECT_EQ(cm.empty(), em.empty())
            << when << "mutating the outputs afterwards: compiled " << (cm.empty() ? "ran" : cm)
            << "; eager " << (em.empty() ? "ran" : em);
        if (cm.empty() && em.empty())
          sd::compare_values(c, e, opts.tol, when + "[outputs mutated] ");
      }
      size_t now = sd::failure_count();
      if (now != failures) {
        ADD_FAILURE() << "graphs of the failing configuration:" << graphs;
        return;  // one configuration's report is enough to read
      }
      compare_detail::expect_graph_text_round_trips(g.forward, "forward");
      compare_detail::expect_graph_text_round_trips(g.backward, "backward");
      compare_detail::expect_graph_text_round_trips(g.inference, "inference");
    }
  }
}

// Eager raises; the compiled function must raise the same kind of error (std::runtime_error or
// std::logic_error) with a message containing `needle`, under every configuration.
template <typename Make, typename F>
void expect_raises_like_eager(Make make_inputs, F fn, const std::string& needle,
                              ScenarioOptions opts = {}, CallSite loc = CallSite::current()) {
  namespace sd = scenario_detail;
  ::testing::ScopedTrace trace(loc.file_name(), loc.line_number(), "raising scenario");
  std::string eager_kind;
  try {
    ScenarioInputs s = sd::make_setup(make_inputs);
    std::optional<NoGradGuard> guard;
    if (opts.no_grad) guard.emplace();
    fn(s.args);
  } catch (const std::exception& e) {
    eager_kind = sd::error_kind(e);
  }
  if (eager_kind.empty()) {
    ADD_FAILURE() << "the eager function did not raise";
    return;
  }
  for (const ScenarioConfig& cfg : scenario_configs()) {
    SCOPED_TRACE(cfg.name());
    auto compiled_fn = aot_function(fn, cfg.aot());
    ScenarioInputs s = sd::make_setup(make_inputs);
    try {
      std::optional<NoGradGuard> guard;
      if (opts.no_grad) guard.emplace();
      compiled_fn(s.args);
      ADD_FAILURE() << "the compiled function did not raise (eager raised " << eager_kind << ")";
    } catch (const std::exception& e) {
      EXPECT_EQ(sd::error_kind(e), eager_kind) << "message: " << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "message does not mention '" << needle << "': " << e.what();
    }
  }
}

// A case aotgrad does not support: eager runs, the compiled function must raise a clear error (a
// message containing `needle`) rather than return anything.
template <typename Make, typename F>
void expect_unsupported(Make make_inputs, F fn, const std::string& needle,
                        ScenarioOptions opts = {}, CallSite loc = CallSite::current()) {
  namespace sd = scenario_detail;
  ::testing::ScopedTrace trace(loc.file_name(), loc.line_number(), "unsupported scenario");
  for (const ScenarioConfig& cfg : scenario_configs()) {
    SCOPED_TRACE(cfg.name());
    auto compiled_fn = aot_function(fn, cfg.aot());
    ScenarioInputs s = sd::make_setup(make_inputs);
    try {
      std::optional<NoGradGuard> guard;
      if (opts.no_grad) guard.emplace();
      compiled_fn(s.args);
      ADD_FAILURE() << "the compiled function did not raise";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "message does not mention '" << needle << "': " << e.what();
    }
  }
}

}  // namespace aotgrad::testing
