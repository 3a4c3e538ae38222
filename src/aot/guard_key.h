// The guard key of a compiled call: everything a specialization assumed about its inputs, as
// exact bytes, so that two calls share a specialization exactly when their keys are equal.
//
// Needs: defined, real inputs and their InputPlan. Guarantees: the key holds the grad mode, the
// caller's record of non-tensor arguments (aot_detail::flatten_arg: list lengths, the type and
// bits of every number), and for every tensor its dtype, requires_grad (and, if so, whether it is
// a leaf), whether and how it is a view (CallerView), sizes, strides and storage offset (or
// kAnyStorageOffset in its place, for specializations that serve any), then the plan (which inputs
// repeat or overlap); every variable-length part is preceded by its length, so the encoding is
// prefix-free and equal keys mean equal calls. The readable form of the same guards (InputGuard)
// serves recompile messages.
#pragma once

#include <string>
#include <vector>

#include "aot/input_plan.h"
#include "aotgrad/tensor.h"

namespace aotgrad::aot {

// The storage offset of an InputGuard whose specialization serves inputs at any offset (its
// trace never read one: see lower.cpp, capture_traced).
constexpr int64_t kAnyStorageOffset = -1;

// Whether the caller's tensor is a view, and how it was made, as eager's autograd reads it
// (autograd/view_creation.h): the trace depends on it. A metadata change under no_grad leaves a
// view's history regenerated from its base but a plain tensor's as it was, and a view made under
// no_grad or by a multi-output op must not be written, or read once written, with grad on.
// A view made under no_grad of a tensor that requires grad (no_grad_mode) follows eager's rules
// for such views; of one that does not (no_grad_mode_base_no_grad), it requires grad only as a
// leaf of its own (requires_grad_()), and none apply. A piece of a view made under no_grad
// (multi_output_cut_off) has a history that ends before its base
// (autograd::history_reaches_base): overlapping such inputs give the base no gradient.
enum class CallerView : uint8_t {
  none,
  normal,
  no_grad_mode,
  multi_output,
  multi_output_cut_off,
  no_grad_mode_base_no_grad,
};
CallerView caller_view_of(const Tensor& t);
bool is_leaf_requiring_grad(const Tensor& t);

// `with_offsets` false writes kAnyStorageOffset for every input instead of its offset.
std::string guard_key(const std::vector<Tensor>& inputs, const InputPlan& plan, bool grad_mode,
                      const std::string& key_extra, bool with_offsets);

// One tensor input's guards in readable form, for "why did it recompile" messages.
struct InputGuard {
  DType dtype = DType::f32;
  IntList sizes, strides;
  int64_t storage_offset = 0;
  bool requires_grad = false;
  // A leaf that requires grad: eager refuses to write it in place, and its AccumulateGrad keeps
  // the sizes it had when first reached, which the trace follows.
  bool leaf = false;
  CallerView view = CallerView::none;
  bool operator==(const InputGuard&) const = default;
};
// The same key from guards already read (an Artifact's): equal to the key of every call whose
// inputs have these guards.
std::string guard_key(const std::vector<InputGuard>& inputs, const InputPlan& plan, bool grad_mode,
                      const std::string& key_extra);
std::vector<InputGuard> input_guards(const std::vector<Tensor>& inputs);
// Whether any guard holds a storage offset (rather than kAnyStorageOffset).
bool guards_offsets(const std::vector<InputGuard>& inputs);
std::string describe(const InputGuard& g);
// "", or " a view", " a view made under no_grad", ... (with its leading space).
std::string describe(CallerView v);

// Which argument of the call flat tensor input `index` came from ("argument 1", "argument 0
// (element 2 of the list)", "parameter 3"), read from the records of `key_extra`.
std::string describe_input(const std::string& key_extra, size_t index);

}  // namespace aotgrad::aot
