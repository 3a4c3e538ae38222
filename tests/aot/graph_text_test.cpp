// Golden tests of the graphs aot_function prints: any change to tracing, the joint graph, the
// partitioner or the printer shows up here as a diff in review.
//
// Each expected text was read for correctness when it was recorded: the gradient formulas, that
// only what the backward reads is saved, and the descriptors (input, tangent, saved, grad). When a
// change is intended, re-read the new text the same way before updating it.
#include <gtest/gtest.h>

#include <string>

#include "aotgrad/aotgrad.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::DType;
using ag::Tensor;

namespace {

Tensor f32_input(const ag::IntList& sizes, uint64_t seed, bool requires_grad) {
  Tensor t = ag::testing::test_input(sizes, -1.0, 1.0, seed, false).to(DType::f32);
  if (requires_grad) t.requires_grad_();
  return t;
}

// The golden text itself must be a valid graph that prints back unchanged.
void expect_parses_back(const std::string& text) {
  ag::graph::Graph g = ag::graph::parse_graph(text);
  EXPECT_EQ(ag::graph::print_graph(g), text);
  EXPECT_NO_THROW(ag::graph::verify_graph(g));
}

}  // namespace

// y = sum(x * w), w broadcast over x's rows. The backward expands the scalar tangent, multiplies
// by the other factor, and sums w's gradient back over the broadcast dim. Both inputs are read by
// the backward, so both are saved; no activation is.
TEST(GraphGolden, MulBroadcastSum) {
  auto f = ag::aot_function([](const Tensor& x, const Tensor& w) { return (x * w).sum(); });
  f(f32_input({2, 3}, 1, true), f32_input({3}, 2, true));
  ag::CompiledGraphs g = f.graphs();
  const std::string joint = R"(graph joint(
    %primals_1: f32[2,3],  # input(0)
    %primals_2: f32[3],  # input(1)
    %tangents_1: f32[]  # tangent(output(0))
) {
  %mul: f32[2,3] = aten.mul.Tensor(%primals_1, %primals_2)
  %sum: f32[] = aten.sum.default(%mul)
  %expand: f32[2,3]{0,0} = aten.expand.default(%tangents_1, size=[2, 3])  # from %sum
  %mul_1: f32[2,3] = aten.mul.Tensor(%expand, %primals_2)  # from %mul
  %mul_2: f32[2,3] = aten.mul.Tensor(%expand, %primals_1)  # from %mul
  %sum_1: f32[1,3] = aten.sum.dim_IntList(%mul_2, dim=[0], keepdim=true)  # from %mul
  %view: f32[3] = aten.view.default(%sum_1, size=[3])  # from %mul
  return (
    %sum,  # output(0)
    %mul_1,  # grad(input(0))
    %view  # grad(input(1))
  )
}
)";
  const std::string forward = R"(graph forward(
    %primals_1: f32[2,3],  # input(0)
    %primals_2: f32[3]  # input(1)
) {
  %mul: f32[2,3] = aten.mul.Tensor(%primals_1, %primals_2)
  %sum: f32[] = aten.sum.default(%mul)
  return (
    %sum,  # output(0)
    %primals_1,  # saved(0)
    %primals_2  # saved(1)
  )
}
)";
  const std::string backward = R"(graph backward(
    %primals_1: f32[2,3],  # saved(0)
    %primals_2: f32[3],  # saved(1)
    %tangents_1: f32[]  # tangent(output(0))
) {
  %expand: f32[2,3]{0,0} = aten.expand.default(%tangents_1, size=[2, 3])  # from %sum
  %mul_1: f32[2,3] = aten.mul.Tensor(%expand, %primals_2)  # from %mul
  %mul_2: f32[2,3] = aten.mul.Tensor(%expand, %primals_1)  # from %mul
  %sum_1: f32[1,3] = aten.sum.dim_IntList(%mul_2, dim=[0], keepdim=true)  # from %mul
  %view: f32[3] = aten.view.default(%sum_1, size=[3])  # from %mul
  return (
    %mul_1,  # grad(input(0))
    %view  # grad(input(1))
  )
}
)";
  const std::string report =
      R"(  %primals_1: f32[2, 3]  24 B  from input  (graph input read by the backward)
  %primals_2: f32[3]  12 B  from input  (graph input read by the backward)
saved 2 values, 36 B (0 B activations, 36 B graph inputs)
)";
  EXPECT_FALSE(g.is_inference);
  EXPECT_EQ(g.joint, joint);
  EXPECT_EQ(g.forward, forward);
  EXPECT_EQ(g.backward, backward);
  EXPECT_EQ(g.saved_report, report);
  EXPECT_TRUE(g.inference.empty());
  EXPECT_EQ(g.num_saved, 2u);
  EXPECT_EQ(g.saved_bytes, 36u);
  EXPECT_EQ(g.saved_activation_bytes, 0u);
  for (const std::string* text : {&joint, &forward, &backward}) expect_parses_back(*text);
}

// linear without bias, relu, keepdim row sum; x does not require grad. relu's backward reads its
// output (threshold_backward), mm's gradient for the weight reads x, so exactly x and relu are
// saved and no gradient is computed for x. mm's gradient for t(w), a transposed operand, is
// computed in the transposed order (as PyTorch's mm_mat2_backward), so the weight's gradient
// t(t(mm_1)) is contiguous, as PyTorch's graph for the same function.
TEST(GraphGolden, LinearReluRowSumAndItsInferenceGraph) {
  auto f = ag::aot_function(
      [](const Tensor& x, const Tensor& w) { return ag::linear(x, w).relu().sum(1, true); });
  Tensor x = f32_input({4, 3}, 1, false), w = f32_input({2, 3}, 2, true);
  f(x, w);
  ag::CompiledGraphs g = f.graphs();
  const std::string forward = R"(graph forward(
    %primals_1: f32[4,3],  # input(0)
    %primals_2: f32[2,3]  # input(1)
) {
  %t: f32[3,2]{1,3} = aten.t.default(%primals_2)
  %mm: f32[4,2] = aten.mm.default(%primals_1, %t)
  %relu: f32[4,2] = aten.relu.default(%mm)
  %sum: f32[4,1] = aten.sum.dim_IntList(%relu, dim=[1], keepdim=true)
  return (
    %sum,  # output(0)
    %primals_1,  # saved(0)
    %relu  # saved(1)
  )
}
)";
  const std::string backward = R"(graph backward(
    %primals_1: f32[4,3],  # saved(0)
    %relu: f32[4,2],  # saved(1)
    %tangents_1: f32[4,1]  # tangent(output(0))
) {
  %expand: f32[4,2]{1,0} = aten.expand.default(%tangents_1, size=[4, 2])  # from %sum
  %threshold_backward: f32[4,2] = aten.threshold_backward.default(%expand, %relu, threshold=0)  # from %relu
  %t_1: f32[2,4]{1,2} = aten.t.default(%threshold_backward)  # from %mm
  %mm_1: f32[2,3] = aten.mm.default(%t_1, %primals_1)  # from %mm
  %t_2: f32[3,2]{1,3} = aten.t.default(%mm_1)  # from %mm
  %t_3: f32[2,3] = aten.t.default(%t_2)  # from %t
  return (
    %t_3  # grad(input(1))
  )
}
)";
  EXPECT_FALSE(g.is_inference);
  EXPECT_EQ(g.forward, forward);
  EXPECT_EQ(g.backward, backward);
  EXPECT_EQ(g.num_saved, 2u) << g.saved_report;
  EXPECT_EQ(g.saved_activation_bytes, 4u * 2u * 4u) << g.saved_report;
  expect_parses_back(forward);
  expect_parses_back(backward);

  // The same function under no_grad: one inference graph, nothing saved.
  ag::NoGradGuard no_grad;
  f(x, w);
  ag::CompiledGraphs inf = f.graphs();
  const std::string inference = R"(graph inference(
    %arg0: f32[4,3],  # input(0)
    %arg1: f32[2,3]  # input(1)
) {
  %t: f32[3,2]{1,3} = aten.t.default(%arg1)
  %mm: f32[4,2] = aten.mm.default(%arg0, %t)
  %relu: f32[4,2] = aten.relu.default(%mm)
  %sum: f32[4,1] = aten.sum.dim_IntList(%relu, dim=[1], keepdim=true)
  return (
    %sum  # output(0)
  )
}
)";
  EXPECT_TRUE(inf.is_inference);
  EXPECT_EQ(inf.inference, inference);
  EXPECT_TRUE(inf.forward.empty());
  EXPECT_TRUE(inf.backward.empty());
  expect_parses_back(inference);
}

// An in-place add on a fresh intermediate is recorded as the functional add; exp's output is both
// the user output and the one saved value (exp's backward reads its result, never its input), so
// the forward returns it twice. w does not require grad and gets no gradient.
TEST(GraphGolden, FunctionalizedInPlaceAndSavedOutput) {
  auto f = ag::aot_function([](const Tensor& x, const Tensor& w) {
    Tensor h = x * 2.0;
    h.add_(w);
    return h.exp();
  });
  f(f32_input({3}, 1, true), f32_input({3}, 2, false));
  ag::CompiledGraphs g = f.graphs();
  const std::string joint = R"(graph joint(
    %primals_1: f32[3],  # input(0)
    %primals_2: f32[3],  # input(1)
    %tangents_1: f32[3]  # tangent(output(0))
) {
  %mul: f32[3] = aten.mul.Scalar(%primals_1, other=2.0)
  %add: f32[3] = aten.add.Tensor(%mul, %primals_2)
  %exp: f32[3] = aten.exp.default(%add)
  %mul_1: f32[3] = aten.mul.Tensor(%tangents_1, %exp)  # from %exp
  %mul_2: f32[3] = aten.mul.Scalar(%mul_1, other=2.0)  # from %mul
  return (
    %exp,  # output(0)
    %mul_2  # grad(input(0))
  )
}
)";
  const std::string forward = R"(graph forward(
    %primals_1: f32[3],  # input(0)
    %primals_2: f32[3]  # input(1)
) {
  %mul: f32[3] = aten.mul.Scalar(%primals_1, other=2.0)
  %add: f32[3] = aten.add.Tensor(%mul, %primals_2)
  %exp: f32[3] = aten.exp.default(%add)
  return (
    %exp,  # output(0)
    %exp  # saved(0)
  )
}
)";
  const std::string backward = R"(graph backward(
    %exp: f32[3],  # saved(0)
    %tangents_1: f32[3]  # tangent(output(0))
) {
  %mul_1: f32[3] = aten.mul.Tensor(%tangents_1, %exp)  # from %exp
  %mul_2: f32[3] = aten.mul.Scalar(%mul_1, other=2.0)  # from %mul
  return (
    %mul_2  # grad(input(0))
  )
}
)";
  EXPECT_EQ(g.joint, joint);
  EXPECT_EQ(g.forward, forward);
  EXPECT_EQ(g.backward, backward);
  EXPECT_EQ(g.num_saved, 1u) << g.saved_report;
  EXPECT_EQ(g.saved_activation_bytes, 12u) << g.saved_report;
  for (const std::string* text : {&joint, &forward, &backward}) expect_parses_back(*text);
}
