// What a compiler (backend) produces, and the registry of compilers by name.
//
// A CompiledGraph uses the boxed calling convention: it takes its inputs by value as one vector
// and may clear it, so inputs can be freed as soon as their last use has run. It must be
// reentrant: compiled functions call one specialization's graphs from many threads at once.
// The registry itself is public (aotgrad/compiler.h: register_compiler, compiler_names); this
// header gives the library its compilers over the IR directly.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "aotgrad/compiler.h"
#include "graph/graph.h"

namespace aotgrad::backends {

using CompiledGraph = CompiledGraphFn;
using Compiler = std::function<CompiledGraph(const graph::Graph&)>;

// The compiler registered as `name` ("interpreter"); throws naming the known ones otherwise.
Compiler compiler(const std::string& name);
std::vector<std::string> compiler_names();

// default_compiler()'s choice (aotgrad/compiler.h) from the value of $AOTGRAD_COMPILER (null or
// empty: unset) and whether the cpp backend's C++ compiler runs.
std::string choose_default_compiler(const char* env, bool cpp_compiler_runs);

// A public compiler (which sees a GraphView, aotgrad/compiler.h) as one over the IR. The view it
// is handed owns a copy of the graph, so the compiler may keep it past the call.
Compiler over_ir(CompilerFn compiler);

// Checks that `inputs` match `g`'s signature (count, dtype, shape); throws std::invalid_argument
// naming the first mismatching input and what was expected.
void check_inputs(const graph::Graph& g, const std::vector<Tensor>& inputs);

}  // namespace aotgrad::backends
