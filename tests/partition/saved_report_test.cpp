// The saved-value report (issue 18 item 6): a saved view of a graph input, such as the transposed
// weight the default partition keeps for `linear`, aliases the input's memory, so it is counted
// with the graph inputs and named as a view of its input, not reported as an activation.
#include <gtest/gtest.h>

#include <string>

#include "aotgrad/graph_program.h"

namespace aotgrad {
namespace {

TEST(SavedReport, ViewsOfGraphInputsCountAsInputs) {
  GraphProgram p = GraphProgram::parse(
      "graph linear(%x: f32[4,3], %w: f32[2,3]) {\n"
      "  %wt: f32[3,2]{1,3} = aten.t.default(%w)\n"
      "  %y: f32[4,2] = aten.mm.default(%x, %wt)\n"
      "  %z: f32[4,2] = aten.tanh.default(%y)\n"
      "  return (%z)\n"
      "}\n",
      "linear");
  const std::string s = p.show({.backward = true, .partitioner = "default"});
  EXPECT_NE(s.find("from aten.t.default  (forward value read by the backward; a view of graph "
                   "input 1)"),
            std::string::npos)
      << s;
  // tanh's result (32 B) is the only activation; x, and w through its transpose, are inputs.
  EXPECT_NE(s.find("(32 B activations, 72 B graph inputs)"), std::string::npos) << s;
}

}  // namespace
}  // namespace aotgrad
