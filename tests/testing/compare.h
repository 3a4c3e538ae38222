// The second test oracle (DESIGN "Testing"): a function compiled with aot_function must behave
// exactly like the same function run eagerly.
//
//   ag::CompiledGraphs g = expect_compiled_matches_eager(
//       [](const Tensor& x, const Tensor& w) { return ag::mm(x, w).tanh().sum(); },
//       inputs(x, w));
//   EXPECT_EQ(g.num_saved, 3u);
//
// expect_compiled_matches_eager copies every tensor input twice into fresh leaves (same dtype,
// sizes, strides and values, same requires_grad), runs `fn` eagerly on one copy and through
// aot_function on the other, and adds a (non-fatal) gtest failure for every difference in:
//   - outputs: defined-ness, dtype, sizes, strides, values (allclose), requires_grad, is_leaf;
//   - gradients: backward() through the outputs that require grad, with the same deterministic
//     grad_outputs on both sides, then every input's .grad() (an undefined one must stay
//     undefined on both sides);
//   - the kind of graph: an inference graph exactly when no eager output requires grad;
//   - a second compiled call on new copies hits the cache and gives the same outputs;
//   - every graph text the compiled function produced (forward, backward, joint, inference)
//     round-trips through the parser exactly and passes verify_graph.
// It returns the graphs of the compiled function so the caller can assert about them. It runs
// under the caller's grad mode, so calling it under NoGradGuard checks the inference path.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "testing/call_site.h"
#include "testing/gradcheck.h"

namespace aotgrad::testing {

struct Tolerances {
  double atol = 1e-10;
  double rtol = 1e-9;
};
// For f32 functions: compiled and eager may sum in different orders.
inline constexpr Tolerances kF32Tolerances{1e-5, 1e-4};

// The inputs of one call, in fn's argument order: Tensors, std::vector<Tensor>s and numbers.
template <typename... Args>
std::tuple<std::decay_t<Args>...> inputs(Args&&... args) {
  return std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...);
}

namespace compare_detail {

// A new leaf with `t`'s dtype, geometry (strides and storage offset included) and values, in
// storage of its own. Written without ops so the helper does not depend on what it tests.
inline Tensor fresh_leaf(const Tensor& t) {
  if (!t.defined()) return t;
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = t.dtype();
  impl->sizes = t.sizes();
  impl->strides = t.strides();
  impl->storage_offset = t.storage_offset();
  impl->storage = std::make_shared<Storage>(t.storage()->nbytes(), /*fake=*/false);
  if (t.storage()->nbytes() > 0)
    std::memcpy(impl->storage->data(), t.storage()->data(), t.storage()->nbytes());
  Tensor copy(std::move(impl));
  if (t.requires_grad()) copy.requires_grad_();
  return copy;
}

template <typename T>
T fresh_arg(const T& a) {
  if constexpr (std::is_same_v<T, Tensor>) {
    return fresh_leaf(a);
  } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
    std::vector<Tensor> v;
    for (const Tensor& t : a) v.push_back(fresh_leaf(t));
    return v;
  } else {
    return a;
  }
}

template <typename T>
void collect_tensors(const T& a, std::vector<Tensor>& out) {
  if constexpr (std::is_same_v<T, Tensor>) {
    out.push_back(a);
  } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
    out.insert(out.end(), a.begin(), a.end());
  }
}

template <typename Tuple>
std::vector<Tensor> tensors_of(const Tuple& args) {
  std::vector<Tensor> out;
  std::apply([&](const auto&... a) { (collect_tensors(a, out), ...); }, args);
  return out;
}

template <typename Tuple>
Tuple fresh_copies(const Tuple& args) {
  return std::apply([](const auto&... a) { return Tuple(fresh_arg(a)...); }, args);
}

inline std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream os;
  os << dtype_name(t.dtype()) << shape_to_string(t.sizes()) << " strides "
     << shape_to_string(t.strides()) << (t.requires_grad() ? " requires_grad" : "")
     << (t.is_leaf() ? " leaf" : " non-leaf");
  return os.str();
}

// Adds a failure for every way `compiled` differs from `eager`; `what` names the pair.
inline void expect_same_tensor(const Tensor& compiled, const Tensor& eager, const std::string& what,
                               const Tolerances& tol, bool check_autograd) {
  if (compiled.defined() != eager.defined()) {
    ADD_FAILURE() << what << ": compiled is " << describe(compiled) << ", eager is "
                  << describe(eager);
    return;
  }
  if (!eager.defined()) return;
  EXPECT_EQ(dtype_name(compiled.dtype()), dtype_name(eager.dtype())) << what << ": dtype";
  EXPECT_EQ(shape_to_string(compiled.sizes()), shape_to_string(eager.sizes())) << what << ": sizes";
  EXPECT_EQ(shape_to_string(compiled.strides()), shape_to_string(eager.strides()))
      << what << ": strides";
  if (check_autograd) {
    EXPECT_EQ(compiled.requires_grad(), eager.requires_grad()) << what << ": requires_grad";
    EXPECT_EQ(compiled.is_leaf(), eager.is_leaf()) << what << ": is_leaf";
  }
  if (compiled.sizes() == eager.sizes()) {
    EXPECT_TRUE(allclose(compiled, eager, tol.atol, tol.rtol)) << what << ": values";
  }
}

// A deterministic gradient for output `i`, of its dtype and shape (never all ones, so a transposed
// or mis-summed gradient shows).
inline Tensor grad_output_for(const Tensor& out, size_t i) {
  NoGradGuard no_grad;
  return test_input(out.sizes(), -1.0, 1.0, 1000 + i, false).to(out.dtype());
}

// Checks that `text` parses, prints back byte for byte, and verifies.
inline void expect_graph_text_round_trips(const std::string& text, const std::string& which) {
  if (text.empty()) return;
  try {
    graph::Graph g = graph::parse_graph(text);
    EXPECT_EQ(graph::print_graph(g), text)
        << which << " graph does not round-trip through the parser";
    try {
      graph::verify_graph(g);
    } catch (const std::exception& e) {
      ADD_FAILURE() << which << " graph fails verify_graph: " << e.what() << "\n" << text;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << which << " graph does not parse: " << e.what() << "\n" << text;
  }
}

// backward() from the outputs that require grad, output i receiving grad_output_for(out[i], i):
// both sides get the same gradients.
inline void backward_from(const std::vector<Tensor>& outs, const char* side,
                          const std::string& context) {
  std::vector<Tensor> roots, grads;
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].requires_grad()) {
      roots.push_back(outs[i]);
      grads.push_back(grad_output_for(outs[i], i));
    }
  if (roots.empty()) return;
  try {
    autograd::backward(roots, grads);
  } catch (const std::exception& e) {
    ADD_FAILURE() << side << " backward threw: " << e.what() << context;
  }
}

template <typename R>
std::vector<Tensor> flatten_result(const R& r) {
  return aot_detail::Outputs<std::decay_t<R>>::flatten(r);
}

}  // namespace compare_detail

template <typename F, typename... Args>
CompiledGraphs expect_compiled_matches_eager(F fn, const std::tuple<Args...>& args,
                                             Tolerances tol = {},
                                             CallSite loc = CallSite::current()) {
  namespace cd = compare_detail;
  ::testing::ScopedTrace trace(loc.file_name(), loc.line_number(), "compiled vs eager");
  using Tuple = std::tuple<Args...>;
  Tuple eager_args = cd::fresh_copies(args);
  Tuple compiled_args = cd::fresh_copies(args);
  auto compiled_fn = aot_function(fn);

  std::vector<Tensor> eager_out, compiled_out;
  try {
    eager_out = cd::flatten_result(std::apply(fn, eager_args));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the eager function threw: " << e.what();
    return {};
  }
  try {
    compiled_out = cd::flatten_result(std::apply(compiled_fn, compiled_args));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the compiled function threw: " << e.what();
    return {};
  }
  CompiledGraphs graphs = compiled_fn.graphs();
  if (compiled_out.size() != eager_out.size()) {
    ADD_FAILURE() << "compiled returned " << compiled_out.size() << " outputs, eager "
                  << eager_out.size();
    return graphs;
  }
  for (size_t i = 0; i < eager_out.size(); ++i)
    cd::expect_same_tensor(compiled_out[i], eager_out[i], "output " + std::to_string(i), tol, true);
  bool any_requires_grad = false;
  for (const Tensor& t : eager_out) any_requires_grad = any_requires_grad || t.requires_grad();
  EXPECT_EQ(graphs.is_inference, !any_requires_grad)
      << "expected " << (any_requires_grad ? "a training" : "an inference") << " graph";

  // Each side runs backward from its own outputs that require grad, so a requires_grad mismatch
  // also shows in the gradients.
  cd::backward_from(eager_out, "eager", "");
  cd::backward_from(compiled_out, "compiled", "\nbackward graph:\n" + graphs.backward);
  std::vector<Tensor> eager_in = cd::tensors_of(eager_args),
                      compiled_in = cd::tensors_of(compiled_args);
  for (size_t i = 0; i < eager_in.size(); ++i)
    cd::expect_same_tensor(compiled_in[i].grad(), eager_in[i].grad(),
                           "grad of tensor input " + std::to_string(i), tol, false);

  // The second call must reuse the specialization and agree with the first.
  try {
    std::vector<Tensor> again = cd::flatten_result(std::apply(compiled_fn, cd::fresh_copies(args)));
    EXPECT_EQ(compiled_fn.num_compilations(), 1u)
        << "a second call with the same inputs recompiled";
    for (size_t i = 0; i < again.size() && i < eager_out.size(); ++i)
      cd::expect_same_tensor(again[i], eager_out[i],
                             "output " + std::to_string(i) + " of the second call", tol, true);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the second compiled call threw: " << e.what();
  }

  cd::expect_graph_text_round_trips(graphs.forward, "forward");
  cd::expect_graph_text_round_trips(graphs.backward, "backward");
  cd::expect_graph_text_round_trips(graphs.joint, "joint");
  cd::expect_graph_text_round_trips(graphs.inference, "inference");
  return graphs;
}

}  // namespace aotgrad::testing
