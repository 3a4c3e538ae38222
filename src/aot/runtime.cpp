#include "aot/runtime.h"

#include <stdexcept>

#include "aotgrad/autograd.h"
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

 private:
  std::shared_ptr<const Specialization> spec_;
  std::vector<Tensor> saved_;
  std::vector<uint64_t> versions_;
  bool released_ = false;
};

}  // namespace

std::vector<Tensor> run_specialization(const std::shared_ptr<const Specialization>& spec,
                                       std::vector<Tensor> inputs) {
  NoGradGuard no_grad;  // the compiled graphs are not recorded by eager autograd
  if (spec->is_inference) return spec->inference(std::move(inputs));

  std::vector<autograd::Edge> edges;
  edges.reserve(spec->grad_of_primal.size());
  for (size_t p : spec->grad_of_primal) edges.push_back(autograd::gradient_edge(inputs[p]));
  std::vector<Tensor> outs = spec->forward(std::move(inputs));
  std::vector<Tensor> saved(std::make_move_iterator(outs.begin() + spec->num_outputs),
                            std::make_move_iterator(outs.end()));
  outs.resize(spec->num_outputs);
  auto node = std::make_shared<CompiledBackward>(spec, std::move(saved));
  node->next_edges = std::move(edges);
  for (size_t k = 0; k < spec->tangent_of_output.size(); ++k) {
    Tensor& out = outs[spec->tangent_of_output[k]];
    if (out.grad_fn()) continue;  // the same tensor returned twice keeps its first slot
    autograd::set_history(out, node, static_cast<uint32_t>(k));
  }
  return outs;
}

}  // namespace aotgrad::aot
