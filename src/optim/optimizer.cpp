// The optimizer base: param groups (each parameter in exactly one), defaults copied into groups
// without options, zero_grad and the closure protocol of step().
#include "aotgrad/optim/optimizer.h"

#include <cstdio>
#include <stdexcept>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"

namespace aotgrad::optim {

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  if (!options_)
    throw std::logic_error(
        "OptimizerParamGroup::options(): this group has no options yet; a group gets the "
        "optimizer's defaults when it is added to an optimizer");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  return const_cast<OptimizerParamGroup&>(*this).options();
}

std::string param_key(const Tensor& p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", static_cast<const void*>(p.impl()));
  return buf;
}

Optimizer::Optimizer(std::vector<OptimizerParamGroup> groups,
                     std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  if (groups.empty())
    throw std::invalid_argument("optimizer: got an empty parameter list; pass model->parameters()");
  // The derived class's check_options is not callable yet (its vtable is not set up while this
  // constructor runs), so the groups are added by the derived constructors through
  // add_param_group; keep them here until then.
  param_groups_.reserve(groups.size());
  pending_ = std::move(groups);
}

void Optimizer::add_pending_groups() {
  check_options(*defaults_);
  std::vector<OptimizerParamGroup> groups = std::move(pending_);
  pending_.clear();
  size_t total = 0;
  for (const OptimizerParamGroup& g : groups) {
    add_param_group(g);
    total += g.params().size();
  }
  if (total == 0)
    throw std::invalid_argument(type_name() +
                                ": got an empty parameter list; pass model->parameters()");
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  const std::string name = type_name();
  const std::string where = name + ": param group " + std::to_string(param_groups_.size());
  std::vector<Tensor> seen = parameters();
  for (size_t i = 0; i < group.params().size(); ++i) {
    const Tensor& p = group.params()[i];
    if (!p.defined() || !p.is_leaf() || !is_floating(p.dtype()))
      throw std::invalid_argument(where + ", parameter " + std::to_string(i) +
                                  ": expected a floating leaf tensor (make it with "
                                  "nn::parameter()); can't optimize a non-leaf tensor");
    for (const Tensor& q : seen)
      if (q.is_same(p))
        throw std::invalid_argument(where + ", parameter " + std::to_string(i) +
                                    ": this tensor is already optimized (in this or another "
                                    "group); pass each parameter once");
    seen.push_back(p);
  }
  OptimizerParamGroup added(group.params());
  added.set_options(group.has_options() ? group.options().clone() : defaults_->clone());
  check_options(added.options());
  param_groups_.push_back(std::move(added));
}

void Optimizer::add_parameters(const std::vector<Tensor>& params) {
  if (param_groups_.empty()) {
    add_param_group(OptimizerParamGroup(params));
    return;
  }
  // Validate as a group of its own, then move the tensors into the first group.
  add_param_group(OptimizerParamGroup(params));
  param_groups_.pop_back();
  for (const Tensor& p : params) param_groups_.front().params().push_back(p);
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (OptimizerParamGroup& group : param_groups_)
    for (const Tensor& p : group.params()) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (set_to_none)
        p.set_grad(Tensor());
      else
        g.zero_();
    }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> all;
  for (const OptimizerParamGroup& group : param_groups_)
    all.insert(all.end(), group.params().begin(), group.params().end());
  return all;
}

size_t Optimizer::size() const {
  size_t n = 0;
  for (const OptimizerParamGroup& group : param_groups_) n += group.params().size();
  return n;
}

Tensor Optimizer::run_closure(const LossClosure& closure) {
  if (!closure) return Tensor();
  EnableGradGuard enable_grad;
  return closure();
}

}  // namespace aotgrad::optim
