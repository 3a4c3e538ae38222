// How the caller's flat inputs become graph inputs: duplicates are passed once, and inputs that
// overlap in memory are passed as one synthetic base from which each is regenerated inside the
// graph (so a mutation through one is seen through the others, as in eager).
//
// The plan is part of a specialization's guards: a call whose inputs repeat or alias differently
// compiles anew.
#pragma once

#include <string>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad::aot {

struct SyntheticBase {
  std::vector<size_t> members;  // user inputs regenerated from this base
  bool common_base = false;     // true: the members' shared _base; false: a flat view of storage
  // The geometry of the tensor passed for it (graph_inputs_for): the graph was traced with it,
  // and the members' own guards do not fix it (a _base, or a storage, may extend past them).
  IntList sizes, strides;
  int64_t storage_offset = 0;
  bool operator==(const SyntheticBase&) const = default;
};

struct InputPlan {
  enum class Kind : uint8_t { plain, duplicate, member };
  struct Entry {
    Kind kind = Kind::plain;
    size_t index = 0;  // plain: graph input; duplicate: the user input it repeats; member: base
    bool operator==(const Entry&) const = default;
  };
  std::vector<Entry> inputs;  // one per user input
  std::vector<SyntheticBase> bases;
  // Graph inputs in order: each is a plain user input or a synthetic base (by index).
  struct GraphInput {
    bool is_base = false;
    size_t index = 0;
    bool operator==(const GraphInput&) const = default;
  };
  std::vector<GraphInput> graph_inputs;
  // Overlapping inputs that cannot share a synthetic base (different dtypes, or requiring grad
  // without a common _base): passed as plain inputs, which is exact unless one is mutated, when
  // capture raises `reason`.
  struct Unmergeable {
    std::vector<size_t> members;
    std::string reason;
    bool operator==(const Unmergeable&) const = default;
  };
  std::vector<Unmergeable> unmergeable;
  // Inputs that are views of one _base in the caller but reach the graph through different graph
  // inputs (they do not overlap): per user input, the first such input of its _base (itself for
  // the first, and for an input that shares its _base with none). Empty when no two do. A write
  // with grad on through one gives that _base a history, and eager's other views of it then
  // require grad (the tracer's caller bases).
  std::vector<size_t> same_base_as;

  // Every input its own graph input (same_base_as aside: that changes no graph input).
  bool trivial() const { return bases.empty() && graph_inputs.size() == inputs.size(); }
  bool operator==(const InputPlan&) const = default;
  std::string to_string() const;
};

// Whether plan_inputs gives `inputs` the trivial plan without searching (a few inputs, each with
// a storage of its own), and whether `plan` is that plan: a call's fast path compares these
// rather than building its plan.
bool storages_all_distinct(const std::vector<Tensor>& inputs);
bool is_trivial_plan(const InputPlan& plan);

// The plan for this call's inputs.
// Runs on every call: pairs of inputs are compared only within groups that share a storage.
InputPlan plan_inputs(const std::vector<Tensor>& inputs, const std::string& fn_name);

// What plan_inputs finds before it builds the plan: which inputs repeat an earlier one, and which
// of the others overlap in memory.
struct InputAliasing {
  // The first earlier input that is the same tensor (and not itself a repeat), or -1.
  std::vector<int64_t> duplicate_of;
  // Inputs that are not repeats and overlap in memory, directly or through others, have equal
  // entries (any representative; repeats' entries are ignored).
  std::vector<size_t> group;
};
// The plan for a given aliasing (the part of plan_inputs after the search; tests check the fast
// search against a slow reference through it). Whether two inputs overlap is the caller's claim.
InputPlan plan_from_aliasing(const std::vector<Tensor>& inputs, const InputAliasing& aliasing,
                             const std::string& fn_name);

// The tensors to pass to the graph for this call (bases built from the caller's inputs).
std::vector<Tensor> graph_inputs_for(const InputPlan& plan, const std::vector<Tensor>& inputs);

}  // namespace aotgrad::aot
