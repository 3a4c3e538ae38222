#include "aot/runtime.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "aotgrad/autograd.h"
#include "aotgrad/inplace_view.h"
#include "aotgrad/ops.h"
#include "autograd/nodes.h"

namespace aotgrad::aot {
namespace {

// The backward half of a compiled call, as an eager autograd node.
class CompiledBackward final : public autograd::Node {
 public:
  CompiledBackward(std::shared_ptr<const Specialization> spec, std::vector<Tensor> saved)
      : spec_(std::move(spec)) {
    // Detached aliases: a saved value that is also a user output must not hold this node
    // through its grad_fn (a reference cycle).
    for (const Tensor& t : saved) {
      saved_.push_back(autograd::SavedTensor::save(t, true).data);
      versions_.push_back(t.version());
    }
    for (size_t o : spec_->tangent_of_output) {
      output_sizes.push_back(spec_->output_metas[o].sizes);
      output_dtypes.push_back(spec_->output_metas[o].dtype);
    }
  }

  std::string name() const override { return "CompiledFunctionBackward(" + spec_->fn_name + ")"; }
  uint32_t num_outputs() const override {
    return static_cast<uint32_t>(spec_->tangent_of_output.size());
  }

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    if (released_)
      throw std::runtime_error("Trying to backward through the graph a second time (at " + name() +
                               "): pass retain_graph=true to the first backward() to do that.");
    if (!spec_->backward_error.empty()) throw std::runtime_error(spec_->backward_error);
    std::vector<Tensor> args;
    args.reserve(saved_.size() + grads.size());
    for (size_t i = 0; i < saved_.size(); ++i) {
      if (saved_[i].version() != versions_[i]) {
        const partition::SavedValue& s = spec_->saved[i];
        throw std::runtime_error(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: %" + s.name + " (from " + s.producer + ") saved by compiled "
            "function '" + spec_->fn_name + "' is at version " + std::to_string(saved_[i].version()) +
            "; expected version " + std::to_string(versions_[i]) + " instead.");
      }
      args.push_back(saved_[i]);
    }
    for (size_t k = 0; k < grads.size(); ++k) {
      const ops::TensorMeta& m = spec_->output_metas[spec_->tangent_of_output[k]];
      if (!grads[k].defined()) grads[k] = zeros(m.sizes, m.dtype);
      else if (grads[k].dtype() != m.dtype) grads[k] = to(grads[k], m.dtype);
      args.push_back(std::move(grads[k]));
    }
    return spec_->backward(std::move(args));
  }

  void release_saved() override {
    released_ = true;
    saved_.clear();
  }

  // The epilogue moved the version counter of `storage` from `before` to `after` without
  // changing its data (as_strided_ of an input, as eager's t_ would): saved aliases of that
  // input are still valid.
  void forgive_version_bump(const Storage* storage, uint64_t before, uint64_t after) {
    for (size_t i = 0; i < saved_.size(); ++i)
      if (saved_[i].storage().get() == storage && versions_[i] == before) versions_[i] = after;
  }

 private:
  std::shared_ptr<const Specialization> spec_;
  std::vector<Tensor> saved_;
  std::vector<uint64_t> versions_;
  bool released_ = false;
};

std::vector<Tensor> run_graphs(const std::shared_ptr<const Specialization>& spec,
                               const std::vector<Tensor>& graph_inputs,
                               std::shared_ptr<CompiledBackward>& node_out) {
  NoGradGuard no_grad;  // the compiled graphs are not recorded by eager autograd
  if (spec->is_inference) return spec->inference(std::vector<Tensor>(graph_inputs));
  std::vector<autograd::Edge> edges;
  edges.reserve(spec->grad_of_primal.size());
  for (size_t p : spec->grad_of_primal) edges.push_back(autograd::gradient_edge(graph_inputs[p]));
  std::vector<Tensor> outs = spec->forward(std::vector<Tensor>(graph_inputs));
  std::vector<Tensor> saved(std::make_move_iterator(outs.begin() + spec->num_graph_outputs),
                            std::make_move_iterator(outs.end()));
  outs.resize(spec->num_graph_outputs);
  auto node = std::make_shared<CompiledBackward>(spec, std::move(saved));
  node->next_edges = std::move(edges);
  node_out = node;
  for (size_t k = 0; k < spec->tangent_of_output.size(); ++k) {
    Tensor& out = outs[spec->tangent_of_output[k]];
    if (out.grad_fn()) continue;  // the same tensor returned twice keeps its first slot
    autograd::set_history(out, node, static_cast<uint32_t>(k));
  }
  return outs;
}

// The graph inputs for a training call: a mutated input, and any input sharing its storage, is
// passed as a clone (recorded by autograd), so the old values the forward saves for backward are
// not overwritten, nor their version counter moved, by the copy_ of the epilogue (PyTorch clones
// mutated inputs in the graph for the same reason). Eager's own version errors are reported
// separately (Specialization::backward_error).
std::vector<Tensor> with_fresh_mutated(const Specialization& spec, const std::vector<Tensor>& graph_inputs) {
  std::vector<const Storage*> written;
  for (size_t g : spec.meta.mutated_inputs)
    if (!spec.meta.input_info[g].keep_in_graph) written.push_back(graph_inputs[g].storage().get());
  if (written.empty()) return graph_inputs;
  std::vector<Tensor> call = graph_inputs;
  for (Tensor& t : call)
    if (std::find(written.begin(), written.end(), t.storage().get()) != written.end()) t = clone(t);
  return call;
}

// Writes the new value of each mutated input into the tensor the caller passed.
void apply_mutations(const Specialization& spec, const std::vector<Tensor>& graph_inputs,
                     const std::vector<Tensor>& outs) {
  for (size_t k = 0; k < spec.meta.mutated_inputs.size(); ++k) {
    size_t g = spec.meta.mutated_inputs[k];
    const InputAliasInfo& info = spec.meta.input_info[g];
    if (info.keep_in_graph) continue;
    Tensor target = graph_inputs[g];
    // Eager autograd records the write only when it was made with grad on, not through detach().
    bool recorded = !info.mutations_under_no_grad && !info.mutations_hidden_from_autograd &&
                    outs[k].requires_grad();
    std::optional<NoGradGuard> no_grad;
    std::optional<EnableGradGuard> grad;
    if (recorded) grad.emplace();
    else no_grad.emplace();
    copy_(target, outs[k]);
  }
}

// Gives each caller's tensor the geometry the function left its input in (after the outputs
// were regenerated: aliases of an input replay their chain from its original geometry).
void apply_metadata_mutations(const ViewAndMutationMeta& meta, const std::vector<Tensor>& inputs,
                              CompiledBackward* node) {
  for (const MetadataMutation& m : meta.metadata_mutations) {
    Tensor target = inputs[m.input];
    uint64_t before = target.version();
    if (!m.changed) {
      target.storage()->bump_version();
    } else {
      std::optional<NoGradGuard> no_grad;
      std::optional<EnableGradGuard> grad;
      if (m.under_grad) grad.emplace();
      else no_grad.emplace();
      as_strided_(target, m.sizes, m.strides, m.storage_offset);
    }
    if (node) node->forgive_version_bump(target.storage().get(), before, target.version());
  }
}

}  // namespace

std::vector<Tensor> run_specialization(const std::shared_ptr<const Specialization>& spec,
                                       const std::vector<Tensor>& inputs) {
  const Specialization& s = *spec;
  for (const RequiresGradChange& c : s.meta.input_requires_grad_changes)
    Tensor(inputs[c.input]).requires_grad_(c.requires_grad);
  std::vector<Tensor> graph_inputs = s.plan.trivial() ? inputs : graph_inputs_for(s.plan, inputs);
  std::shared_ptr<CompiledBackward> node;  // null for inference
  std::vector<Tensor> outs = s.is_inference ? run_graphs(spec, graph_inputs, node)
                                            : run_graphs(spec, with_fresh_mutated(s, graph_inputs), node);
  if (!s.meta.mutated_inputs.empty()) apply_mutations(s, graph_inputs, outs);

  const ViewAndMutationMeta& m = s.meta;
  size_t first_user = 0;
  for (size_t g : m.mutated_inputs)
    if (!m.input_info[g].keep_in_graph) ++first_user;
  size_t first_base = first_user + m.num_user_graph_outputs;
  std::vector<Tensor> result(m.output_info.size());
  // Values first: aliases of user outputs replay from them.
  for (size_t o = 0; o < m.output_info.size(); ++o) {
    const OutputAliasInfo& info = m.output_info[o];
    if (info.graph_output >= 0) result[o] = outs[first_user + info.graph_output];
    // A graph output computed by a view op (the value of an intermediate after t_()) is a plain
    // tensor in eager: it must not keep the backend's buffer as its _base.
    if (info.type == OutputType::non_alias && result[o].defined() && result[o].is_view())
      result[o].impl()->base.reset();
    else if (info.type == OutputType::is_input) result[o] = inputs[info.base];
    if (info.requires_grad_set_inside && info.graph_output >= 0) result[o].requires_grad_();
  }
  trace::PieceCache pieces;
  for (size_t o = 0; o < m.output_info.size(); ++o) {
    const OutputAliasInfo& info = m.output_info[o];
    switch (info.type) {
      case OutputType::alias_of_input:
        result[o] = trace::replay_view(graph_inputs[info.base], info.view_chain, pieces);
        break;
      case OutputType::alias_of_intermediate:
      case OutputType::alias_of_intermediate_save_as_output:
        result[o] = trace::replay_view(outs[first_base + info.base], info.view_chain, pieces);
        break;
      case OutputType::alias_of_intermediate_base_is_user_output:
        result[o] = trace::replay_view(result[info.base], info.view_chain, pieces);
        break;
      default:
        break;
    }
    if (info.requires_grad_set_inside && info.graph_output < 0) result[o].requires_grad_();
  }
  if (!m.metadata_mutations.empty()) apply_metadata_mutations(m, inputs, node.get());
  return result;
}

}  // namespace aotgrad::aot
