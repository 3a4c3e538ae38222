// The op table's row type and the calling convention every interpreter shares.
//
// Reading guide: an OpDef is one row of the table (see registry.cpp for the list of families and
// DESIGN "One op, one row"). An op is called with OpArgs: one Arg per schema argument, in schema
// order, defaults already filled in. Tensor results come back as a vector. `meta` computes output
// metadata from (possibly fake) inputs without touching data; `kernel` runs on real tensors;
// `vjp` maps output gradients to input gradients using the ordinary Tensor API, so the same rule
// runs eagerly and, under the Trace interpreter, records backward nodes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "aotgrad/tensor.h"
#include "ops/schema.h"

namespace aotgrad::ops {

using TensorList = std::vector<Tensor>;
// monostate is None (an absent optional argument).
using Arg = std::variant<std::monostate, Tensor, Scalar, int64_t, double, bool, IntList, DType,
                         TensorList, std::string>;
using OpArgs = std::vector<Arg>;

// Typed access to OpArgs; each throws std::invalid_argument naming the op and the argument when
// the stored alternative is not the expected one.
const Tensor& tensor_arg(const OpArgs& a, size_t i);
const TensorList& tensor_list_arg(const OpArgs& a, size_t i);
Scalar scalar_arg(const OpArgs& a, size_t i);
int64_t int_arg(const OpArgs& a, size_t i);
double float_arg(const OpArgs& a, size_t i);
bool bool_arg(const OpArgs& a, size_t i);
const IntList& int_list_arg(const OpArgs& a, size_t i);
DType dtype_arg(const OpArgs& a, size_t i);
const std::string& string_arg(const OpArgs& a, size_t i);
bool is_none(const OpArgs& a, size_t i);
// An optional tensor (`Tensor?`): undefined when the argument is None.
Tensor optional_tensor(const OpArgs& a, size_t i);
// The argument for a `Tensor?` parameter: None for an undefined tensor.
Arg optional_arg(const Tensor& t);

// Output metadata computed by a meta function.
struct TensorMeta {
  DType dtype = DType::f32;
  IntList sizes;
  IntList strides;
  int64_t storage_offset = 0;  // meaningful for views only (elements, relative to the storage)

  static TensorMeta contiguous(const IntList& sizes, DType dtype);
  bool operator==(const TensorMeta&) const = default;
};

// What the partitioner may do with an op's result (DESIGN "recompute class").
enum class Recompute : uint8_t {
  pointwise,      // cheap elementwise: recompute freely
  view,           // aliasing view: free to recompute
  reduction,      // cheap reduction: recompute when it saves memory
  factory,        // creates a tensor from constants
  compute_heavy,  // matmul, convolution: save rather than recompute
  random,         // draws from a generator inside its kernel: never recompute (traced random ops
                  // become aotgrad.philox_* rows, which are recomputable)
  effectful,      // mutates state: never recompute, never eliminate
};
std::string_view recompute_name(Recompute r);

struct VjpContext;
using MetaFn = std::vector<TensorMeta> (*)(const OpArgs&);
using KernelFn = std::vector<Tensor> (*)(const OpArgs&);
// For view ops: the new value of `base` after `updated` is written into the region that the view
// (with `view_args`, tensor slot ignored) selects; functional, recorded under tracing. Used by
// functionalization to scatter a mutation of a view back into its base.
using ViewScatterFn = Tensor (*)(const Tensor& base, const Tensor& updated,
                                 const OpArgs& view_args);
// Returns one gradient per differentiable tensor input (every Tensor argument, and every element of
// a Tensor[] argument, in argument order). Undefined Tensor = no gradient / zero.
using VjpFn = std::vector<Tensor> (*)(const VjpContext&);

constexpr uint32_t bit(unsigned i) {
  return 1u << i;
}

// Bit i set: the VJP reads the data of argument i (inputs) / result i (outputs). Everything else is
// kept as metadata only by eager autograd, so in-place changes to it later are not errors.
//
// read_by[i] (for the first arguments): bit j set = only the gradient of argument j reads saved
// input i, so it is saved only when one of those gradients will be computed, as PyTorch's
// generated code guards a saved input with should_compute_output (tools/autograd/
// gen_variable_type.py: an input read by one derivative formula only). 0, the default: saved
// whenever any gradient is wanted. Outputs are saved regardless, as PyTorch's.
struct SaveMask {
  uint32_t inputs = 0;
  uint32_t outputs = 0;
  std::array<uint32_t, 4> read_by{};

  // The inputs kept when the gradients of the arguments in `wanted` (bit j: argument j) are to
  // be computed; none when none is.
  constexpr uint32_t inputs_for(uint32_t wanted) const {
    if (wanted == 0) return 0;
    uint32_t kept = 0;
    for (unsigned i = 0; i < 32; ++i)
      if ((inputs & bit(i)) && (i >= read_by.size() || read_by[i] == 0 || (read_by[i] & wanted)))
        kept |= bit(i);
    return kept;
  }
};

struct OpDef {
  std::string_view name;    // "aten.add.Tensor"
  std::string_view schema;  // "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
  MetaFn meta = nullptr;
  KernelFn kernel = nullptr;
  VjpFn vjp = nullptr;  // null: not differentiable (outputs never require grad)
  SaveMask saves;
  Recompute recompute = Recompute::pointwise;
  // For pointwise ops: a C++ expression over a, b, c (inputs) the code generator can fuse.
  std::string_view fusion_expr;
  // For in-place ops: the functional op that computes the new value of the mutated argument.
  std::string_view functional_variant;
  // For view ops: how to write an updated view back into its base (null: writing through this
  // view inside a compiled function is rejected).
  ViewScatterFn view_scatter = nullptr;
  // Has side effects beyond its results (an effectful custom op): run once, in program order.
  bool effectful = false;

  // Derived from `schema` once, by the registry, before any lookup returns the row.
  struct Derived {
    Schema schema;
    int view_of_arg = -1;  // argument the (first) result aliases, for view ops
    int mutated_arg = -1;  // argument written in place, for in-place ops
    // One per schema argument: what normalize fills in when a call omits it, read once here
    // rather than on every dispatch (an optional argument without a default is None). nullopt:
    // the call must give it, or its default does not read as its type (normalize then says so).
    std::vector<std::optional<Arg>> omitted;
  };
  mutable const Derived* derived = nullptr;

  const Schema& parsed_schema() const { return derived->schema; }
  bool is_view() const { return derived->view_of_arg >= 0 && derived->mutated_arg < 0; }
  bool is_inplace() const { return derived->mutated_arg >= 0; }
  int mutated_arg() const { return derived->mutated_arg; }
  int view_of_arg() const { return derived->view_of_arg; }
};

// The row called `name` ("aten.mm.default"); throws std::invalid_argument naming it when unknown.
const OpDef& lookup(std::string_view name);
const OpDef* find(std::string_view name);
// Every row, in registration order.
std::span<const OpDef* const> all_ops();

// Fills defaults and checks arity/types of positional args against the schema.
void normalize(const OpDef& op, OpArgs& args);
// OpDef::Derived::omitted for `schema`; the registry calls it once per row.
std::vector<std::optional<Arg>> omitted_args(const Schema& schema);

struct VjpContext {
  const OpDef& op;
  const OpArgs& args;                  // tensors not in SaveMask carry metadata only
  const std::vector<Tensor>& outputs;  // likewise
  const std::vector<Tensor>& grads;    // one per output; undefined = zero
  std::vector<bool> needs_grad;        // one per differentiable tensor input

  const Tensor& input(size_t arg) const { return tensor_arg(args, arg); }
  const Tensor& output(size_t i = 0) const { return outputs.at(i); }
  const Tensor& grad(size_t i = 0) const { return grads.at(i); }
  bool needs(size_t flat_input) const {
    return flat_input < needs_grad.size() && needs_grad[flat_input];
  }
};

// ---- dispatch: every op call goes through here to the innermost interpreter ----

class Interpreter {
 public:
  virtual ~Interpreter() = default;
  virtual std::vector<Tensor> call(const OpDef& op, OpArgs& args) = 0;
  virtual std::string_view name() const = 0;
};

// Runs `op` on the innermost active interpreter (Eager when none is pushed).
std::vector<Tensor> dispatch(const OpDef& op, OpArgs args);
// Runs `op` on the interpreter below `self` in the stack (for interpreters that wrap others).
std::vector<Tensor> dispatch_below(const Interpreter& self, const OpDef& op, OpArgs args);

// Pushes an interpreter for the guard's lifetime (thread-local stack).
class InterpreterGuard {
 public:
  explicit InterpreterGuard(Interpreter& interp);
  ~InterpreterGuard();
  InterpreterGuard(const InterpreterGuard&) = delete;
  InterpreterGuard& operator=(const InterpreterGuard&) = delete;
};

// The interpreter at the bottom of every stack; defined by the autograd layer.
Interpreter& eager_interpreter();

// Convenience for single-output ops.
inline Tensor call1(const OpDef& op, OpArgs args) {
  return dispatch(op, std::move(args)).at(0);
}

}  // namespace aotgrad::ops
