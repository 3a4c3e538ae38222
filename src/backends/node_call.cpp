#include "backends/node_call.h"

#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include "tensor/current_op.h"

namespace aotgrad::backends {

NodeCall make_node_call(const graph::Graph& g, const graph::Node& n, std::string_view backend) {
  NodeCall s;
  s.op = n.op;
  if (n.op->is_inplace()) {
    // The only mutation a graph may hold: a write into one of its inputs (an input mutation
    // kept in the graph).
    const auto* target = std::get_if<graph::ValueId>(&n.args.at(n.op->mutated_arg()));
    if (!target || g.value(*target).producer >= 0)
      throw std::invalid_argument(std::string(backend) + " backend: graph " + g.name() +
                                  " mutates a value that is not a graph input (" +
                                  std::string(n.op->name) + "); graphs must be functional");
    s.written_arg = n.op->mutated_arg();
  }
  for (size_t k = 0; k < n.args.size(); ++k) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, graph::ValueId>) {
            s.args.emplace_back(Tensor());
            s.tensor_slots.emplace_back(k, x.index);
          } else if constexpr (std::is_same_v<T, graph::ValueList>) {
            s.args.emplace_back(ops::TensorList(x.size()));
            for (size_t e = 0; e < x.size(); ++e)
              if (x[e] != graph::kNoValue) s.list_slots.emplace_back(k, e, x[e].index);
          } else {
            s.args.emplace_back(x);
          }
        },
        n.args[k]);
  }
  for (graph::ValueId o : n.outputs) s.outputs.push_back(o.index);
  return s;
}

namespace {

// Argument vectors of finished calls on this thread, kept for their capacity: a call copies its
// constants into a recycled vector instead of a new one. A stack, so that a kernel that runs
// another NodeCall on this thread (a custom op calling a compiled function) takes its own.
thread_local std::vector<ops::OpArgs> t_spare_args;

// One call's argument vector: a copy of `proto`, returned to the spares on destruction with its
// tensors dropped (so the caller can free dead values at once, and no spare keeps memory alive).
class ArgsLease {
 public:
  explicit ArgsLease(const ops::OpArgs& proto) {
    if (!t_spare_args.empty()) {
      args_ = std::move(t_spare_args.back());
      t_spare_args.pop_back();
    }
    args_ = proto;
  }
  ~ArgsLease() {
    for (ops::Arg& a : args_) {
      if (auto* t = std::get_if<Tensor>(&a))
        *t = Tensor();
      else if (auto* list = std::get_if<ops::TensorList>(&a))
        for (Tensor& e : *list) e = Tensor();
    }
    try {
      t_spare_args.push_back(std::move(args_));
    } catch (...) {  // out of memory for the spare list: the vector is simply freed
    }
  }
  ArgsLease(const ArgsLease&) = delete;
  ArgsLease& operator=(const ArgsLease&) = delete;
  ops::OpArgs& args() { return args_; }

 private:
  ops::OpArgs args_;
};

}  // namespace

void fill_args(const NodeCall& c, const std::vector<Tensor>& slots, ops::OpArgs& args) {
  for (auto [arg, v] : c.tensor_slots) args[arg] = slots[v];
  for (auto [arg, e, v] : c.list_slots) std::get<ops::TensorList>(args[arg])[e] = slots[v];
}

void run_node_call(const NodeCall& s, std::vector<Tensor>& slots) {
  ArgsLease lease(s.args);
  ops::OpArgs& args = lease.args();
  fill_args(s, slots, args);
  CurrentOpScope scope(s.op->name);  // errors from allocation and size checks name the op
  std::vector<Tensor> outs = s.op->kernel(args);
  if (s.written_arg >= 0) std::get<Tensor>(args[s.written_arg]).storage()->bump_version();
  for (size_t k = 0; k < s.outputs.size(); ++k) slots[s.outputs[k]] = std::move(outs[k]);
}

}  // namespace aotgrad::backends
