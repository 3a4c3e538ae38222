// Shared by the cpp backend tests: run one graph under the cpp backend and the interpreter on the
// same deterministic inputs and compare every output.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpp/cpp_backend.h"
#include "backends/interpreter.h"
#include "graph/graph.h"
#include "graph/parser.h"
#include "testing/compare.h"

namespace aotgrad::testing {

// Deterministic inputs for `g`: floats in [-1, 1), bools alternating by a pattern, i64 in [0, 3).
inline std::vector<Tensor> graph_inputs(const graph::Graph& g, uint64_t seed) {
  std::vector<Tensor> out;
  for (graph::ValueId v : g.inputs()) {
    const ops::TensorMeta& m = g.value(v).meta;
    Tensor t = test_input(m.sizes, -1.0, 1.0, seed++, false);
    if (m.dtype == DType::b8)
      t = t.gt(0.0);
    else if (m.dtype == DType::i64)
      t = (t + 1.0).mul(1.49).to(DType::i64);
    else
      t = t.to(m.dtype);
    out.push_back(t);
  }
  return out;
}

// Runs `g` under both backends on copies of `inputs` and expects equal outputs (dtype, sizes,
// values within `tol`; bools and integers exactly).
inline void expect_cpp_matches_interpreter(const graph::Graph& g, const std::vector<Tensor>& inputs,
                                           Tolerances tol = {1e-12, 1e-10},
                                           const std::string& what = "",
                                           const backends::CppOptions& options = {}) {
  backends::CompiledGraph cpp = backends::compile_cpp(g, options);
  backends::CompiledGraph ref = backends::compile_interpreter(g);
  std::vector<Tensor> a = inputs, b = inputs;
  std::vector<Tensor> got = cpp(std::move(a));
  std::vector<Tensor> want = ref(std::move(b));
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    std::string name = what + " output " + std::to_string(i);
    ASSERT_EQ(dtype_name(got[i].dtype()), dtype_name(want[i].dtype())) << name;
    ASSERT_EQ(got[i].sizes(), want[i].sizes()) << name;
    if (want[i].dtype() == DType::f32 || want[i].dtype() == DType::f64) {
      EXPECT_TRUE(allclose(got[i], want[i], tol.atol, tol.rtol))
          << name << "\ncpp: " << got[i].to_string() << "\ninterpreter: " << want[i].to_string();
    } else {
      EXPECT_EQ(got[i].to(DType::f64).to_vector<double>(),
                want[i].to(DType::f64).to_vector<double>())
          << name;
    }
  }
}

inline void expect_cpp_matches_interpreter(const std::string& text,
                                           Tolerances tol = {1e-12, 1e-10}) {
  graph::Graph g = graph::parse_graph(text);
  expect_cpp_matches_interpreter(g, graph_inputs(g, 7), tol, g.name());
}

}  // namespace aotgrad::testing
