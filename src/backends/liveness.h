// Last-use liveness of a straight-line program over a graph's values, shared by every backend
// that runs a graph step by step (the interpreter: one step per node; cpp: extern nodes and
// generated kernels).
//
// Needs: the steps in run order, each with the values it reads and the values it writes; the
// graph (for its inputs and outputs). Guarantees: a value is freed right after the last step that
// reads it; a value no step reads and that is not a graph output is freed at once (an input) or
// right after the step that wrote it; graph outputs are never freed. `last_use` is what a memory
// planner needs to know whether a step is the last reader of a value (kOutput: lives past the
// call; kUnused: never read).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::backends {

struct StepValues {
  std::vector<uint32_t> reads;
  std::vector<uint32_t> writes;
};

struct Liveness {
  static constexpr int64_t kUnused = -1;
  static constexpr int64_t kOutput = INT64_MAX;
  std::vector<int64_t> last_use;                  // per value: the last step reading it
  std::vector<uint32_t> free_at_start;            // graph inputs no step reads
  std::vector<std::vector<uint32_t>> free_after;  // per step: values dead after it
};

Liveness compute_liveness(const graph::Graph& g, const std::vector<StepValues>& steps);

// The values node `n` reads (tensor arguments and the set elements of tensor lists).
std::vector<uint32_t> node_reads(const graph::Node& n);

}  // namespace aotgrad::backends
