// Module registration, the recursive walks that name parameters and buffers, and the two
// containers (Sequential, ModuleList).
#include "aotgrad/nn/module.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <utility>

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

namespace nn_detail {

std::string demangle(const char* mangled_name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> readable(
      abi::__cxa_demangle(mangled_name, nullptr, nullptr, &status), std::free);
  return status == 0 && readable ? std::string(readable.get()) : std::string(mangled_name);
}

}  // namespace nn_detail

std::string Module::type_name() const {
  return nn_detail::demangle(typeid(*this).name());
}

void Module::pretty_print(std::ostream& os) const {
  os << type_name();
}

void Module::print_recursive(std::ostream& os, const std::string& indentation) const {
  pretty_print(os);
  if (children_.empty()) return;
  os << "(\n";
  const std::string inner = indentation + "  ";
  for (const auto& [name, child] : children_) {
    os << inner << "(" << name << "): ";
    child->print_recursive(os, inner);
    os << "\n";
  }
  os << indentation << ")";
}

std::ostream& operator<<(std::ostream& os, const Module& module) {
  module.print_recursive(os, "");
  return os;
}

Tensor Module::call_forward(const Tensor& x) {
  // The module whose remembered forward runs on this thread: a class that brings Module::forward
  // back into scope (`using Module::forward;`) next to other overloads would otherwise have its
  // remembered forward call Module::forward, and so itself, forever.
  thread_local const Module* running = nullptr;
  if (forward_hook_ != nullptr && running != this) {
    const Module* outer = std::exchange(running, this);
    struct Restore {
      const Module* outer;
      ~Restore() { running = outer; }
    } restore{outer};
    return forward_hook_(*this, x);
  }
  throw std::logic_error(type_name() +
                         ": no single-tensor forward reachable through nn::Module; call the "
                         "module's own forward (or its holder), or register it with its own type");
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

Tensor& Module::register_parameter(const std::string& name, Tensor& slot) {
  check_new_name(name, "parameter");
  if (slot.defined() && !slot.is_leaf())
    throw std::invalid_argument(type_name() + ": parameter '" + name +
                                "' is not a leaf tensor; wrap its value with nn::parameter()");
  params_.push_back({name, &slot});
  return slot;
}

Tensor& Module::register_buffer(const std::string& name, Tensor& slot) {
  check_new_name(name, "buffer");
  buffers_.push_back({name, &slot});
  return slot;
}

Tensor& Module::add_owned(const std::string& name, Tensor tensor, bool buffer) {
  check_new_name(name, buffer ? "buffer" : "parameter");
  if (!buffer && tensor.defined() && !tensor.is_leaf())
    throw std::invalid_argument(type_name() + ": parameter '" + name +
                                "' is not a leaf tensor (it has autograd history); register "
                                "tensor.detach() instead");
  owned_.push_back(std::move(tensor));
  Tensor& slot = owned_.back();
  (buffer ? buffers_ : params_).push_back({name, &slot});
  return slot;
}

Tensor& Module::register_parameter(const std::string& name, Tensor&& tensor, bool requires_grad) {
  return register_parameter(name, static_cast<const Tensor&>(tensor), requires_grad);
}

Tensor& Module::register_parameter(const std::string& name, const Tensor& tensor,
                                   bool requires_grad) {
  Tensor& slot = add_owned(name, tensor, /*buffer=*/false);
  if (!slot.defined()) return slot;
  if (requires_grad && !is_floating(slot.dtype()))
    throw std::invalid_argument(type_name() + ": parameter '" + name + "' is " +
                                std::string(dtype_name(slot.dtype())) +
                                "; only floating tensors can require grad, so pass "
                                "requires_grad = false");
  slot.requires_grad_(requires_grad);
  return slot;
}

Tensor& Module::register_buffer(const std::string& name, Tensor&& tensor) {
  return add_owned(name, std::move(tensor), /*buffer=*/true);
}

Tensor& Module::register_buffer(const std::string& name, const Tensor& tensor) {
  return add_owned(name, tensor, /*buffer=*/true);
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "submodule");
  if (!module) throw std::invalid_argument(type_name() + ": submodule '" + name + "' is null");
  children_.emplace_back(name, std::move(module));
}

void Module::collect(bool buffers, const std::string* prefix, bool recurse, TensorSlots& out,
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
  if (!recurse) return;
  for (const auto& [name, child] : children_) {
    if (!prefix) {
      child->collect(buffers, nullptr, true, out, seen);
      continue;
    }
    std::string child_prefix = *prefix + name + ".";
    child->collect(buffers, &child_prefix, true, out, seen);
  }
}

namespace {

OrderedDict<std::string, Tensor> named(const TensorSlots& s, const char* what) {
  OrderedDict<std::string, Tensor> out(what);
  for (size_t i = 0; i < s.names.size(); ++i) out.insert(s.names[i], *s.slots[i].front());
  return out;
}

std::vector<Tensor> values(const TensorSlots& s) {
  std::vector<Tensor> out;
  out.reserve(s.slots.size());
  for (const auto& slots : s.slots) out.push_back(*slots.front());
  return out;
}

}  // namespace

TensorSlots Module::slots_of(bool buffers, bool with_names, bool recurse) const {
  TensorSlots out;
  std::vector<const TensorImpl*> seen;
  std::string root;
  collect(buffers, with_names ? &root : nullptr, recurse, out, seen);
  return out;
}

TensorSlots Module::parameter_slots(bool with_names) {
  return slots_of(false, with_names);
}
TensorSlots Module::buffer_slots(bool with_names) {
  return slots_of(true, with_names);
}
OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  return named(slots_of(false, true, recurse), "parameter");
}
std::vector<Tensor> Module::parameters(bool recurse) const {
  return values(slots_of(false, false, recurse));
}
OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  return named(slots_of(true, true, recurse), "buffer");
}
std::vector<Tensor> Module::buffers(bool recurse) const {
  return values(slots_of(true, false, recurse));
}

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const {
  OrderedDict<std::string, std::shared_ptr<Module>> out("submodule");
  for (const auto& [name, child] : children_) out.insert(name, child);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  out.reserve(children_.size());
  for (const auto& e : children_) out.push_back(e.second);
  return out;
}

void Module::collect_modules(const std::string* prefix,
                             std::vector<std::pair<std::string, const Module*>>& out) const {
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

namespace {

// The module itself as a shared_ptr: shared ownership when it has an owner, else a non-owning
// pointer (a stack-allocated top-level module).
std::shared_ptr<Module> self_pointer(Module& m) {
  std::shared_ptr<Module> owned = m.weak_from_this().lock();
  return owned ? owned : std::shared_ptr<Module>(std::shared_ptr<Module>(), &m);
}

}  // namespace

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules(const std::string& prefix,
                                                                        bool include_self) {
  std::vector<std::pair<std::string, const Module*>> walk;
  collect_modules(&prefix, walk);
  OrderedDict<std::string, std::shared_ptr<Module>> out("module");
  if (include_self) out.insert(prefix, self_pointer(*this));
  // Children are found through their parents' shared_ptrs; look each one up there.
  std::vector<std::pair<const Module*, std::shared_ptr<Module>>> owners;
  apply([&](Module& m) {
    for (const auto& e : m.children_) owners.emplace_back(e.second.get(), e.second);
  });
  for (size_t i = 1; i < walk.size(); ++i)
    for (const auto& [raw, owner] : owners)
      if (raw == walk[i].second) {
        out.insert(walk[i].first, owner);
        break;
      }
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) {
  return named_modules("", include_self).values();
}

std::vector<const Module*> Module::module_pointers() const {
  std::vector<std::pair<std::string, const Module*>> unnamed;
  collect_modules(nullptr, unnamed);
  std::vector<const Module*> out;
  out.reserve(unnamed.size());
  for (const auto& e : unnamed) out.push_back(e.second);
  return out;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (const Module* m : module_pointers()) fn(const_cast<Module&>(*m));
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
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

SequentialImpl::SequentialImpl(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) push_back(m);
}

Tensor SequentialImpl::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& call : calls_) y = call(y);
  return y;
}

std::shared_ptr<Module> SequentialImpl::ptr(size_t index) const {
  if (index >= size())
    throw std::out_of_range("Sequential: index " + std::to_string(index) +
                            " is out of range for a Sequential of " + std::to_string(size()) +
                            " modules");
  return child(index);
}

void SequentialImpl::throw_wrong_type(size_t index) const {
  throw std::invalid_argument("Sequential: module " + std::to_string(index) + " is a " +
                              child(index)->type_name() + ", not the type asked for");
}

ModuleListImpl::ModuleListImpl(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) push_back(m);
}

void ModuleListImpl::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(size()), std::move(module));
}

std::shared_ptr<Module> ModuleListImpl::ptr(size_t index) const {
  if (index >= size())
    throw std::out_of_range("ModuleList: index " + std::to_string(index) +
                            " is out of range for a list of " + std::to_string(size()) +
                            " modules");
  return child(index);
}

}  // namespace aotgrad::nn
