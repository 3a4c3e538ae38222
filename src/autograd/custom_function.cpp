// Custom autograd Functions (aotgrad/function.h): the context, the eager node, and the traced
// aotgrad.autograd_function node (autograd/custom_function.h).
//
// Reading guide: apply_function runs the user's forward under NoGradGuard, then either wraps the
// outputs eagerly (wrap_eager: a FunctionNode becomes their grad_fn) or, when the inputs are
// traced, records the autograd_function node (wrap_traced). Both backward paths end in
// run_backward, which materializes gradients, calls the user's backward and checks what it
// returned (one gradient per forward argument slot, each shaped like its input).
// Thread-safety: a context belongs to one apply (and its node); the table of traced Functions is
// guarded by a mutex.
#include "autograd/custom_function.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "aotgrad/function.h"
#include "aotgrad/ops.h"
#include "autograd/nodes.h"
#include "ops/custom_op_table.h"

namespace aotgrad::autograd {

struct AutogradContext::State {
  variable_list to_save;           // as given; the traced path passes these to the node
  std::vector<SavedTensor> saved;  // eager: packed when forward returns
  // Eager, parallel to `saved`: the history each saved tensor had, for a backward with
  // create_graph=true (with_history). An output of the Function itself holds only its output
  // number: its history is the node, which holds this state (a cycle otherwise).
  std::vector<Edge> saved_history;
  std::vector<std::optional<uint32_t>> saved_output_nr;
  std::weak_ptr<Node> node;
  bool packed = false;
  bool released = false;
  std::string owner;  // "CubeBackward", for errors
  std::vector<const TensorImpl*> dirty, non_differentiable;
  bool materialize_grads = true;
  std::vector<bool> needs_input_grad;
};

AutogradContext::AutogradContext() : state_(std::make_shared<State>()) {}

void AutogradContext::save_for_backward(variable_list to_save) {
  state_->to_save = std::move(to_save);
}

variable_list AutogradContext::get_saved_variables() const {
  const State& s = *state_;
  if (!s.packed) return s.to_save;
  if (s.released)
    throw std::runtime_error("Trying to backward through the graph a second time (at " + s.owner +
                             "): its saved tensors were freed after the first backward. Pass "
                             "retain_graph=true to the first backward() if you need it again.");
  variable_list out;
  for (size_t i = 0; i < s.saved.size(); ++i) {
    const SavedTensor& t = s.saved[i];
    if (t.data.defined() && t.data.version() != t.version)
      throw std::runtime_error(
          "one of the variables needed for gradient computation has been modified by an inplace "
          "operation: saved tensor " +
          std::to_string(i) + " of " + s.owner + " is at version " +
          std::to_string(t.data.version()) + "; expected version " + std::to_string(t.version) +
          " instead. Avoid modifying it in place (clone() it first).");
    std::shared_ptr<Node> node = s.node.lock();
    if (s.saved_output_nr[i] && node)
      out.push_back(with_history(t.data, Edge{node, *s.saved_output_nr[i]}));
    else
      out.push_back(with_history(t.data, s.saved_history[i]));
  }
  return out;
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
  for (const Tensor& t : inputs) state_->dirty.push_back(t.impl());
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  for (const Tensor& t : outputs) state_->non_differentiable.push_back(t.impl());
}

void AutogradContext::set_materialize_grads(bool value) {
  state_->materialize_grads = value;
}

bool AutogradContext::needs_input_grad(size_t index) const {
  const auto& n = state_->needs_input_grad;
  if (index >= n.size())
    throw std::out_of_range("needs_input_grad(" + std::to_string(index) + "): " + state_->owner +
                            " has " + std::to_string(n.size()) + " Tensor inputs");
  return n[index];
}

namespace {

bool contains(const std::vector<const TensorImpl*>& v, const Tensor& t) {
  return t.defined() && std::find(v.begin(), v.end(), t.impl()) != v.end();
}

struct InputMeta {
  IntList sizes;
  DType dtype = DType::f32;
  bool defined = false;
};

// What backward needs besides the context: the argument slots and the inputs' metadata.
struct BackwardPlan {
  detail::FunctionSpec spec;
  std::vector<bool> is_var;
  std::vector<InputMeta> inputs;   // one per Tensor input
  std::vector<InputMeta> outputs;  // one per output backward gets a gradient for
};

// Whether `from` broadcasts to `to` (aligned at the trailing dims).
bool broadcasts_to(const IntList& from, const IntList& to) {
  if (from.size() > to.size()) return false;
  size_t lead = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1 && from[d] != to[lead + d]) return false;
  return true;
}

std::string once_differentiable_error(const std::string& name) {
  return "trying to differentiate twice a function that was marked with once_differentiable (" +
         name + ")";
}

// The user's backward on `grads` (one per output); returns one gradient per Tensor input.
variable_list run_backward(const BackwardPlan& plan, AutogradContext& ctx, variable_list grads) {
  const std::string& name = plan.spec.name;
  if (plan.spec.once_differentiable && grad_mode_enabled())
    throw std::runtime_error(once_differentiable_error(name));
  if (ctx.state_->materialize_grads)
    for (size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined()) grads[i] = zeros(plan.outputs[i].sizes, plan.outputs[i].dtype);
  variable_list out = plan.spec.backward(&ctx, std::move(grads));
  size_t slots = plan.is_var.size();
  bool extra_defined = false;
  for (size_t i = slots; i < out.size(); ++i) extra_defined = extra_defined || out[i].defined();
  if (out.size() < slots || extra_defined)
    throw std::runtime_error("function " + name +
                             " returned an incorrect number of gradients (expected " +
                             std::to_string(slots) + ", got " + std::to_string(out.size()) + ")");
  variable_list flat;
  for (size_t i = 0; i < slots; ++i) {
    if (!plan.is_var[i]) {
      if (out[i].defined())
        throw std::runtime_error("function " + name + " returned a gradient at index " +
                                 std::to_string(i) + ", which is not a Tensor argument of forward");
      continue;
    }
    const InputMeta& in = plan.inputs[flat.size()];
    Tensor g = out[i];
    if (g.defined() && !in.defined) g = Tensor();
    // As PyTorch's validate_outputs: a gradient the input broadcasts to is summed down to it.
    if (g.defined() && g.sizes() != in.sizes && broadcasts_to(in.sizes, g.sizes()))
      g = sum_to_size(g, in.sizes);
    if (g.defined() && g.sizes() != in.sizes)
      throw std::runtime_error("function " + name + " returned an invalid gradient at index " +
                               std::to_string(i) + " - got " + shape_to_string(g.sizes()) +
                               " but expected shape compatible with " + shape_to_string(in.sizes));
    if (g.defined() && g.dtype() != in.dtype) g = g.to(in.dtype);
    flat.push_back(g);
  }
  return flat;
}

class FunctionNode final : public Node {
 public:
  FunctionNode(BackwardPlan plan, AutogradContext ctx)
      : plan_(std::move(plan)), ctx_(std::move(ctx)) {
    for (const InputMeta& o : plan_.outputs) {
      output_sizes.push_back(o.sizes);
      output_dtypes.push_back(o.dtype);
    }
  }
  std::string name() const override { return plan_.spec.name; }
  uint32_t num_outputs() const override { return static_cast<uint32_t>(plan_.outputs.size()); }
  bool materializes_grads() const override { return ctx_.state_->materialize_grads; }
  // The user's backward is Tensor ops: recorded under create_graph, unless once_differentiable
  // (the engine then runs it without grad mode, and differentiating its result raises this).
  std::string double_backward_error() const override {
    return plan_.spec.once_differentiable ? once_differentiable_error(plan_.spec.name) : "";
  }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override {
    variable_list grads = run_backward(plan_, ctx_, std::move(grad_outputs));
    for (size_t i = 0; i < grads.size() && i < next_edges.size(); ++i)
      if (!next_edges[i].node) grads[i] = Tensor();
    return grads;
  }
  void release_saved() override {
    ctx_.state_->saved.clear();
    ctx_.state_->saved_history.clear();
    ctx_.state_->released = true;
  }

 private:
  BackwardPlan plan_;
  AutogradContext ctx_;
};

InputMeta meta_of(const Tensor& t) {
  return t.defined() ? InputMeta{t.sizes(), t.dtype(), true} : InputMeta{};
}

bool differentiable(const AutogradContext& ctx, const Tensor& out) {
  return out.defined() && is_floating(out.dtype()) &&
         !contains(ctx.state_->non_differentiable, out);
}

void check_dirty_returned(const AutogradContext& ctx, const variable_list& outputs,
                          const std::string& name) {
  for (const TensorImpl* d : ctx.state_->dirty) {
    bool returned = false;
    for (const Tensor& o : outputs) returned = returned || (o.defined() && o.impl() == d);
    if (!returned)
      throw std::runtime_error(name +
                               ": some tensors marked dirty in forward were not returned "
                               "as outputs; return every tensor passed to mark_dirty");
  }
}

// Packs the tensors forward saved, once the outputs have their history: a saved output then
// refers to the node by number, anything else keeps the edge its history had.
void pack_saved(AutogradContext::State& s, const std::shared_ptr<Node>& node) {
  for (const Tensor& t : s.to_save) {
    s.saved.push_back(SavedTensor::save(t, true));
    bool is_output = t.defined() && t.grad_fn() == node;
    s.saved_output_nr.push_back(is_output ? std::optional<uint32_t>(t.impl()->autograd->output_nr)
                                          : std::nullopt);
    s.saved_history.push_back(!is_output && t.defined() && t.requires_grad() ? gradient_edge(t)
                                                                             : Edge{});
  }
  s.to_save.clear();
  s.packed = true;
  s.node = node;
}

variable_list wrap_eager(const BackwardPlan& plan, AutogradContext& ctx,
                         const variable_list& inputs, variable_list outputs) {
  AutogradContext::State& s = *ctx.state_;
  BackwardPlan node_plan = plan;
  for (const Tensor& o : outputs) node_plan.outputs.push_back(meta_of(o));
  auto node = std::make_shared<FunctionNode>(std::move(node_plan), ctx);
  for (const Tensor& in : inputs)
    node->next_edges.push_back(in.defined() && in.requires_grad() ? gradient_edge(in) : Edge{});
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    if (!differentiable(ctx, out)) continue;
    bool is_input = false;
    for (const Tensor& in : inputs) is_input = is_input || (in.defined() && in.is_same(out));
    if (is_input && contains(s.dirty, out)) {
      if (out.is_leaf() && out.requires_grad())
        throw std::runtime_error(
            "a leaf Variable that requires grad has been used in an "
            "in-place operation (mark_dirty in " +
            plan.spec.name + "). Clone it before the call, or mark_dirty a clone.");
      if (out.is_view())
        throw std::runtime_error(plan.spec.name +
                                 ": mark_dirty on a view is not supported; "
                                 "pass its base, or a clone");
    } else if (is_input) {
      out = detached_alias(out);  // the input keeps its own history; the output gets the node's
    }
    set_history(out, node, static_cast<uint32_t>(i));
  }
  pack_saved(s, node);
  return outputs;
}

// ---- the traced path ----

struct TracedFunction {
  BackwardPlan plan;
  AutogradContext ctx;                   // saved_data and flags; saved tensors come as node args
  std::vector<size_t> saved_positions;   // index in to_save of each saved node argument
  size_t num_saved = 0;                  // to_save's length
  std::vector<size_t> output_of_result;  // the forward output each node result stands for
};

std::mutex& traced_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<int64_t, std::shared_ptr<const TracedFunction>>& traced_functions() {
  static std::unordered_map<int64_t, std::shared_ptr<const TracedFunction>> t;
  return t;
}

int64_t remember(std::shared_ptr<const TracedFunction> f) {
  std::lock_guard lock(traced_mutex());
  static int64_t next = 0;
  traced_functions().emplace(next, std::move(f));
  return next++;
}

std::shared_ptr<const TracedFunction> recall(int64_t id) {
  std::lock_guard lock(traced_mutex());
  auto it = traced_functions().find(id);
  if (it == traced_functions().end())
    throw std::runtime_error("aotgrad.autograd_function: node refers to custom Function #" +
                             std::to_string(id) +
                             ", which this process did not trace; a graph file cannot carry a "
                             "Function's backward (trace the function again)");
  return it->second;
}

variable_list wrap_traced(const BackwardPlan& plan, AutogradContext& ctx,
                          const variable_list& inputs, variable_list outputs) {
  auto f = std::make_shared<TracedFunction>();
  f->plan = plan;
  ops::TensorList node_inputs, node_outputs, node_saved;
  for (const Tensor& in : inputs)
    if (in.defined()) node_inputs.push_back(in);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!differentiable(ctx, outputs[i])) continue;
    f->output_of_result.push_back(i);
    node_outputs.push_back(outputs[i]);
    f->plan.outputs.push_back(meta_of(outputs[i]));
  }
  if (node_outputs.empty()) return outputs;
  const variable_list& to_save = ctx.state_->to_save;
  f->num_saved = to_save.size();
  for (size_t i = 0; i < to_save.size(); ++i)
    if (to_save[i].defined()) {
      f->saved_positions.push_back(i);
      node_saved.push_back(to_save[i]);
    }
  f->ctx.saved_data = ctx.saved_data;
  f->ctx.state_->owner = ctx.state_->owner;
  f->ctx.state_->materialize_grads = ctx.state_->materialize_grads;
  f->ctx.state_->needs_input_grad = ctx.state_->needs_input_grad;
  int64_t id = remember(f);
  std::vector<Tensor> results =
      ops::dispatch(autograd_function_op(), {node_inputs, node_outputs, node_saved, id});
  for (size_t k = 0; k < results.size(); ++k) {
    Tensor& out = outputs[f->output_of_result[k]];
    if (contains(ctx.state_->dirty, out)) {
      out.copy_(results[k]);  // the input itself is the output, carrying the node's gradient
    } else {
      out = results[k];
    }
  }
  return outputs;
}

// The VJP of the autograd_function node: the user's backward on the joint graph's fakes.
std::vector<Tensor> function_vjp(const ops::VjpContext& c) {
  std::shared_ptr<const TracedFunction> f = recall(ops::int_arg(c.args, 3));
  AutogradContext ctx;
  *ctx.state_ = *f->ctx.state_;
  ctx.saved_data = f->ctx.saved_data;
  const ops::TensorList& saved = ops::tensor_list_arg(c.args, kFunctionSaved);
  ctx.state_->to_save.assign(f->num_saved, Tensor());
  for (size_t k = 0; k < saved.size(); ++k) ctx.state_->to_save[f->saved_positions[k]] = saved[k];
  size_t n_inputs = ops::tensor_list_arg(c.args, kFunctionInputs).size();
  std::vector<Tensor> grads = c.grads;
  std::vector<Tensor> in_grads = run_backward(f->plan, ctx, std::move(grads));
  std::vector<Tensor> flat;  // the node's defined inputs, then its outputs and saved (no gradient)
  for (size_t i = 0; i < in_grads.size(); ++i)
    if (f->plan.inputs[i].defined) flat.push_back(c.needs(flat.size()) ? in_grads[i] : Tensor());
  flat.resize(n_inputs + ops::tensor_list_arg(c.args, kFunctionOutputs).size() + saved.size());
  return flat;
}

std::vector<ops::TensorMeta> function_meta(const ops::OpArgs& args) {
  std::vector<ops::TensorMeta> out;
  for (const Tensor& t : ops::tensor_list_arg(args, kFunctionOutputs))
    out.push_back({t.dtype(), t.sizes(), t.strides(), t.storage_offset()});
  return out;
}

std::vector<Tensor> function_kernel(const ops::OpArgs& args) {
  return ops::tensor_list_arg(args, kFunctionOutputs);
}

}  // namespace

const ops::OpDef& autograd_function_op() {
  static const ops::OpDef& op = []() -> const ops::OpDef& {
    static const ops::OpDef row{
        .name = "aotgrad.autograd_function.default",
        .schema =
            "autograd_function(Tensor[] inputs, Tensor[] outputs, Tensor[] saved, "
            "int function) -> Tensor[]",
        .meta = function_meta,
        .kernel = function_kernel,
        .vjp = function_vjp,
        .saves = {ops::bit(kFunctionSaved), 0},  // what backward reads: the saved tensors
        .recompute = ops::Recompute::effectful};
    ops::OpDef::Derived d;
    d.schema = ops::parse_schema(row.schema);
    ops::add_runtime_row(row, std::move(d));
    return row;
  }();
  return op;
}

namespace detail {

std::string demangled_name(const std::type_info& t) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status),
                                           std::free);
  std::string name = status == 0 && d ? d.get() : t.name();
  size_t colons = name.rfind("::");
  return colons == std::string::npos ? name : name.substr(colons + 2);
}

variable_list apply_function(const FunctionSpec& spec, const variable_list& inputs,
                             const std::vector<bool>& is_var,
                             const std::function<variable_list(AutogradContext*)>& forward) {
  AutogradContext ctx;
  ctx.state_->owner = spec.name;
  bool traced = false, executable = false;
  for (const Tensor& in : inputs) {
    bool needs = grad_mode_enabled() && in.defined() && in.requires_grad();
    ctx.state_->needs_input_grad.push_back(needs);
    executable = executable || needs;
    traced = traced || (in.defined() && in.is_fake());
  }
  variable_list outputs;
  {
    NoGradGuard no_grad;
    outputs = forward(&ctx);
  }
  check_dirty_returned(ctx, outputs, spec.name);
  if (!executable) return outputs;
  BackwardPlan plan{spec, is_var, {}, {}};
  for (const Tensor& in : inputs) plan.inputs.push_back(meta_of(in));
  return traced ? wrap_traced(plan, ctx, inputs, std::move(outputs))
                : wrap_eager(plan, ctx, inputs, std::move(outputs));
}

}  // namespace detail
}  // namespace aotgrad::autograd
