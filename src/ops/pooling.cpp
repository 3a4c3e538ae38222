// Pooling rows: max_pool2d_with_indices and _adaptive_avg_pool2d with their backward rows; the
// public max_pool2d and adaptive_avg_pool2d composites.
//
// The backward rows take the forward input (`self`) as ATen's do, though they read only its
// shape: eager autograd cannot hand a kernel a data-less tensor, so the forward rows save it.
// The backward rows are linear in grad_output; their VJPs (double backward) are written with
// differentiable ops, so create_graph records them.
#include "kernels/pooling.h"

#include <stdexcept>
#include <string>

#include "aotgrad/conv.h"
#include "aotgrad/indexing.h"
#include "aotgrad/ops.h"
#include "ops/families.h"
#include "ops/row_helpers.h"

namespace aotgrad::ops {
namespace {

void check_pool_input(const char* op, const char* name, const Tensor& t) {
  const int64_t d = t.dim();
  if ((d != 3 && d != 4) || t.size(d - 1) == 0 || t.size(d - 2) == 0 || t.size(d - 3) == 0)
    fail(op, std::string("expected a 3-D [C, H, W] or 4-D [N, C, H, W] '") + name +
                 "' with non-zero C, H and W, got shape " + shape_to_string(t.sizes()));
  if (!is_floating(t.dtype()))
    fail(op, std::string("'") + name + "' must be floating, got " +
                 std::string(dtype_name(t.dtype())) + "; convert it with .to(f32)");
}

// A 2-entry spatial parameter; one entry applies to both dims, none gives `empty_value`
// (ATen's defaults `padding=0` / `dilation=1` reach here as empty lists).
std::array<int64_t, 2> pool_pair(const char* op, const char* name, const IntList& v,
                                 std::array<int64_t, 2> empty_value, int64_t min_value) {
  if (v.size() > 2)
    fail(op, std::string(name) + " must have 1 or 2 entries, got " + shape_to_string(v));
  std::array<int64_t, 2> r = v.empty() ? empty_value : std::array<int64_t, 2>{v[0], v.back()};
  for (int64_t x : r)
    if (x < min_value)
      fail(op, std::string(name) + " must be >= " + std::to_string(min_value) + ", got " +
                   shape_to_string(v));
  return r;
}

// kernel_size, stride, padding at args[first..first+2], as max and average pooling both take them.
kernels::Pool2dParams read_window(const char* op, const OpArgs& a, size_t first) {
  kernels::Pool2dParams p;
  const IntList& kernel = int_list_arg(a, first);
  if (kernel.empty()) fail(op, "kernel_size must have 1 or 2 entries, got []");
  p.kernel = pool_pair(op, "kernel_size", kernel, {0, 0}, 1);
  p.stride = pool_pair(op, "stride", int_list_arg(a, first + 1), p.kernel, 1);
  p.padding = pool_pair(op, "padding", int_list_arg(a, first + 2), {0, 0}, 0);
  return p;
}

// Checks the padding against the kernel and returns self's shape with the pooled spatial sizes.
IntList pooled_sizes(const char* op, const Tensor& self, const kernels::Pool2dParams& p) {
  for (int d = 0; d < 2; ++d)
    if (p.padding[d] > p.kernel[d] / 2)
      fail(op, "pad should be at most half of kernel size, but got pad=" +
                   std::to_string(p.padding[d]) +
                   " and kernel_size=" + std::to_string(p.kernel[d]));
  IntList out_sizes = self.sizes();
  const int64_t nd = self.dim();
  for (int d = 0; d < 2; ++d) {
    const int64_t out = kernels::pool_output_size(self.size(nd - 2 + d), p.kernel[d], p.stride[d],
                                                  p.padding[d], p.dilation[d], p.ceil_mode);
    if (out < 1)
      fail(op, "input of shape " + shape_to_string(self.sizes()) + " gives an output of size " +
                   std::to_string(out) + " along spatial dim " + std::to_string(d) +
                   "; the output size is too small (use a smaller kernel or more padding)");
    out_sizes[nd - 2 + d] = out;
  }
  return out_sizes;
}

struct MaxPoolSetup {
  kernels::Pool2dParams params;
  IntList out_sizes;
};

// args[first..first+4]: kernel_size, stride, padding, dilation, ceil_mode.
MaxPoolSetup max_pool_setup(const char* op, const Tensor& self, const OpArgs& a, size_t first) {
  check_pool_input(op, "self", self);
  MaxPoolSetup s;
  s.params = read_window(op, a, first);
  s.params.dilation = pool_pair(op, "dilation", int_list_arg(a, first + 3), {1, 1}, 1);
  s.params.ceil_mode = bool_arg(a, first + 4);
  s.out_sizes = pooled_sizes(op, self, s.params);
  return s;
}

std::vector<TensorMeta> max_pool_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  MaxPoolSetup s = max_pool_setup("max_pool2d_with_indices", self, a, 1);
  return {TensorMeta::contiguous(s.out_sizes, self.dtype()),
          TensorMeta::contiguous(s.out_sizes, DType::i64)};
}

std::vector<Tensor> max_pool_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  MaxPoolSetup s = max_pool_setup("max_pool2d_with_indices", self, a, 1);
  auto [values, indices] = kernels::max_pool2d_with_indices(self, s.params);
  return {values, indices};
}

std::vector<Tensor> max_pool_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten.max_pool2d_with_indices_backward.default");
  if (!c.needs(0) || !c.grad(0).defined()) return {Tensor()};
  return {call1(backward, {c.grad(0), c.input(0), c.args[1], c.args[2], c.args[3], c.args[4],
                           c.args[5], c.output(1)})};
}

std::vector<TensorMeta> max_pool_backward_meta(const OpArgs& a) {
  const char* op = "max_pool2d_with_indices_backward";
  const Tensor& grad = tensor_arg(a, 0);
  const Tensor& self = tensor_arg(a, 1);
  const Tensor& indices = tensor_arg(a, 7);
  MaxPoolSetup s = max_pool_setup(op, self, a, 2);
  if (grad.sizes() != s.out_sizes || grad.dtype() != self.dtype())
    fail(op, "grad_output is " + std::string(dtype_name(grad.dtype())) +
                 shape_to_string(grad.sizes()) + ", expected the pooling output's " +
                 std::string(dtype_name(self.dtype())) + shape_to_string(s.out_sizes));
  if (indices.sizes() != s.out_sizes || indices.dtype() != DType::i64)
    fail(op, "indices must be the i64" + shape_to_string(s.out_sizes) +
                 " tensor max_pool2d_with_indices returned, got " +
                 std::string(dtype_name(indices.dtype())) + shape_to_string(indices.sizes()));
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}

std::vector<Tensor> max_pool_backward_kernel(const OpArgs& a) {
  max_pool_backward_meta(a);
  return {kernels::max_pool2d_with_indices_backward(tensor_arg(a, 0), tensor_arg(a, 1),
                                                    tensor_arg(a, 7))};
}

// max_pool2d_with_indices_backward scatters grad_output to the argmax of each window; its VJP
// gathers the incoming gradient back from those positions (PyTorch's max_pool_double_backward).
// self is read for its shape only and indices are integral: neither gets a gradient.
std::vector<Tensor> max_pool_backward_vjp(const VjpContext& c) {
  std::vector<Tensor> grads(3);
  if (!c.needs(0) || !c.grad().defined()) return grads;
  const Tensor& indices = c.input(7);
  const int64_t nd = indices.dim();
  IntList flat_sizes = c.grad().sizes(), flat_indices = indices.sizes();
  flat_sizes[nd - 2] *= flat_sizes[nd - 1];
  flat_sizes.pop_back();
  flat_indices[nd - 2] *= flat_indices[nd - 1];
  flat_indices.pop_back();
  grads[0] = reshape(gather(reshape(c.grad(), flat_sizes), nd - 2, reshape(indices, flat_indices)),
                     indices.sizes());
  return grads;
}

// ---- average pooling ----

struct AvgPoolSetup {
  kernels::AvgPool2dParams params;
  IntList out_sizes;
};

// args[first..first+5]: kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override.
AvgPoolSetup avg_pool_setup(const char* op, const Tensor& self, const OpArgs& a, size_t first) {
  check_pool_input(op, "self", self);
  AvgPoolSetup s;
  s.params.window = read_window(op, a, first);
  s.params.window.ceil_mode = bool_arg(a, first + 3);
  s.params.count_include_pad = bool_arg(a, first + 4);
  if (!is_none(a, first + 5)) {
    s.params.divisor_override = int_arg(a, first + 5);
    if (s.params.divisor_override == 0) fail(op, "divisor_override must not be zero");
  }
  s.out_sizes = pooled_sizes(op, self, s.params.window);
  return s;
}

std::vector<TensorMeta> avg_pool_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta::contiguous(avg_pool_setup("avg_pool2d", self, a, 1).out_sizes, self.dtype())};
}
std::vector<Tensor> avg_pool_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::avg_pool2d(self, avg_pool_setup("avg_pool2d", self, a, 1).params)};
}
std::vector<Tensor> avg_pool_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten.avg_pool2d_backward.default");
  if (!c.needs(0) || !c.grad().defined()) return {Tensor()};
  OpArgs args{c.grad(), c.input(0)};
  args.insert(args.end(), c.args.begin() + 1, c.args.begin() + 7);
  return {call1(backward, std::move(args))};
}

std::vector<TensorMeta> avg_pool_backward_meta(const OpArgs& a) {
  const char* op = "avg_pool2d_backward";
  const Tensor& grad = tensor_arg(a, 0);
  const Tensor& self = tensor_arg(a, 1);
  AvgPoolSetup s = avg_pool_setup(op, self, a, 2);
  if (grad.sizes() != s.out_sizes || grad.dtype() != self.dtype())
    fail(op, "grad_output is " + std::string(dtype_name(grad.dtype())) +
                 shape_to_string(grad.sizes()) + ", expected the pooling output's " +
                 std::string(dtype_name(self.dtype())) + shape_to_string(s.out_sizes));
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}
std::vector<Tensor> avg_pool_backward_kernel(const OpArgs& a) {
  avg_pool_backward_meta(a);
  const Tensor& self = tensor_arg(a, 1);
  return {kernels::avg_pool2d_backward(tensor_arg(a, 0), self,
                                       avg_pool_setup("avg_pool2d_backward", self, a, 2).params)};
}
// Linear in grad_output: its gradient is the forward pooling of the incoming one
// (derivatives.yaml); self contributes only its shape.
std::vector<Tensor> avg_pool_backward_vjp(const VjpContext& c) {
  static const OpDef& forward = lookup("aten.avg_pool2d.default");
  if (!c.needs(0)) return {Tensor(), Tensor()};
  OpArgs args{c.grad()};
  args.insert(args.end(), c.args.begin() + 2, c.args.begin() + 8);
  return {call1(forward, std::move(args)), Tensor()};
}

// ---- adaptive average pooling ----

std::vector<TensorMeta> adaptive_avg_meta(const OpArgs& a) {
  const char* op = "_adaptive_avg_pool2d";
  const Tensor& self = tensor_arg(a, 0);
  check_pool_input(op, "self", self);
  const IntList& size = int_list_arg(a, 1);
  if (size.size() != 2 || size[0] < 0 || size[1] < 0)
    fail(op, "output_size must be 2 non-negative sizes [oH, oW], got " + shape_to_string(size));
  IntList out = self.sizes();
  out[out.size() - 2] = size[0];
  out[out.size() - 1] = size[1];
  return {TensorMeta::contiguous(out, self.dtype())};
}

std::vector<Tensor> adaptive_avg_kernel(const OpArgs& a) {
  adaptive_avg_meta(a);
  const IntList& size = int_list_arg(a, 1);
  return {kernels::adaptive_avg_pool2d(tensor_arg(a, 0), size[0], size[1])};
}

std::vector<Tensor> adaptive_avg_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten._adaptive_avg_pool2d_backward.default");
  if (!c.needs(0) || !c.grad().defined()) return {Tensor()};
  return {call1(backward, {c.grad(), c.input(0)})};
}

std::vector<TensorMeta> adaptive_avg_backward_meta(const OpArgs& a) {
  const char* op = "_adaptive_avg_pool2d_backward";
  const Tensor& grad = tensor_arg(a, 0);
  const Tensor& self = tensor_arg(a, 1);
  check_pool_input(op, "self", self);
  const int64_t d = self.dim();
  bool ok = grad.dim() == d && grad.dtype() == self.dtype();
  for (int64_t i = 0; ok && i < d - 2; ++i) ok = grad.size(i) == self.size(i);
  if (!ok)
    fail(op, "grad_output " + std::string(dtype_name(grad.dtype())) +
                 shape_to_string(grad.sizes()) + " does not match self " +
                 std::string(dtype_name(self.dtype())) + shape_to_string(self.sizes()) +
                 " outside the last two dims");
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}

std::vector<Tensor> adaptive_avg_backward_kernel(const OpArgs& a) {
  adaptive_avg_backward_meta(a);
  return {kernels::adaptive_avg_pool2d_backward(tensor_arg(a, 0), tensor_arg(a, 1))};
}

// Linear in grad_output: its gradient is the forward pooling of the incoming one to
// grad_output's spatial size (derivatives.yaml); self contributes only its shape.
std::vector<Tensor> adaptive_avg_backward_vjp(const VjpContext& c) {
  static const OpDef& forward = lookup("aten._adaptive_avg_pool2d.default");
  if (!c.needs(0) || !c.grad().defined()) return {Tensor(), Tensor()};
  const Tensor& g = c.input(0);
  return {call1(forward, {c.grad(), IntList{g.size(-2), g.size(-1)}}), Tensor()};
}

const OpDef kRows[] = {
    {.name = "aten.max_pool2d_with_indices.default",
     .schema = "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], "
               "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
     .meta = max_pool_meta,
     .kernel = max_pool_kernel,
     .vjp = max_pool_vjp,
     .saves = {.inputs = bit(0), .outputs = bit(1)},
     .recompute = Recompute::reduction},
    {.name = "aten.max_pool2d_with_indices_backward.default",
     .schema = "max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, "
               "int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, "
               "bool ceil_mode, Tensor indices) -> Tensor",
     .meta = max_pool_backward_meta,
     .kernel = max_pool_backward_kernel,
     .vjp = max_pool_backward_vjp,
     .saves = {.inputs = bit(7)},
     .recompute = Recompute::reduction},
    {.name = "aten.avg_pool2d.default",
     .schema = "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
               "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) "
               "-> Tensor",
     .meta = avg_pool_meta,
     .kernel = avg_pool_kernel,
     .vjp = avg_pool_vjp,
     .saves = {.inputs = bit(0)},
     .recompute = Recompute::reduction},
    {.name = "aten.avg_pool2d_backward.default",
     .schema = "avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "
               "int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad, "
               "int? divisor_override) -> Tensor",
     .meta = avg_pool_backward_meta,
     .kernel = avg_pool_backward_kernel,
     .vjp = avg_pool_backward_vjp,
     .recompute = Recompute::reduction},
    {.name = "aten._adaptive_avg_pool2d.default",
     .schema = "_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
     .meta = adaptive_avg_meta,
     .kernel = adaptive_avg_kernel,
     .vjp = adaptive_avg_vjp,
     .saves = {.inputs = bit(0)},
     .recompute = Recompute::reduction},
    {.name = "aten._adaptive_avg_pool2d_backward.default",
     .schema = "_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor",
     .meta = adaptive_avg_backward_meta,
     .kernel = adaptive_avg_backward_kernel,
     .vjp = adaptive_avg_backward_vjp,
     .recompute = Recompute::reduction},
};

}  // namespace

std::span<const OpDef> pooling_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const IntList& kernel_size,
                                                   const IntList& stride, const IntList& padding,
                                                   const IntList& dilation, bool ceil_mode) {
  static const ops::OpDef& def = ops::lookup("aten.max_pool2d_with_indices.default");
  std::vector<Tensor> r =
      ops::dispatch(def, {input, kernel_size, stride, padding, dilation, ceil_mode});
  return {r[0], r[1]};
}

Tensor max_pool2d(const Tensor& input, const IntList& kernel_size, const IntList& stride,
                  const IntList& padding, const IntList& dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool2d(const Tensor& input, const IntList& kernel_size, const IntList& stride,
                  const IntList& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  static const ops::OpDef& def = ops::lookup("aten.avg_pool2d.default");
  ops::OpArgs args{input, kernel_size, stride, padding, ceil_mode, count_include_pad};
  if (divisor_override) args.emplace_back(*divisor_override);
  return ops::call1(def, std::move(args));
}

Tensor adaptive_avg_pool2d(const Tensor& input, const IntList& output_size) {
  static const ops::OpDef& def = ops::lookup("aten._adaptive_avg_pool2d.default");
  if (output_size.size() != 1 && output_size.size() != 2)
    throw std::invalid_argument("adaptive_avg_pool2d: output_size must have 1 or 2 entries, got " +
                                shape_to_string(output_size));
  const IntList size{output_size[0], output_size.back()};
  // As ATen's composite: a 1 x 1 output is the mean over the spatial dims (so traced graphs
  // match PyTorch's, which show aten.mean.dim here).
  if (size == IntList{1, 1} && (input.dim() == 3 || input.dim() == 4) && input.numel() > 0)
    return mean(input, {-1, -2}, true);
  return ops::call1(def, {input, size});
}

}  // namespace aotgrad
