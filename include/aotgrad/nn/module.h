// nn::Module: a tree of named parameters, buffers and submodules (PyTorch's torch.nn.Module).
//
// Reading guide: a module registers *slots* — Tensor members of itself — under names, so
//   class Linear : public Module {
//    public:
//     Tensor weight, bias;
//     Linear(...) { weight = parameter(...); register_parameter("weight", weight); ... }
//   };
// Registration stores the member's address, not a copy: whoever reads named_parameters() sees
// the member's current value, and functional calls (aot_module) can put other tensors into the
// slots for one call. That is why modules are neither copyable nor movable (a moved module would
// leave dangling slot addresses) and live behind std::shared_ptr.
// Hierarchical names join the registration names with dots: "blocks.0.attn.qkv.weight".
// Thread-safety: none.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/tensor.h"

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

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The class name, for error messages ("Linear", "LayerNorm", ...).
  virtual std::string type_name() const { return "Module"; }
  // Modules with one tensor in and one out override this; others define their own forward with
  // another signature. The default throws, as torch.nn.Module.forward does.
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // Recursive, in registration order (own entries before children's), each tensor once, and
  // undefined slots (a Linear without bias) left out — as torch.nn.Module.
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;
  NamedTensors named_buffers() const;
  std::vector<Tensor> buffers() const;
  const NamedModules& named_children() const { return children_; }
  // This module (named "") and every descendant, depth first, each module once.
  std::vector<std::pair<std::string, Module*>> named_modules();
  std::vector<Module*> modules();
  // with_names = false leaves TensorSlots::names empty (the per-call path of aot_module).
  TensorSlots parameter_slots(bool with_names = true);
  TensorSlots buffer_slots(bool with_names = true);

  // Sets training mode on this module and every descendant (Dropout and BatchNorm read it).
  Module& train(bool on = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  // Clears every parameter's .grad() (set_to_none, the PyTorch 2 default) or zeroes it in place.
  void zero_grad(bool set_to_none = true);
  // Casts every floating parameter and buffer to `dtype` (module.double() is to(DType::f64)).
  // Parameters become new leaves: build optimizers after the cast.
  Module& to(DType dtype);
  // Every parameter and buffer by name (the tensors themselves, detached), as
  // torch.nn.Module.state_dict(). load_state_dict copies values into the existing tensors in place
  // (their identity, dtype and requires_grad stay); a missing or unexpected name, or a shape
  // mismatch, throws naming it (strict) — non-strict loading skips missing and unexpected names.
  NamedTensors state_dict() const;
  void load_state_dict(const NamedTensors& state, bool strict = true);

 protected:
  // `slot` must be a member of this module (its address is kept). An undefined slot is allowed
  // (an optional parameter such as a bias that is absent) and listed nowhere.
  void register_parameter(const std::string& name, Tensor& slot);
  void register_buffer(const std::string& name, Tensor& slot);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

 private:
  struct Slot {
    std::string name;
    Tensor* tensor;
  };
  void check_new_name(const std::string& name, const char* what) const;
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  TensorSlots slots_of(bool buffers, bool with_names) const;
  // prefix == nullptr: collect the slots without naming them.
  void collect(bool buffers, const std::string* prefix, TensorSlots& out,
               std::vector<const TensorImpl*>& seen) const;
  void collect_modules(const std::string* prefix,
                       std::vector<std::pair<std::string, Module*>>& out);

  std::vector<Slot> params_;
  std::vector<Slot> buffers_;
  NamedModules children_;
  bool training_ = true;
};

// Runs its children in order, each output feeding the next (torch.nn.Sequential). Children are
// named "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(const std::vector<std::shared_ptr<Module>>& modules);
  void push_back(std::shared_ptr<Module> module);
  std::string type_name() const override { return "Sequential"; }
  Tensor forward(const Tensor& x) override;
  size_t size() const { return named_children().size(); }
};

// Holds submodules named "0", "1", ... without a forward of its own (torch.nn.ModuleList).
class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(const std::vector<std::shared_ptr<Module>>& modules);
  void push_back(std::shared_ptr<Module> module);
  std::string type_name() const override { return "ModuleList"; }
  size_t size() const { return named_children().size(); }
  Module& operator[](size_t i) const;
};

}  // namespace aotgrad::nn
