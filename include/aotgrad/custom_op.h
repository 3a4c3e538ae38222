// Custom ops: user operators that join the op table at run time (PyTorch's TORCH_LIBRARY /
// torch.library.custom_op).
//
//   std::vector<aotgrad::TensorSpec> scale_meta(const aotgrad::OpArgs& a) {
//     const aotgrad::Tensor& x = std::get<aotgrad::Tensor>(a[0]);
//     return {{x.dtype(), x.sizes()}};
//   }
//   aotgrad::register_op({.schema = "mylib::scale(Tensor x, float s) -> Tensor",
//                         .meta = scale_meta, .kernel = scale_cpu, .vjp = scale_vjp});
//   Tensor y = aotgrad::call_op1("mylib::scale", x, 2.0);
//
// A registered op is a row of the op table like a built-in one: it runs eagerly (with autograd
// when it has a VJP), traces as one node under aot_function, prints and parses in graph files as
// `mylib.scale.default`, and partitions as opaque: the min-cut partitioner saves its results
// rather than recompute them, unless the registration says `recompute = cheap`.
//
// Schema. ATen's syntax, with a namespace other than aten / aotgrad / prim:
// "mylib::name.overload(Tensor(a!) x, float s) -> Tensor(a!)". An op that writes an argument
// marks it `(a!)`; at most one argument may be written, and the op returns nothing or that
// argument (as ATen's in-place ops). Such an op is functionalized under tracing like add_: the
// graph records `mylib.name.functional` (the kernel on a clone), and the mutation is applied to
// the caller's tensor after the compiled call. A kernel that writes a tensor its schema does not
// mark is caught on the op's first eager call (the arguments' bytes are compared before and after)
// and by opcheck().
//
// Functions are plain function pointers (a lambda without captures converts): the table is read
// by every backend without any user state. The VJP reads the op's arguments and results; it must
// not read the data of an argument the op overwrites.
//
// Registration is thread-safe and may happen at any time (static initialisation of a shared
// library included, see `aotgrad run --load-ops`); lookups of built-in ops take no lock. A
// registered op stays registered for the life of the process.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad {

// One argument of an op call, in schema order; the same alternatives, in the same order, as the
// op table's own argument type (monostate is None; a Tensor[] argument is a std::vector<Tensor>).
using OpArg = std::variant<std::monostate, Tensor, Scalar, int64_t, double, bool, IntList, DType,
                           std::vector<Tensor>, std::string>;
using OpArgs = std::vector<OpArg>;

// The dtype and sizes of one result (results are contiguous); what a meta function returns.
struct TensorSpec {
  DType dtype = DType::f32;
  IntList sizes;
};

// What the VJP of a custom op sees: its arguments, results and the gradients of the results
// (undefined = zero), and which differentiable inputs (Tensor arguments and Tensor[] elements, in
// argument order) need a gradient.
struct CustomVjpContext {
  const OpArgs& args;
  const std::vector<Tensor>& outputs;
  const std::vector<Tensor>& grads;
  const std::vector<bool>& needs_grad;
};

using CustomMetaFn = std::vector<TensorSpec> (*)(const OpArgs&);
using CustomKernelFn = std::vector<Tensor> (*)(const OpArgs&);
// One gradient per differentiable input (undefined where there is none).
using CustomVjpFn = std::vector<Tensor> (*)(const CustomVjpContext&);

enum class CustomRecompute : uint8_t {
  opaque,  // the partitioner never recomputes it (PyTorch treats unknown ops so)
  cheap,   // recompute freely, as a pointwise op
};

struct OpRegistration {
  std::string schema;  // "mylib::scale_(Tensor(a!) x, float s) -> Tensor(a!)"
  CustomMetaFn meta = nullptr;
  CustomKernelFn kernel = nullptr;
  CustomVjpFn vjp = nullptr;  // null: not differentiable; a gradient through it is an error
  CustomRecompute recompute = CustomRecompute::opaque;
  // Has side effects beyond its results (logging, I/O): kept in program order, never recomputed
  // or eliminated.
  bool effectful = false;
};

// Registers the op and returns its table name ("mylib.scale_.default"). Throws
// std::invalid_argument naming the schema when it does not parse, uses a reserved namespace, is
// registered already, or lacks a meta function or a kernel.
std::string register_op(const OpRegistration& reg);

// Whether an op of that name is registered ("mylib::scale" or "mylib.scale.default").
bool op_registered(std::string_view name);

// Calls a registered op (or a built-in one) on the current interpreter: eagerly with autograd,
// or recorded when its inputs are traced. `name` is "mylib::scale", "mylib::scale.overload" or
// the table name. Missing trailing arguments take their schema defaults.
std::vector<Tensor> call_op(std::string_view name, OpArgs args);

// call_op for an op with one result: call_op1("mylib::scale", x, 2.0).
template <class... Args>
Tensor call_op1(std::string_view name, Args&&... args) {
  return call_op(name, OpArgs{OpArg(std::forward<Args>(args))...}).at(0);
}

// Loads a shared library that registers custom ops: its static initializers run, then its
// exported `extern "C" void aotgrad_register_ops()` if it has one (torch.ops.load_library). The
// library must not link its own copy of aotgrad: it uses the process's (the aotgrad program
// exports its symbols). Throws std::invalid_argument naming `path` when it cannot be loaded.
void load_op_library(const std::string& path);

// PyTorch's opcheck: runs the op's kernel on copies of `args` and checks that the results match
// the meta function (dtype, sizes), that no argument the schema does not mark `(a!)` changed, and
// that a marked one did not change shape. Throws std::logic_error naming the op and the argument.
void opcheck(std::string_view name, const OpArgs& args);

}  // namespace aotgrad
