// How views were made (PyTorch's CreationMeta) and the in-place errors that follow from it.
//
// A view made under no_grad, or one of several views one op returns (split, chunk, unbind), may
// not be modified in place while autograd tracks it: autograd cannot give it (or its base) a
// correct history. Eager autograd (eager.cpp, nodes.cpp) and the Trace interpreter
// (trace/tracer.cpp) both record the creation on the tensor's AutogradMeta and raise the same
// errors through the functions below, with PyTorch's texts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "aotgrad/tensor.h"
#include "ops/op.h"

namespace aotgrad::autograd {

// Whether `op` returns several views of one argument (split, split_with_sizes, chunk, unbind).
bool returns_multiple_views(const ops::OpDef& op);

// Records on `view`, a result of a view op applied to `self`, how it was made: multi_output for a
// result of an op returning several views (grad mode on), no_grad_mode when grad mode is off, and
// otherwise what `self` had, if `self` is itself a view (a view of a special view is special).
void record_view_creation(const Tensor& view, const Tensor& self, bool multi_output);

// The autograd history a view has, as its error message names it ("Output 1 of UnbindBackward0").
struct ViewHistory {
  bool has_grad_fn = false;
  std::string grad_fn_name;
  uint32_t output_nr = 0;
};

// Throws PyTorch's error when `view` was not made normally. `indirect`: the view itself is not
// being written; its base or another alias of it was, earlier.
void check_view_creation(const Tensor& view, const ViewHistory& history, bool indirect);
// Throws that error for a view made the way `creation` says (not normal).
[[noreturn]] void raise_view_creation(ViewCreation creation, const ViewHistory& history,
                                      bool indirect);

// What the checks above read of a view not made normally, for a tracer whose stand-in for it
// is no view (a compiled function's input: the caller's tensor is the view).
struct SpecialCreation {
  ViewCreation creation = ViewCreation::normal;
  ViewHistory history;
  bool base_requires_grad = false;
  bool written = false;  // its storage was written since it was made
  // Whether a gradient given to it reaches its _base (history_reaches_base): never for a view
  // made under no_grad, not for a piece of one.
  bool reaches_base = false;
};
// nullopt for a tensor that is no view, or a view made normally.
std::optional<SpecialCreation> special_creation_of(const Tensor& t);

// Whether `t` is a view not made normally whose storage was written since it was made.
bool written_since_special_view_creation(const Tensor& t);

// The name PyTorch gives the autograd node of an op row: "aten.unbind.int" -> "UnbindBackward0".
std::string pytorch_node_name(std::string_view op_name);

}  // namespace aotgrad::autograd
