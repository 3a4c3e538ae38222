// Side effects that compile in order (PyTorch's with_effects and effect tokens).
//
// An op whose row has Recompute::effectful (ops/op.h; custom ops set it from their schema) runs
// once per call, in program order, and is never dropped, merged, reordered or recomputed: in a
// traced graph it becomes an aotgrad.with_effects node that consumes an effect token and produces
// the next (graph input fw_token(0), graph output fw_token(0)); the runtime feeds a fresh token
// and drops the last one (docs/partitioning.md "Random ops and effects").
#pragma once

#include <string>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad {

// aotgrad.print: writes `fmt` with each "{}" replaced by x's values ("[1, 2.5]") as one line to
// the process's print sink. Effectful.
void print(const Tensor& x, const std::string& fmt = "{}");
// The lines printed so far (by any thread), and empties the sink. Thread-safe.
std::vector<std::string> take_printed();

}  // namespace aotgrad
