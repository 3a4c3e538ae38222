// The Trace interpreter's autograd face (autograd/traced.h): autograd::grad, backward and
// requires_grad_ on fake tensors, and eager's rules for views made in special ways.
//
// Reading guide: grad() differentiates the graph recorded so far, as build_joint (aot/joint.cpp)
// differentiates a whole forward graph: it walks the nodes in reverse from the outputs' values,
// runs each node's VJP rule under no_grad, and so records the gradient's ops into the forward
// graph, as PyTorch's tracer records the ops its autograd engine runs. Only nodes on a path from
// a requested input run, as in eager; without retain_graph the nodes that saved data are marked
// freed (freed_nodes()), and a later grad or outer backward through them fails as eager's does.
#include <algorithm>
#include <stdexcept>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "trace/tracer.h"

namespace aotgrad::trace {
namespace {

std::vector<Tensor> flat_tensors(const ops::OpArgs& args) {
  std::vector<Tensor> flat;
  for (const ops::Arg& a : args) {
    if (auto* t = std::get_if<Tensor>(&a); t && t->defined())
      flat.push_back(*t);
    else if (auto* l = std::get_if<ops::TensorList>(&a))
      for (const Tensor& e : *l)
        if (e.defined()) flat.push_back(e);
  }
  return flat;
}

// Whether eager's node for `n` kept any data, which a backward without retain_graph frees: its
// outputs, or an input a gradient wanted at the forward reads (SaveMask::inputs_for; addmm with
// only the bias requiring grad keeps neither matrix, so a second backward through it is no error).
bool saves_data(const Tracer& tracer, const graph::Node& n) {
  if (n.op->saves.outputs != 0) return true;
  uint32_t wanted = 0;
  for (size_t i = 0; i < n.args.size() && i < 32; ++i)
    for (graph::ValueId v : graph::arg_values(n.args[i]))
      if (tracer.requires_grad(v)) wanted |= ops::bit(static_cast<unsigned>(i));
  return n.op->saves.inputs_for(wanted) != 0;
}

}  // namespace

// ---- views made under no_grad or by multi-output ops ----

autograd::ViewHistory Tracer::history_of(const Tensor& t) const {
  const TensorState* ts = state_of(t);
  return ts ? ts->history : autograd::ViewHistory{};
}

// Eager raises these in check_inplace (the view being written) and when a view's history is read
// (any view argument of an op autograd records); same texts, same order.
void Tracer::check_view_rules(const ops::OpDef& op, const ops::OpArgs& args) const {
  if (!autograd::grad_mode_enabled()) return;
  std::vector<Tensor> flat = flat_tensors(args);
  bool any_requires_grad = false;
  for (const Tensor& t : flat) any_requires_grad = any_requires_grad || eager_requires_grad(t);
  if (!any_requires_grad) return;
  if (op.is_inplace()) {
    const Tensor& self = ops::tensor_arg(args, op.mutated_arg());
    if (const CallerCreation* c = caller_creation(self))
      autograd::raise_view_creation(c->creation.creation, c->creation.history,
                                    /*indirect=*/false);
    if (traced_here(self) && self.is_view())
      autograd::check_view_creation(self, history_of(self), /*indirect=*/false);
  }
  if (!op.vjp) return;
  for (const Tensor& t : flat) {
    if (const CallerCreation* c = caller_creation(t)) {
      const autograd::SpecialCreation& sc = c->creation;
      if (written_since_creation(*c, t) && (sc.history.has_grad_fn || sc.base_requires_grad))
        autograd::raise_view_creation(sc.creation, sc.history, /*indirect=*/true);
      continue;
    }
    if (!traced_here(t) || !autograd::written_since_special_view_creation(t)) continue;
    autograd::ViewHistory h = history_of(t);
    if (h.has_grad_fn || base_requires_grad(t))
      autograd::check_view_creation(t, h, /*indirect=*/true);
  }
}

// A view made under no_grad of a tensor that requires grad requires grad itself (through its
// base), but has neither a history nor an accumulator of its own: eager's ops on it with grad on
// record results that require grad, and their backward gives the view's share to nobody. Read
// so, the view is bound to a detach() of its value that requires grad, as an interior leaf is
// (make_interior_leaf), but it is no leaf the caller sees and no .grad() fills: the joint graph
// runs no VJP through detach(), so the gradient stops there. The VJPs of the ops that read it
// still run, as eager's engine runs their nodes (and checks what they saved) in backward();
// autograd::grad runs only those on a path to its inputs (values_from stops at detach()). Outputs
// that are such views are regenerated from their base (capture.cpp), never read from this value.
void Tracer::bind_no_grad_views(const ops::OpDef& op, const ops::OpArgs& args) {
  if (!autograd::grad_mode_enabled() || !op.vjp) return;
  for (const Tensor& t : flat_tensors(args)) {
    if (!is_dropped_grad_view(t) && !is_view_of_a_caller_base_given_a_history(t)) continue;
    graph::ValueId v{t.impl()->trace.value};
    if (requires_grad(v)) continue;
    t.impl()->trace.value = detached_requiring_grad(v).index;
  }
}

// Each read, by an op with a VJP and grad on, of a tensor a metadata op changed or of an input
// leaf that requires grad, with its sizes then (MetadataTouch::grad_read_sizes).
void Tracer::note_grad_reads(const ops::OpDef& op, const ops::OpArgs& args) {
  if ((metadata_touches_.empty() && leaf_inputs_requiring_grad_.empty()) || !op.vjp ||
      op.is_inplace() || !autograd::grad_mode_enabled())
    return;
  auto noted = [&](const TensorImpl* t) {
    if (std::find(leaf_inputs_requiring_grad_.begin(), leaf_inputs_requiring_grad_.end(), t) !=
        leaf_inputs_requiring_grad_.end())
      return true;
    for (const Touch& touch : metadata_touches_)
      if (touch.tensor == t) return true;
    return false;
  };
  for (const Tensor& t : flat_tensors(args)) {
    if (!noted(t.impl())) continue;
    auto same = [&](const auto& read) {
      return read.first == t.impl() && read.second == t.sizes();
    };
    if (std::none_of(grad_reads_.begin(), grad_reads_.end(), same))
      grad_reads_.emplace_back(t.impl(), t.sizes());
  }
}

ops::OpArgs Tracer::geometry_update_args(graph::ValueId old, const Tensor& updated) {
  ops::OpArgs args{bind(old, true), updated};
  // The leaf's own value, or one a write under no_grad made of it (hidden_update passes the
  // gradient on as it is).
  const ops::OpDef& hidden = ops::lookup("aotgrad.hidden_update.default");
  graph::ValueId v = old;
  while (std::find(leaf_input_values_.begin(), leaf_input_values_.end(), v) ==
         leaf_input_values_.end()) {
    const int32_t producer = graph_.value(v).producer;
    if (producer < 0) return args;
    const graph::Node& n = graph_.nodes()[static_cast<size_t>(producer)];
    if (n.op != &hidden) return args;
    v = std::get<graph::ValueId>(n.args.at(0));
  }
  args.emplace_back(false);
  return args;
}

// A detach() of `v` that requires grad: the joint graph runs no VJP through detach(), so a
// gradient reaching it stops there.
graph::ValueId Tracer::detached_requiring_grad(graph::ValueId v) {
  const ops::OpDef& detach = ops::lookup("aten.detach.default");
  ops::OpArgs args{bind(v, false)};
  ops::normalize(detach, args);
  graph::ValueId leaf{record(detach, args, /*track=*/false).at(0).impl()->trace.value};
  mark_requires_grad(leaf, true);
  return leaf;
}

// Eager's detach() result has no _base: a view past one is a view of the detached tensor, which
// requires grad only once a write with grad on gave it a history. Otherwise eager asks the base,
// which is the storage's current root: a write with grad on may have given it a history since
// the call began (AotProgramFuzz, seed 932326), and the fake's _base, the root as it was bound
// at the call, does not know that.
bool Tracer::base_requires_grad(const Tensor& t) const {
  // A tensor the tracer made for itself (a replayed view, the bases of a write's scatters) is no
  // tensor of the function's: its value says whether it requires grad. Its fake's _base is the
  // root, whatever detach() the chain it replays went through (AotProgramFuzz, seed 928383).
  if (traced_here(t) && t.impl()->trace.alias == UINT32_MAX)
    return requires_grad(graph::ValueId{t.impl()->trace.value});
  if (const TensorState* ts = traced_here(t) ? state_of(t) : nullptr) {
    for (size_t k = ts->chain.size(); k-- > 0;)
      if (size_t id = ts->chain[k].detached; id != SIZE_MAX)
        return detached_histories_[id] != graph::kNoValue;
    return requires_grad(storages_[ts->storage].root) || caller_base_has_history(ts->storage);
  }
  return t._base().requires_grad();
}

bool Tracer::is_view_of_a_caller_base_given_a_history(const Tensor& t) const {
  if (!t.defined() || !traced_here(t)) return false;
  const TensorState* ts = state_of(t);
  if (!ts || !caller_base_has_history(ts->storage) ||
      requires_grad(graph::ValueId{t.impl()->trace.value}))
    return false;
  for (const ViewStep& step : ts->chain)
    if (step.detached != SIZE_MAX)
      return false;  // a view of the detached tensor, no view of the base
  return true;
}

bool Tracer::eager_requires_grad(const Tensor& t) const {
  if (!t.defined()) return false;
  if (!t.is_view() || (t.impl()->autograd && t.impl()->autograd->requires_grad))
    return t.requires_grad();
  return base_requires_grad(t);
}

bool Tracer::is_dropped_grad_view(const Tensor& t) const {
  // An input the caller made so (its fake is a graph input): its gradient reaches no edge.
  if (const CallerCreation* c = caller_creation(t))
    return !c->creation.reaches_base && c->creation.base_requires_grad;
  if (!t.defined() || !traced_here(t) || !t.is_view() || !t.impl()->autograd) return false;
  const AutogradMeta& m = *t.impl()->autograd;
  // Made under no_grad, or a caller's piece of such a view (add_strided_view): no value of its own
  // that requires grad, of a base that does.
  return m.view_creation != ViewCreation::normal && !m.requires_grad && base_requires_grad(t);
}

// ---- requires_grad_() ----

bool Tracer::is_eager_leaf(graph::ValueId v, const TensorState* ts) const {
  if (!requires_grad(v)) return true;
  for (const InteriorLeaf& l : interior_leaves_)
    if (l.value == v) return true;
  if (ts && ts->chain.empty()) {
    const StorageState& s = storages_[ts->storage];
    if (s.input_index >= 0 && v == graph_.inputs()[s.input_index])
      return input_is_leaf_[s.input_index];
  }
  return false;
}

void Tracer::make_interior_leaf(const Tensor& t) {
  // detach(): the joint graph runs no VJP through it, so the gradient stops at the new leaf.
  graph::ValueId leaf = detached_requiring_grad(value_of(t, "requires_grad_() argument"));
  t.impl()->trace.value = leaf.index;
  if (t.impl()->trace.alias != UINT32_MAX) {
    const TensorState& ts = tensors_[t.impl()->trace.alias];
    if (ts.chain.empty()) storages_[ts.storage].root = leaf;
  }
  t.impl()->autograd_meta().requires_grad = true;
  interior_leaves_.push_back({leaf, t.impl(), t.storage().get(), true, false});
}

void Tracer::set_requires_grad(const Tensor& t, bool flag) {
  graph::ValueId v = value_of(t, "requires_grad_() argument");
  const TensorState* ts = state_of(t);
  bool current = requires_grad(v);
  if (!is_eager_leaf(v, ts)) {
    if (!flag)
      throw std::invalid_argument(
          "you can only change requires_grad flags of leaf variables. If you want to use a "
          "computed variable in a subgraph that doesn't require differentiation use var_no_grad "
          "= var.detach().");
    return;
  }
  if (flag == current) return;
  const StorageState* s = ts ? &storages_[ts->storage] : nullptr;
  if (s && s->input_index >= 0 && ts->chain.empty()) {
    size_t g = static_cast<size_t>(s->input_index);
    if (v != graph_.inputs()[g])
      throw UnsupportedError("requires_grad_() on input " + std::to_string(g) +
                             " after the function wrote to it in place: aot_function cannot "
                             "give the caller's tensor that history. Call requires_grad_() "
                             "before the in-place op, or before calling the function.");
    mark_requires_grad(v, flag);
    input_is_leaf_requiring_grad_[g] = flag;
    std::erase_if(input_requires_grad_changes_, [&](const auto& c) { return c.graph_input == g; });
    input_requires_grad_changes_.push_back({g, flag});
    return;
  }
  if (flag) {
    make_interior_leaf(t);
    return;
  }
  mark_requires_grad(v, false);
  for (InteriorLeaf& l : interior_leaves_)
    if (l.value == v) l.requires_grad = false;
}

void Tracer::backward(const std::vector<Tensor>&) {
  throw UnsupportedError(
      "backward() inside a compiled function would accumulate gradients into .grad() of the "
      "tensors being traced, which aot_function cannot do. Return the loss and call backward() "
      "on the result, or use autograd::grad inside the function.");
}

// ---- autograd::grad ----

void Tracer::check_inner_grad_node(size_t node) const {
  const graph::Node& n = graph_.nodes()[node];
  if (node < freed_nodes_.size() && freed_nodes_[node])
    throw std::runtime_error(
        "Trying to backward through the graph a second time (at " + std::string(n.op->name) +
        "): the saved values were freed after the first backward. Pass retain_graph=true to the "
        "first backward() if you need to call it again.");
  for (const SavedUse& use : saved_uses_)
    if (use.node == node && storages_[use.storage].generation != use.generation)
      throw std::runtime_error(
          "one of the variables needed for gradient computation has been modified by an inplace "
          "operation: " +
          use.what +
          " was modified inside the compiled function after it was "
          "saved. Clone it before modifying it.");
}

namespace {

// Values computed from one of `from` (those included): only their producers lie on a path from
// one of them, and only those nodes run, as in eager's engine.
std::vector<bool> values_from(const graph::Graph& g, const std::vector<graph::ValueId>& from) {
  std::vector<bool> reached(g.values().size(), false);
  for (graph::ValueId v : from) reached[v.index] = true;
  for (const graph::Node& n : g.nodes()) {
    if (!n.op->vjp) continue;  // detach(): no gradient flows back through it
    bool any = false;
    for (const graph::NodeArg& a : n.args)
      for (graph::ValueId v : graph::arg_values(a)) any = any || reached[v.index];
    if (any)
      for (graph::ValueId o : n.outputs) reached[o.index] = true;
  }
  return reached;
}

// Node `n`'s arguments as fakes for its VJP, and which of its tensor inputs need a gradient.
struct VjpArgs {
  ops::OpArgs args;
  std::vector<bool> needs;
  bool any_needed = false;
};
VjpArgs vjp_args(Tracer& tracer, const graph::Node& n, const std::vector<bool>& from_input) {
  VjpArgs r;
  auto fake = [&](graph::ValueId v) {
    bool need = tracer.requires_grad(v) && from_input[v.index];
    r.needs.push_back(need);
    r.any_needed = r.any_needed || need;
    return tracer.bind(v, tracer.requires_grad(v));
  };
  for (const graph::NodeArg& a : n.args)
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, graph::ValueId>) {
            r.args.emplace_back(fake(x));
          } else if constexpr (std::is_same_v<T, graph::ValueList>) {
            ops::TensorList list;
            for (graph::ValueId e : x) {
              // A None index entry keeps its place in the flat inputs, as eager's does.
              if (e == graph::kNoValue) r.needs.push_back(false);
              list.push_back(e == graph::kNoValue ? Tensor() : fake(e));
            }
            r.args.emplace_back(std::move(list));
          } else {
            r.args.emplace_back(x);
          }
        },
        a);
  return r;
}

}  // namespace

std::vector<Tensor> Tracer::grad(const std::vector<Tensor>& outputs,
                                 const std::vector<Tensor>& inputs,
                                 const std::vector<Tensor>& grad_outputs, bool retain_graph,
                                 bool allow_unused) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw std::invalid_argument("backward: got " + std::to_string(grad_outputs.size()) +
                                " gradients for " + std::to_string(outputs.size()) + " outputs");
  NoGradGuard no_grad;  // VJP rules run without recording, as in the eager engine
  std::vector<std::pair<graph::ValueId, Tensor>> seeds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor g = output_gradient(outputs[i], grad_outputs.empty() ? Tensor() : grad_outputs[i], i);
    seeds.emplace_back(value_of(outputs[i], "grad() output " + std::to_string(i)), g);
  }
  std::vector<graph::ValueId> in_values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in_values.push_back(value_of(inputs[i], "grad() input " + std::to_string(i)));
    // A view made under no_grad has no edge of its own (bind_no_grad_views), as in eager.
    if (!requires_grad(in_values.back()) || is_dropped_grad_view(inputs[i]))
      throw std::invalid_argument("grad: input " + std::to_string(i) + " does not require grad");
  }
  const size_t num_nodes = graph_.nodes().size();
  const std::vector<bool> from_input = values_from(graph_, in_values);
  std::vector<Tensor> grads(graph_.values().size());
  auto accumulate = [&](graph::ValueId v, const Tensor& g) {
    if (g.defined()) grads[v.index] = grads[v.index].defined() ? add(grads[v.index], g) : g;
  };
  for (const auto& [v, g] : seeds) accumulate(v, g);
  for (size_t ni = num_nodes; ni-- > 0;) {
    const graph::Node n = graph_.nodes()[ni];  // a copy: the VJP's ops append nodes
    if (!n.op->vjp || n.outputs.empty() || !from_input[n.outputs[0].index]) continue;
    bool any_grad = false;
    for (graph::ValueId o : n.outputs) any_grad = any_grad || grads[o.index].defined();
    if (!any_grad) continue;
    VjpArgs a = vjp_args(*this, n, from_input);
    if (!a.any_needed) continue;
    check_inner_grad_node(ni);
    std::vector<Tensor> outs, out_grads;
    for (graph::ValueId o : n.outputs) {
      outs.push_back(bind(o, requires_grad(o)));
      const ops::TensorMeta& m = graph_.value(o).meta;
      // As the eager engine: a multi-output op gets zeros for outputs without a gradient.
      bool zero = !grads[o.index].defined() && n.outputs.size() > 1;
      out_grads.push_back(zero ? zeros(m.sizes, m.dtype) : grads[o.index]);
    }
    std::vector<Tensor> in_grads =
        n.op->vjp(ops::VjpContext{*n.op, a.args, outs, out_grads, a.needs});
    size_t k = 0;
    for (const graph::NodeArg& arg : n.args)
      for (graph::ValueId v : graph::arg_values(arg, /*keep_none=*/true)) {
        if (k < in_grads.size() && a.needs[k]) accumulate(v, in_grads[k]);  // never for a None
        ++k;
      }
    if (!retain_graph && saves_data(*this, n)) {
      freed_nodes_.resize(graph_.nodes().size(), false);
      freed_nodes_[ni] = true;
    }
  }
  std::vector<Tensor> result;
  for (size_t i = 0; i < in_values.size(); ++i) {
    result.push_back(grads[in_values[i].index]);
    if (!result.back().defined() && !allow_unused)
      throw std::invalid_argument("grad: input " + std::to_string(i) +
                                  " was not used in computing the outputs (pass "
                                  "allow_unused=true to get an undefined gradient)");
  }
  return result;
}

// The gradient grad() starts from at output `i`: `given`, or ones for a one-element output.
Tensor Tracer::output_gradient(const Tensor& output, const Tensor& given, size_t i) {
  graph::ValueId v = value_of(output, "grad() output " + std::to_string(i));
  if (!requires_grad(v) || is_dropped_grad_view(output))
    throw std::invalid_argument("element " + std::to_string(i) +
                                " of tensors does not require grad and does not have a grad_fn");
  const ops::TensorMeta& m = graph_.value(v).meta;
  if (!given.defined()) {
    if (numel_of(m.sizes) != 1)
      throw std::invalid_argument(
          "grad can be implicitly created only for scalar outputs; output " + std::to_string(i) +
          " has shape " + shape_to_string(m.sizes) + ": pass a gradient");
    return ones(m.sizes, m.dtype);
  }
  if (given.sizes() != m.sizes)
    throw std::invalid_argument("backward: gradient " + std::to_string(i) + " has shape " +
                                shape_to_string(given.sizes()) + " but the output has shape " +
                                shape_to_string(m.sizes));
  graph::ValueId g = value_of(given, "grad() gradient " + std::to_string(i));  // lifts a literal
  return bind(g, requires_grad(g));
}

}  // namespace aotgrad::trace
