// Joint forward+backward graph construction.
//
// Needs: a traced forward graph and which of its values require grad. Guarantees: a graph with
// inputs (primals..., tangents...) and outputs (forward outputs..., gradients of the primals that
// require grad and receive one), built by running each forward node's VJP rule, in reverse, under
// the Trace interpreter: the only derivative formulas are the op table's. Descriptors: primals and
// forward outputs keep the forward graph's (input(i) / output(i) where it has none), tangents are
// tangent(<output's>), gradients grad(<primal's>); every node a VJP rule made has its forward
// node's first value as its origin (Node::origin). A forward output marked in `unreached` keeps
// its tangent input (the runtime still makes it a result of the autograd node, so it requires
// grad as in eager) but the tangent flows nowhere: the runtime never lets a gradient reach it (the
// new value of an input written under no_grad or through detach(), which the epilogue copies
// under no_grad; an intermediate base whose aliases are views made under no_grad).
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::aot {

struct JointGraph {
  graph::Graph graph{"joint"};
  size_t num_primals = 0;
  size_t num_fw_outputs = 0;
  // Forward outputs that receive a tangent input (in tangent order).
  std::vector<size_t> tangent_of_output;
  // Primals whose gradient is a joint output (in gradient-output order).
  std::vector<size_t> grad_of_primal;
  // By forward value index: whether the VJP of the node that made it ran (a gradient reached one
  // of its results and one of its inputs needs one), as eager's engine would run it.
  std::vector<bool> vjp_ran;
  // The first error a VJP raised (a gradient whose shape the node cannot take, as PyTorch's
  // validate_outputs refuses it), in backward order; empty when none did.
  std::string vjp_error;
};

JointGraph build_joint(const graph::Graph& forward, const std::vector<bool>& value_requires_grad,
                       const std::vector<bool>& unreached = {});

}  // namespace aotgrad::aot
