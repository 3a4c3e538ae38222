// Module registration, the recursive walks that name parameters and buffers, and the two
// containers (Sequential, ModuleList).
#include "aotgrad/nn/module.h"

#include <algorithm>
#include <stdexcept>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"

namespace aotgrad::nn {

Tensor parameter(const Tensor& data, bool requires_grad) {
  if (!data.defined()) throw std::invalid_argument("nn::parameter: data is an undefined Tensor");
  Tensor p = data.detach();
  if (requires_grad) {
    if (!is_floating(p.dtype()))
      throw std::invalid_argument(
          std::string("nn::parameter: only floating tensors can require grad, got ") +
          std::string(dtype_name(p.dtype())) + "; pass requires_grad = false");
    p.requires_grad_();
  }
  return p;
}

Tensor Module::forward(const Tensor&) {
  throw std::logic_error(type_name() +
                         " has no single-tensor forward; override Module::forward or call the "
                         "module's own forward with its arguments");
}

void Module::check_new_name(const std::string& name, const char* what) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw std::invalid_argument(type_name() + ": " + what + " name '" + name +
                                "' must be non-empty and contain no '.'");
  auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) {
      if constexpr (std::is_same_v<std::decay_t<decltype(e)>, Slot>)
        return e.name == name;
      else
        return e.first == name;
    });
  };
  if (taken(params_) || taken(buffers_) || taken(children_))
    throw std::invalid_argument(type_name() + ": the name '" + name +
                                "' is already registered; "
                                "pick another " +
                                what + " name");
}

void Module::register_parameter(const std::string& name, Tensor& slot) {
  check_new_name(name, "parameter");
  if (slot.defined() && !slot.is_leaf())
    throw std::invalid_argument(type_name() + ": parameter '" + name +
                                "' is not a leaf tensor; wrap its value with nn::parameter()");
  params_.push_back({name, &slot});
}

void Module::register_buffer(const std::string& name, Tensor& slot) {
  check_new_name(name, "buffer");
  buffers_.push_back({name, &slot});
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "submodule");
  if (!module) throw std::invalid_argument(type_name() + ": submodule '" + name + "' is null");
  children_.emplace_back(name, std::move(module));
}

void Module::collect(bool buffers, const std::string* prefix, TensorSlots& out,
                     std::vector<const TensorImpl*>& seen) const {
  for (const Slot& s : buffers ? buffers_ : params_) {
    if (!s.tensor->defined()) continue;
    auto it = std::find(seen.begin(), seen.end(), s.tensor->impl());
    if (it != seen.end()) {
      out.slots[static_cast<size_t>(it - seen.begin())].push_back(s.tensor);
      continue;
    }
    seen.push_back(s.tensor->impl());
    if (prefix) out.names.push_back(*prefix + s.name);
    out.slots.push_back({s.tensor});
  }
  for (const auto& [name, child] : children_) {
    if (!prefix) {
      child->collect(buffers, nullptr, out, seen);
      continue;
    }
    std::string child_prefix = *prefix + name + ".";
    child->collect(buffers, &child_prefix, out, seen);
  }
}

namespace {

NamedTensors named(const TensorSlots& s) {
  NamedTensors out;
  out.reserve(s.names.size());
  for (size_t i = 0; i < s.names.size(); ++i) out.emplace_back(s.names[i], *s.slots[i].front());
  return out;
}

std::vector<Tensor> values(const TensorSlots& s) {
  std::vector<Tensor> out;
  out.reserve(s.slots.size());
  for (const auto& slots : s.slots) out.push_back(*slots.front());
  return out;
}

}  // namespace

TensorSlots Module::slots_of(bool buffers, bool with_names) const {
  TensorSlots out;
  std::vector<const TensorImpl*> seen;
  std::string root;
  collect(buffers, with_names ? &root : nullptr, out, seen);
  return out;
}

TensorSlots Module::parameter_slots(bool with_names) {
  return slots_of(false, with_names);
}
TensorSlots Module::buffer_slots(bool with_names) {
  return slots_of(true, with_names);
}
NamedTensors Module::named_parameters() const {
  return named(slots_of(false, true));
}
std::vector<Tensor> Module::parameters() const {
  return values(slots_of(false, false));
}
NamedTensors Module::named_buffers() const {
  return named(slots_of(true, true));
}
std::vector<Tensor> Module::buffers() const {
  return values(slots_of(true, false));
}

void Module::collect_modules(const std::string* prefix,
                             std::vector<std::pair<std::string, Module*>>& out) {
  for (const auto& e : out)
    if (e.second == this) return;
  out.emplace_back(prefix ? *prefix : std::string(), this);
  for (const auto& [name, child] : children_) {
    if (!prefix) {
      child->collect_modules(nullptr, out);
      continue;
    }
    std::string child_prefix = prefix->empty() ? name : *prefix + "." + name;
    child->collect_modules(&child_prefix, out);
  }
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  std::string root;
  collect_modules(&root, out);
  return out;
}

std::vector<Module*> Module::modules() {
  std::vector<std::pair<std::string, Module*>> unnamed;
  collect_modules(nullptr, unnamed);
  std::vector<Module*> out;
  out.reserve(unnamed.size());
  for (const auto& e : unnamed) out.push_back(e.second);
  return out;
}

Module& Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      Tensor g = p.grad();
      g.zero_();
    }
  }
}

Module& Module::to(DType dtype) {
  NoGradGuard no_grad;
  for (const auto& slots : parameter_slots().slots) {
    const Tensor& p = *slots.front();
    if (!is_floating(p.dtype()) || p.dtype() == dtype) continue;
    Tensor cast = parameter(aotgrad::to(p, dtype), p.requires_grad());
    for (Tensor* s : slots) *s = cast;
  }
  for (const auto& slots : buffer_slots().slots) {
    const Tensor& b = *slots.front();
    if (!is_floating(b.dtype()) || b.dtype() == dtype) continue;
    Tensor cast = aotgrad::to(b, dtype);
    for (Tensor* s : slots) *s = cast;
  }
  return *this;
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  for (const auto& [name, t] : named_parameters()) out.emplace_back(name, t.detach());
  for (const auto& [name, t] : named_buffers()) out.emplace_back(name, t.detach());
  return out;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  NoGradGuard no_grad;
  NamedTensors own = state_dict();
  std::vector<bool> used(state.size(), false);
  for (auto& [name, target] : own) {
    // `key`, not `name` in the lambda: clang before 16 cannot capture a structured binding.
    const std::string& key = name;
    auto it =
        std::find_if(state.begin(), state.end(), [&](const auto& e) { return e.first == key; });
    if (it == state.end()) {
      if (strict)
        throw std::invalid_argument(type_name() + ".load_state_dict: missing key '" + name +
                                    "'; pass strict = false to keep its current value");
      continue;
    }
    used[static_cast<size_t>(it - state.begin())] = true;
    if (it->second.sizes() != target.sizes())
      throw std::invalid_argument(type_name() + ".load_state_dict: '" + name + "' has shape " +
                                  shape_to_string(target.sizes()) + " in the module but " +
                                  shape_to_string(it->second.sizes()) + " in the state");
    target.copy_(it->second);
  }
  if (!strict) return;
  for (size_t i = 0; i < state.size(); ++i)
    if (!used[i])
      throw std::invalid_argument(type_name() + ".load_state_dict: unexpected key '" +
                                  state[i].first + "'; pass strict = false to ignore it");
}

// ---- containers ----

Sequential::Sequential(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(size()), std::move(module));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& [name, child] : named_children()) y = child->forward(y);
  return y;
}

ModuleList::ModuleList(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(size()), std::move(module));
}

Module& ModuleList::operator[](size_t i) const {
  if (i >= size())
    throw std::out_of_range("ModuleList: index " + std::to_string(i) +
                            " is out of range for a list of " + std::to_string(size()) +
                            " modules");
  return *named_children()[i].second;
}

}  // namespace aotgrad::nn
