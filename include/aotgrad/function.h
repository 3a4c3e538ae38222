// Custom autograd Functions, as LibTorch's torch::autograd::Function<T>.
//
//   struct Cube : aotgrad::autograd::Function<Cube> {
//     static Tensor forward(AutogradContext* ctx, const Tensor& x) {
//       ctx->save_for_backward({x});
//       return x * x * x;
//     }
//     static variable_list backward(AutogradContext* ctx, variable_list grads) {
//       Tensor x = ctx->get_saved_variables()[0];
//       return {grads[0] * 3.0 * x * x};
//     }
//   };
//   Tensor y = Cube::apply(x);
//
// forward runs with grad mode off; its arguments are Tensors, std::vector<Tensor>s and other
// values, and it returns a Tensor or a std::vector<Tensor>. backward gets one gradient per output
// and returns one per forward argument, as LibTorch: a std::vector<Tensor> argument counts as one
// argument per element, and a non-Tensor argument takes an undefined Tensor. Eagerly, the outputs
// get a node whose backward is the user's; under aot_function, forward's ops are traced into the
// forward graph and, when the joint graph is built, backward is traced with fake tensors in place
// of the Function's node (as PyTorch's AOTAutograd does), so both partitioners see ordinary ops.
//
// Under aot_function: an output marked dirty is returned as the input tensor itself (its new
// value reaches the caller's tensor as any input mutation does). saved_data holds values, not
// tensors: save tensors with save_for_backward.
//
// A T with `static constexpr bool once_differentiable = true;` is torch's @once_differentiable:
// its backward refuses to run with grad mode on (a double backward) with an error naming it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "aotgrad/autograd.h"
#include "aotgrad/tensor.h"

namespace aotgrad::autograd {

using variable_list = std::vector<Tensor>;
using tensor_list = variable_list;  // LibTorch's other spelling

// A value kept for backward in AutogradContext::saved_data: a variant (std::get works) with
// LibTorch's IValue accessors, so `ctx->saved_data["k"].toDouble()` ports unchanged. Each
// accessor throws std::bad_variant_access when the value holds another type.
struct SavedValue : std::variant<std::monostate, bool, int64_t, double, std::string, IntList> {
  using variant::variant;
  bool toBool() const { return std::get<bool>(*this); }
  int64_t toInt() const { return std::get<int64_t>(*this); }
  double toDouble() const { return std::get<double>(*this); }
  const std::string& toStringRef() const { return std::get<std::string>(*this); }
  const IntList& toIntList() const { return std::get<IntList>(*this); }
};

class AutogradContext {
 public:
  AutogradContext();

  // Tensors backward needs. Eagerly, modifying one in place before backward is an error there.
  void save_for_backward(variable_list to_save);
  // The saved tensors; throws if one was modified in place since it was saved.
  variable_list get_saved_variables() const;
  // Values (not tensors) backward needs, by name.
  std::map<std::string, SavedValue> saved_data;

  // Inputs forward modified in place; each must be returned as an output.
  void mark_dirty(const variable_list& inputs);
  // Outputs that get no gradient (indices, masks); backward gets zeros (or undefined) for them.
  void mark_non_differentiable(const variable_list& outputs);
  // false: backward gets undefined tensors for outputs without a gradient instead of zeros.
  void set_materialize_grads(bool value);
  // Whether the i-th Tensor input (counting std::vector<Tensor> elements) needs a gradient.
  bool needs_input_grad(size_t index) const;

  // ---- for the implementation (custom_function.cpp) ----
  struct State;
  std::shared_ptr<State> state_;
};

namespace detail {

// What apply needs from T, with the argument types erased.
struct FunctionSpec {
  std::string name;  // "CubeBackward"
  variable_list (*backward)(AutogradContext*, variable_list) = nullptr;
  bool once_differentiable = false;
};

// Runs `forward` with grad mode off and connects its outputs to autograd (eagerly, or traced).
// `inputs`: the Tensor inputs, flattened; `is_var[i]`: whether forward argument slot i (a
// std::vector<Tensor> fills one slot per element) is a Tensor.
variable_list apply_function(const FunctionSpec& spec, const variable_list& inputs,
                             const std::vector<bool>& is_var,
                             const std::function<variable_list(AutogradContext*)>& forward);

std::string demangled_name(const std::type_info& t);

template <class A>
void collect(const A& a, variable_list& inputs, std::vector<bool>& is_var) {
  using D = std::decay_t<A>;
  if constexpr (std::is_same_v<D, Tensor>) {
    inputs.push_back(a);
    is_var.push_back(true);
  } else if constexpr (std::is_same_v<D, variable_list>) {
    inputs.insert(inputs.end(), a.begin(), a.end());
    is_var.insert(is_var.end(), a.size(), true);
  } else {
    is_var.push_back(false);
  }
}

template <class T, class = void>
struct OnceDifferentiable : std::false_type {};
template <class T>
struct OnceDifferentiable<T, std::void_t<decltype(T::once_differentiable)>>
    : std::bool_constant<T::once_differentiable> {};

}  // namespace detail

template <class T>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    variable_list inputs;
    std::vector<bool> is_var;
    (detail::collect(args, inputs, is_var), ...);
    using Result = decltype(T::forward(static_cast<AutogradContext*>(nullptr), args...));
    static_assert(std::is_same_v<Result, Tensor> || std::is_same_v<Result, variable_list>,
                  "forward must return a Tensor or a std::vector<Tensor>");
    detail::FunctionSpec spec{detail::demangled_name(typeid(T)) + "Backward", &T::backward,
                              detail::OnceDifferentiable<T>::value};
    variable_list outs = detail::apply_function(spec, inputs, is_var, [&](AutogradContext* ctx) {
      if constexpr (std::is_same_v<Result, Tensor>)
        return variable_list{T::forward(ctx, args...)};
      else
        return T::forward(ctx, args...);
    });
    if constexpr (std::is_same_v<Result, Tensor>)
      return outs.at(0);
    else
      return outs;
  }
};

}  // namespace aotgrad::autograd

namespace aotgrad {
using autograd::AutogradContext;
using autograd::variable_list;
}  // namespace aotgrad
