// Decompositions applied while tracing (AotConfig::decompositions, aotgrad/compiler.h): the Trace
// interpreter asks decomposition_for before recording an op, and when there is one, runs it
// instead, so the graph holds the ops the decomposition calls.
//
// Needs: a DecompositionScope alive on the tracing thread (lower opens one for the whole
// lowering: forward capture and the joint's VJP rules). Guarantees: an op is never decomposed
// inside its own decomposition (the call is recorded), so a decomposition may fall back to the op
// it replaces; a decomposition's results have the op's result count, dtypes and sizes, or
// run_decomposition throws std::invalid_argument naming the op.
// Thread-safety: the table and the ops being decomposed are per thread.
#pragma once

#include <vector>

#include "aotgrad/compiler.h"
#include "ops/op.h"

namespace aotgrad::trace {

class DecompositionScope {
 public:
  explicit DecompositionScope(const DecompositionTable& table);
  ~DecompositionScope();
  DecompositionScope(const DecompositionScope&) = delete;
  DecompositionScope& operator=(const DecompositionScope&) = delete;

 private:
  const DecompositionTable* previous_;
};

// The decomposition to run for `op` now, or null (none, or `op` is being decomposed already).
const DecompositionFn* decomposition_for(const ops::OpDef& op);
std::vector<Tensor> run_decomposition(const ops::OpDef& op, const DecompositionFn& fn,
                                      const ops::OpArgs& args);

}  // namespace aotgrad::trace
