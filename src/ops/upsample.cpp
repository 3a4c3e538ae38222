// Bilinear upsampling rows: upsample_bilinear2d (the overload with output_size and optional
// per-dim scales) and upsample_bilinear2d_backward, as ATen defines them (kernels/upsample.h has
// the arithmetic). PyTorch 1.13's F.interpolate records the `.vec` overload (output_size or
// scale_factors as lists); tools/export_torch_graph.py writes it as this one, with the output size
// the scale factors give, exactly as ATen's `.vec` does before calling it.
//
// Both rows are linear in their tensor argument, so each one's VJP is the other.
#include "kernels/upsample.h"

#include <string>

#include "aotgrad/conv.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/row_helpers.h"

namespace aotgrad::ops {
namespace {

constexpr std::string_view kUpsample = "aten.upsample_bilinear2d.default";
constexpr std::string_view kUpsampleBackward = "aten.upsample_bilinear2d_backward.default";

std::optional<double> opt_float(const OpArgs& a, size_t i) {
  return is_none(a, i) ? std::nullopt : std::optional<double>(float_arg(a, i));
}

// output_size at args[size_arg], align_corners and the two scales after the given positions.
kernels::Upsample2dParams params(std::string_view op, const OpArgs& a, size_t size_arg,
                                 size_t align_arg) {
  const IntList& size = int_list_arg(a, size_arg);
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0)
    fail(op, "output_size must hold two positive sizes [H, W], got " + shape_to_string(size));
  return {size[0], size[1], bool_arg(a, align_arg), opt_float(a, align_arg + 1),
          opt_float(a, align_arg + 2)};
}

void check_4d(std::string_view op, const char* name, const Tensor& t) {
  if (t.dim() != 4 || t.size(2) == 0 || t.size(3) == 0)
    fail(op, std::string("expected a 4-D [N, C, H, W] '") + name +
                 "' with non-zero H and W, got shape " + shape_to_string(t.sizes()));
  if (!is_floating(t.dtype()))
    fail(op,
         std::string("'") + name + "' must be floating, got " + std::string(dtype_name(t.dtype())));
}

std::vector<TensorMeta> upsample_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  check_4d(kUpsample, "self", self);
  const kernels::Upsample2dParams p = params(kUpsample, a, 1, 2);
  return {TensorMeta::contiguous({self.size(0), self.size(1), p.out_h, p.out_w}, self.dtype())};
}

std::vector<Tensor> upsample_kernel(const OpArgs& a) {
  upsample_meta(a);
  return {kernels::upsample_bilinear2d(tensor_arg(a, 0), params(kUpsample, a, 1, 2))};
}

std::vector<Tensor> upsample_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  static const OpDef& backward = lookup(kUpsampleBackward);
  const OpArgs& a = c.args;
  return {call1(backward, {c.grad(), a[1], c.input(0).sizes(), a[2], a[3], a[4]})};
}

std::vector<TensorMeta> upsample_backward_meta(const OpArgs& a) {
  const Tensor& grad = tensor_arg(a, 0);
  const kernels::Upsample2dParams p = params(kUpsampleBackward, a, 1, 3);
  const IntList& in = int_list_arg(a, 2);
  if (in.size() != 4 || in[2] <= 0 || in[3] <= 0 || in[0] < 0 || in[1] < 0)
    fail(kUpsampleBackward,
         "input_size must be [N, C, H, W] with positive H and W, got " + shape_to_string(in));
  check_4d(kUpsampleBackward, "grad_output", grad);
  const IntList expected{in[0], in[1], p.out_h, p.out_w};
  if (grad.sizes() != expected)
    fail(kUpsampleBackward, "grad_output has shape " + shape_to_string(grad.sizes()) +
                                ", expected " + shape_to_string(expected));
  return {TensorMeta::contiguous(in, grad.dtype())};
}

std::vector<Tensor> upsample_backward_kernel(const OpArgs& a) {
  upsample_backward_meta(a);
  return {kernels::upsample_bilinear2d_backward(tensor_arg(a, 0), int_list_arg(a, 2),
                                                params(kUpsampleBackward, a, 1, 3))};
}

std::vector<Tensor> upsample_backward_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  static const OpDef& forward = lookup(kUpsample);
  const OpArgs& a = c.args;
  return {call1(forward, {c.grad(), a[1], a[3], a[4], a[5]})};
}

// clang-format off
const OpDef kRows[] = {
  {.name = kUpsample,
   .schema = "upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, "
             "float? scales_h=None, float? scales_w=None) -> Tensor",
   .meta = upsample_meta, .kernel = upsample_kernel, .vjp = upsample_vjp,
   .recompute = Recompute::reduction},
  {.name = kUpsampleBackward,
   .schema = "upsample_bilinear2d_backward(Tensor grad_output, SymInt[2] output_size, "
             "SymInt[4] input_size, bool align_corners, float? scales_h=None, "
             "float? scales_w=None) -> Tensor",
   .meta = upsample_backward_meta, .kernel = upsample_backward_kernel,
   .vjp = upsample_backward_vjp, .recompute = Recompute::reduction},
};
// clang-format on

}  // namespace

std::span<const OpDef> upsample_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {
namespace {

ops::Arg opt_arg(std::optional<double> v) {
  return v ? ops::Arg(*v) : ops::Arg(std::monostate{});
}

}  // namespace

Tensor upsample_bilinear2d(const Tensor& input, const IntList& output_size, bool align_corners,
                           std::optional<double> scales_h, std::optional<double> scales_w) {
  static const ops::OpDef& def = ops::lookup(ops::kUpsample);
  return ops::call1(def, {input, output_size, align_corners, opt_arg(scales_h), opt_arg(scales_w)});
}

Tensor upsample_bilinear2d_backward(const Tensor& grad_output, const IntList& output_size,
                                    const IntList& input_size, bool align_corners,
                                    std::optional<double> scales_h,
                                    std::optional<double> scales_w) {
  static const ops::OpDef& def = ops::lookup(ops::kUpsampleBackward);
  return ops::call1(def, {grad_output, output_size, input_size, align_corners, opt_arg(scales_h),
                          opt_arg(scales_w)});
}

}  // namespace aotgrad
