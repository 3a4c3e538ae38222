// What a compiler (backend) produces, and the registry of compilers by name.
//
// A CompiledGraph uses the boxed calling convention: it takes its inputs by value as one vector
// and may clear it, so inputs can be freed as soon as their last use has run. It must be
// reentrant: compiled functions call one specialization's graphs from many threads at once.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::backends {

using CompiledGraph = std::function<std::vector<Tensor>(std::vector<Tensor>&&)>;
using Compiler = std::function<CompiledGraph(const graph::Graph&)>;

// The compiler registered as `name` ("interpreter"); throws naming the known ones otherwise.
Compiler compiler(const std::string& name);
std::vector<std::string> compiler_names();

// Checks that `inputs` match `g`'s signature (count, dtype, shape); throws std::invalid_argument
// naming the first mismatching input and what was expected.
void check_inputs(const graph::Graph& g, const std::vector<Tensor>& inputs);

}  // namespace aotgrad::backends
