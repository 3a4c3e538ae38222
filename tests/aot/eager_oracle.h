// Compiled-vs-eager oracle for functions whose inputs alias, get mutated (data or geometry) or
// are views: expect_like_eager(make, fn) builds two identical input setups with `make` (so the
// aliasing structure is reproduced exactly), runs `fn` eagerly on one and through aot_function
// (with each partitioner) on the other, and adds a gtest failure for every difference in:
//   - outputs: sizes, strides, storage offset, values, requires_grad, is_leaf;
//   - aliasing: which outputs share storage with which inputs and with each other;
//   - inputs after the call: geometry, values, and whether the version counter moved;
//   - gradients: backward of a fixed weighted sum of the outputs (and of the inputs) that
//     require grad, then the .grad() of every leaf the setup lists.
// A second compiled call on a third setup must give the same answers from the cache.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "partition/registry.h"
#include "testing/gradcheck.h"

namespace aotgrad::testing {

struct OracleSetup {
  std::vector<Tensor> inputs;  // what fn receives
  std::vector<Tensor> leaves;  // whose .grad() is compared after backward
};

using OracleFn = std::function<std::vector<Tensor>(std::vector<Tensor>)>;

// Value closeness (allclose's atol, rtol). The default asks f64 results for agreement to
// rounding; an f32 program compiled by a code generator that sums in another order needs more.
// f32 values, and with `f32_inputs` any value computed from f32 inputs (an f64 result of an f32
// exp carries its rounding), get at least PyTorch's assert_close defaults for f32 (1e-5,
// 1.3e-6): compiled kernels and a compiled backward's order of summing gradient contributions
// may differ from eager's by a few ulps.
struct OracleTolerances {
  double atol = 1e-10;
  double rtol = 1e-9;
  bool f32_inputs = false;
};

namespace oracle_detail {

inline ::testing::AssertionResult close_values(const Tensor& c, const Tensor& e,
                                               const OracleTolerances& tol = {}) {
  if (tol.f32_inputs || c.dtype() == DType::f32 || e.dtype() == DType::f32)
    return allclose(c, e, std::max(tol.atol, 1e-5), std::max(tol.rtol, 1.3e-6));
  return allclose(c, e, tol.atol, tol.rtol);
}

inline void expect_same(const Tensor& c, const Tensor& e, const std::string& what,
                        const OracleTolerances& tol) {
  ASSERT_EQ(c.defined(), e.defined()) << what;
  if (!e.defined()) return;
  EXPECT_EQ(shape_to_string(c.sizes()), shape_to_string(e.sizes())) << what << ": sizes";
  EXPECT_EQ(shape_to_string(c.strides()), shape_to_string(e.strides())) << what << ": strides";
  EXPECT_EQ(c.storage_offset(), e.storage_offset()) << what << ": storage offset";
  EXPECT_EQ(c.dtype(), e.dtype()) << what << ": dtype";
  if (c.sizes() == e.sizes()) {
    EXPECT_TRUE(close_values(c, e, tol)) << what << ": values";
  }
}

// Backward of sum(w_k * t_k) over the tensors that require grad; false when none does.
inline bool backward_weighted(const std::vector<Tensor>& ts) {
  Tensor loss;
  for (size_t k = 0; k < ts.size(); ++k) {
    if (!ts[k].defined() || !ts[k].requires_grad()) continue;
    Tensor w = test_input(ts[k].sizes(), -1, 1, 100 + k, false).to(ts[k].dtype());
    Tensor term = (ts[k] * w).sum();
    loss = loss.defined() ? loss + term : term;
  }
  if (!loss.defined()) return false;
  loss.backward();
  return true;
}

struct Run {
  OracleSetup setup;
  std::vector<uint64_t> versions_before;
  std::vector<Tensor> outs;
};

inline Run prepare(const std::function<OracleSetup()>& make) {
  Run r{make(), {}, {}};
  for (const Tensor& t : r.setup.inputs) r.versions_before.push_back(t.version());
  return r;
}

inline void compare_runs(Run& c, Run& e, const std::string& where,
                         const OracleTolerances& tol = {}) {
  ASSERT_EQ(c.outs.size(), e.outs.size()) << where;
  const std::vector<Tensor>& ci = c.setup.inputs;
  const std::vector<Tensor>& ei = e.setup.inputs;
  for (size_t o = 0; o < e.outs.size(); ++o) {
    std::string what = where + " output " + std::to_string(o);
    expect_same(c.outs[o], e.outs[o], what, tol);
    EXPECT_EQ(c.outs[o].requires_grad(), e.outs[o].requires_grad()) << what << ": requires_grad";
    EXPECT_EQ(c.outs[o].is_leaf(), e.outs[o].is_leaf()) << what << ": is_leaf";
    for (size_t i = 0; i < ei.size(); ++i)
      EXPECT_EQ(c.outs[o].storage() == ci[i].storage(), e.outs[o].storage() == ei[i].storage())
          << what << ": aliasing of input " << i;
    if (c.outs[o].defined() && e.outs[o].defined()) {
      EXPECT_EQ(c.outs[o].is_view(), e.outs[o].is_view()) << what << ": is a view (has _base)";
    }
    for (size_t p = 0; p < o; ++p) {
      EXPECT_EQ(c.outs[o].storage() == c.outs[p].storage(),
                e.outs[o].storage() == e.outs[p].storage())
          << what << ": aliasing of output " << p;
      EXPECT_EQ(c.outs[o].is_same(c.outs[p]), e.outs[o].is_same(e.outs[p]))
          << what << ": the same tensor as output " << p;
    }
  }
  for (size_t i = 0; i < ei.size(); ++i) {
    std::string what = where + " input " + std::to_string(i) + " after the call";
    expect_same(ci[i], ei[i], what, tol);
    EXPECT_EQ(ci[i].version() != c.versions_before[i], ei[i].version() != e.versions_before[i])
        << what << ": version counter changed";
  }
}

inline void compare_grads(Run& c, Run& e, const std::string& where,
                          const OracleTolerances& tol = {}) {
  std::vector<Tensor> cs = c.outs, es = e.outs;
  cs.insert(cs.end(), c.setup.inputs.begin(), c.setup.inputs.end());
  es.insert(es.end(), e.setup.inputs.begin(), e.setup.inputs.end());
  // Where eager's backward raises (a leaf's gradient of sizes it no longer has), the compiled
  // side's must raise too; there are no gradients to compare then.
  std::optional<std::string> eerr, cerr;
  bool eb = false, cb = false;
  try {
    eb = backward_weighted(es);
  } catch (const std::exception& x) {
    eerr = x.what();
  }
  try {
    cb = backward_weighted(cs);
  } catch (const std::exception& x) {
    cerr = x.what();
  }
  if (eerr || cerr) {
    EXPECT_TRUE(eerr && cerr) << where << ": backward: eager " << (eerr ? "threw " + *eerr : "ran")
                              << ", compiled " << (cerr ? "threw " + *cerr : "ran");
    return;
  }
  ASSERT_EQ(cb, eb) << where << ": whether anything requires grad";
  for (size_t l = 0; l < e.setup.leaves.size(); ++l) {
    Tensor cg = c.setup.leaves[l].grad(), eg = e.setup.leaves[l].grad();
    ASSERT_EQ(cg.defined(), eg.defined()) << where << " grad of leaf " << l;
    if (eg.defined()) {
      EXPECT_TRUE(close_values(cg, eg, tol)) << where << " grad of leaf " << l;
    }
  }
}

}  // namespace oracle_detail

// Runs the comparison with every partitioner; returns the graphs of the last compiled function
// so the caller can assert about them.
inline CompiledGraphs expect_like_eager(const std::function<OracleSetup()>& make,
                                        const OracleFn& fn, AotConfig config = {},
                                        OracleTolerances tol = {}) {
  using namespace oracle_detail;
  CompiledGraphs graphs;
  for (const std::string& p : partition::partitioner_names()) {
    config.partitioner = p;
    auto f = aot_function(fn, config);
    Run e = prepare(make);
    e.outs = fn(e.setup.inputs);
    for (int call = 1; call <= 2; ++call) {
      std::string where = "[" + p + ", call " + std::to_string(call) + "]";
      Run c = prepare(make);
      c.outs = f(c.setup.inputs);
      compare_runs(c, e, where, tol);
      if (call == 1) {
        Run e2 = prepare(make);
        e2.outs = fn(e2.setup.inputs);
        compare_grads(c, e2, where, tol);
      }
    }
    EXPECT_EQ(f.num_compilations(), 1u) << p;
    graphs = f.graphs();
  }
  return graphs;
}

// expect_like_eager with the interpreter and with the cpp code generator as forward compiler.
inline void like_eager_under_both_compilers(const std::function<OracleSetup()>& make,
                                            const OracleFn& fn) {
  for (const char* compiler : {"interpreter", "cpp"}) {
    SCOPED_TRACE(compiler);
    AotConfig config;
    config.fw_compiler = compiler;
    expect_like_eager(make, fn, config);
  }
}

}  // namespace aotgrad::testing
