#include "trace/decompose.h"

#include <algorithm>
#include <stdexcept>

#include "graph/node_args.h"

namespace aotgrad::trace {
namespace {

thread_local const DecompositionTable* t_table = nullptr;
thread_local std::vector<const ops::OpDef*> t_running;  // ops whose decomposition is running

// Pops `op` off t_running when its decomposition returns or throws.
class Running {
 public:
  explicit Running(const ops::OpDef& op) { t_running.push_back(&op); }
  ~Running() { t_running.pop_back(); }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;
};

}  // namespace

DecompositionScope::DecompositionScope(const DecompositionTable& table) : previous_(t_table) {
  t_table = table.empty() ? nullptr : &table;
}

DecompositionScope::~DecompositionScope() {
  t_table = previous_;
}

const DecompositionFn* decomposition_for(const ops::OpDef& op) {
  if (!t_table) return nullptr;
  auto it = t_table->find(op.name);
  if (it == t_table->end() || !it->second) return nullptr;
  if (std::find(t_running.begin(), t_running.end(), &op) != t_running.end()) return nullptr;
  return &it->second;
}

std::vector<Tensor> run_decomposition(const ops::OpDef& op, const DecompositionFn& fn,
                                      const ops::OpArgs& args) {
  std::vector<ops::TensorMeta> expected = op.meta(args);
  std::vector<Tensor> results;
  {
    Running running(op);
    results = fn(args);
  }
  std::string who = "the decomposition of " + std::string(op.name);
  if (results.size() != expected.size())
    throw std::invalid_argument(who + " returned " + std::to_string(results.size()) +
                                " results, the op has " + std::to_string(expected.size()));
  for (size_t i = 0; i < results.size(); ++i) {
    const Tensor& r = results[i];
    if (!r.defined() || r.dtype() != expected[i].dtype || r.sizes() != expected[i].sizes) {
      ops::TensorMeta got;
      if (r.defined()) got = {r.dtype(), r.sizes(), {}, 0};
      throw std::invalid_argument(
          who + " returned " + (r.defined() ? graph::type_annotation(got) : "an undefined tensor") +
          " as result " + std::to_string(i) + ", the op returns " +
          graph::type_annotation({expected[i].dtype, expected[i].sizes, {}, 0}));
    }
  }
  return results;
}

}  // namespace aotgrad::trace
