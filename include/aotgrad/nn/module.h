// nn::Module: a tree of named parameters, buffers and submodules (PyTorch's torch.nn.Module,
// with LibTorch's C++ API: register_*, named_parameters() as an OrderedDict, holders).
//
// Reading guide: a module registers *slots* — Tensor members of itself — under names, so
//   class LinearImpl : public Module {
//    public:
//     Tensor weight, bias;
//     LinearImpl(...) { weight = parameter(...); register_parameter("weight", weight); ... }
//   };
// Registration stores the member's address, not a copy: whoever reads named_parameters() sees
// the member's current value, and functional calls (aot_module) can put other tensors into the
// slots for one call. That is why modules are neither copyable nor movable (a moved module would
// leave dangling slot addresses) and live behind std::shared_ptr or a holder (holder.h).
// LibTorch's value form, `W = register_parameter("W", torch::randn({3}))`, is also accepted: the
// module then keeps the tensor in a slot of its own, and W shares it. Eager code, optimizers and
// checkpoints see one tensor either way; aot_module swaps only slots, so a compiled forward must
// read the returned slot (or register a member, the first form), not a copy of it.
// Hierarchical names join the registration names with dots: "blocks.0.attn.qkv.weight".
// Thread-safety: none.
#pragma once

#include <concepts>
#include <deque>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "aotgrad/nn/holder.h"
#include "aotgrad/nn/ordered_dict.h"
#include "aotgrad/tensor.h"
#include "aotgrad/torch/device.h"

namespace aotgrad::nn {

// A parameter is a leaf tensor that requires grad: `data` detached from any graph.
Tensor parameter(const Tensor& data, bool requires_grad = true);

class Module;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

// The slots holding each distinct parameter (or buffer) of a module tree, in named_parameters()
// (named_buffers()) order. A tensor registered under several names (weight tying) is one entry
// with several slots. Used to run a module with other tensors in its slots (aot_module).
struct TensorSlots {
  std::vector<std::string> names;           // the first name of each distinct tensor
  std::vector<std::vector<Tensor*>> slots;  // every slot holding it
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The class name, for printing and error messages: "Linear", "LayerNorm", ...; a user's
  // module defaults to its C++ class name (LibTorch's name()).
  virtual std::string type_name() const;
  std::string name() const { return type_name(); }
  // The one-tensor forward, called through a Module pointer or reference (a Sequential built
  // from base pointers, aot_module of a std::shared_ptr<Module>). Not virtual: LibTorch's Module
  // has no forward, and a user's `Tensor forward(Tensor x)` hides this one, as it would hide a
  // virtual one but without clang's and gcc's -Woverloaded-virtual warning in the user's code.
  // Reaches the concrete forward of aotgrad's own modules (they override call_forward) and of
  // any module registered, held or pushed into a container with its own type (remember_forward);
  // otherwise throws, as torch.nn.Module.forward does.
  Tensor forward(const Tensor& x) { return call_forward(x); }
  Tensor operator()(const Tensor& x) { return call_forward(x); }
  // Makes Module::forward call M's own forward(x), when M has one taking one tensor. Called by
  // register_module, holders and containers, which know the module's type.
  template <typename M>
  void remember_forward() {
    static_assert(std::is_base_of_v<Module, M>, "remember_forward takes an nn::Module");
    // Not when M's forward is Module's own (M declares none): that would call itself.
    constexpr bool inherited = requires {
      requires std::is_same_v<decltype(&M::forward), Tensor (Module::*)(const Tensor&)>;
    };
    if constexpr (!inherited && requires(M & m, const Tensor& x) {
                    { m.forward(x) } -> std::convertible_to<Tensor>;
                  }) {
      if (forward_hook_ == nullptr)
        forward_hook_ = [](Module& self, const Tensor& x) -> Tensor {
          return static_cast<M&>(self).forward(x);
        };
    }
  }

  // In registration order (own entries before children's, recursively unless recurse = false),
  // each tensor once, and undefined slots (a Linear without bias) left out.
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  // The direct submodules.
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;
  // This module (named `prefix`, when include_self) and every descendant, depth first, each
  // once. A module not owned by a shared_ptr (`Net net;` on the stack) is returned as a
  // non-owning pointer to itself, valid while it lives.
  OrderedDict<std::string, std::shared_ptr<Module>> named_modules(const std::string& prefix = "",
                                                                  bool include_self = true);
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true);
  // The same walk without names or shared_ptrs (the per-call path of aot_module).
  std::vector<const Module*> module_pointers() const;
  // Calls fn on this module and every descendant, depth first.
  void apply(const std::function<void(Module&)>& fn);
  // with_names = false leaves TensorSlots::names empty (the per-call path of aot_module).
  TensorSlots parameter_slots(bool with_names = true);
  TensorSlots buffer_slots(bool with_names = true);

  // Sets training mode on this module and every descendant (Dropout and BatchNorm read it).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Clears every parameter's .grad() (set_to_none, the PyTorch 2 default) or zeroes it in place.
  void zero_grad(bool set_to_none = true);
  // Casts every floating parameter and buffer to `dtype` (module.double() is to(DType::f64)).
  // Parameters become new leaves: build optimizers after the cast.
  Module& to(DType dtype);
  // LibTorch's module.to(device). aotgrad runs on the CPU only: the CPU leaves the module as it
  // is, any other device throws one line naming it (check_cpu_device).
  Module& to(const Device& device) {
    check_cpu_device(device, "Module::to");
    return *this;
  }
  // Every parameter and buffer by name (the tensors themselves, detached), as
  // torch.nn.Module.state_dict(). load_state_dict copies values into the existing tensors in place
  // (their identity, dtype and requires_grad stay); a missing or unexpected name, or a shape
  // mismatch, throws naming it (strict) — non-strict loading skips missing and unexpected names.
  NamedTensors state_dict() const;
  void load_state_dict(const NamedTensors& state, bool strict = true);

  // Writes this module alone, LibTorch's way: "torch::nn::Linear(in_features=3, ...)". The
  // default writes the type name; operator<< adds the children, indented.
  virtual void pretty_print(std::ostream& os) const;

  // The member form: `slot` must be a member of this module (its address is kept). An undefined
  // slot is allowed (an optional parameter such as an absent bias) and listed nowhere.
  Tensor& register_parameter(const std::string& name, Tensor& slot);
  Tensor& register_buffer(const std::string& name, Tensor& slot);
  // LibTorch's value form: the module keeps `tensor` (the same tensor, not a copy) in a slot of
  // its own and returns that slot. requires_grad sets the tensor's flag, as LibTorch does.
  Tensor& register_parameter(const std::string& name, Tensor&& tensor, bool requires_grad = true);
  Tensor& register_parameter(const std::string& name, const Tensor& tensor,
                             bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor&& tensor);
  Tensor& register_buffer(const std::string& name, const Tensor& tensor);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module takes an nn::Module");
    if (module) module->template remember_forward<M>();
    add_child(name, module);
    return module;
  }
  // A holder (nn::Linear, a TORCH_MODULE) registers the module it holds; the result converts
  // back to the holder: `fc = register_module("fc", nn::Linear(3, 4));`.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, const ModuleHolder<M>& holder) {
    return register_module(name, holder.ptr());
  }

 protected:
  // Module::forward's way to the concrete forward: aotgrad's own modules override it to call
  // their forward; the default calls the remembered one, or throws naming the class.
  virtual Tensor call_forward(const Tensor& x);
  // The direct children by position, for containers.
  size_t num_children() const { return children_.size(); }
  const std::shared_ptr<Module>& child(size_t i) const { return children_[i].second; }

 private:
  struct Slot {
    std::string name;
    Tensor* tensor;
  };
  friend std::ostream& operator<<(std::ostream& os, const Module& module);
  void check_new_name(const std::string& name, const char* what) const;
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  Tensor& add_owned(const std::string& name, Tensor tensor, bool buffer);
  TensorSlots slots_of(bool buffers, bool with_names, bool recurse = true) const;
  // prefix == nullptr: collect the slots without naming them.
  void collect(bool buffers, const std::string* prefix, bool recurse, TensorSlots& out,
               std::vector<const TensorImpl*>& seen) const;
  void collect_modules(const std::string* prefix,
                       std::vector<std::pair<std::string, const Module*>>& out) const;
  void print_recursive(std::ostream& os, const std::string& indentation) const;

  std::vector<Slot> params_;
  std::vector<Slot> buffers_;
  std::deque<Tensor> owned_;  // slots of the value form; a deque keeps their addresses
  NamedModules children_;
  bool training_ = true;
  Tensor (*forward_hook_)(Module&, const Tensor&) = nullptr;  // set by remember_forward
};

// The module, then its children as "(name): ..." lines, indented, as LibTorch prints modules.
std::ostream& operator<<(std::ostream& os, const Module& module);

// Runs its children in order, each output feeding the next (torch::nn::Sequential). Children are
// named "0", "1", ... unless pushed with a name. Each child is called through its own class's
// forward, so a user module whose forward takes a Tensor by value (not an override) works too.
class SequentialImpl : public Module {
 public:
  SequentialImpl() = default;
  explicit SequentialImpl(const std::vector<std::shared_ptr<Module>>& modules);
  template <typename... Ms>
  requires(sizeof...(Ms) > 0 &&
           (!std::is_same_v<std::remove_cvref_t<Ms>, std::vector<std::shared_ptr<Module>>> &&
            ...)) explicit SequentialImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  template <typename M>
  void push_back(std::shared_ptr<M> module) {
    push_back(std::to_string(size()), std::move(module));
  }
  template <typename M>
  void push_back(const ModuleHolder<M>& module) {
    push_back(module.ptr());
  }
  template <typename M>
  void push_back(const std::string& name, std::shared_ptr<M> module) {
    std::shared_ptr<M> m = register_module(name, std::move(module));
    calls_.push_back([m](const Tensor& x) { return Tensor(m->forward(x)); });
  }
  template <typename M>
  void push_back(const std::string& name, const ModuleHolder<M>& module) {
    push_back(name, module.ptr());
  }
  std::string type_name() const override { return "Sequential"; }
  void pretty_print(std::ostream& os) const override { os << "torch::nn::Sequential"; }
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  size_t size() const { return calls_.size(); }
  bool is_empty() const { return calls_.empty(); }
  std::shared_ptr<Module> ptr(size_t index) const;
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  // The child at `index` as its class: seq->at<nn::LinearImpl>(0).weight.
  template <typename M>
  M& at(size_t index) const {
    auto m = std::dynamic_pointer_cast<M>(ptr(index));
    if (!m) throw_wrong_type(index);
    return *m;
  }

 private:
  [[noreturn]] void throw_wrong_type(size_t index) const;
  std::vector<std::function<Tensor(const Tensor&)>> calls_;
};
TORCH_MODULE(Sequential);

// Holds submodules named "0", "1", ... without a forward of its own (torch::nn::ModuleList).
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() = default;
  explicit ModuleListImpl(const std::vector<std::shared_ptr<Module>>& modules);
  template <typename... Ms>
  requires(sizeof...(Ms) > 0 &&
           (!std::is_same_v<std::remove_cvref_t<Ms>, std::vector<std::shared_ptr<Module>>> &&
            ...)) explicit ModuleListImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  void push_back(std::shared_ptr<Module> module);
  template <typename M>
  void push_back(const ModuleHolder<M>& module) {
    push_back(std::shared_ptr<Module>(module.ptr()));
  }
  std::string type_name() const override { return "ModuleList"; }
  void pretty_print(std::ostream& os) const override { os << "torch::nn::ModuleList"; }
  size_t size() const { return num_children(); }
  bool is_empty() const { return num_children() == 0; }
  std::shared_ptr<Module> ptr(size_t index) const;
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
};
TORCH_MODULE(ModuleList);

}  // namespace aotgrad::nn
