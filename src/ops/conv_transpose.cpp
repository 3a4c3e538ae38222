// Transposed convolution: the transposed branch of the convolution rows (ops/conv_transpose.h)
// and the public conv_transpose1d / conv_transpose2d of aotgrad/nn_ops.h.
//
// Reading guide: transposed_setup() checks the operands as ATen does (weight [C_in,
// O / groups, k...], output_padding smaller than the stride) and computes the output size; 1-D
// convolutions are run as 2-D ones with a height of 1 (views of the operands, never copies of
// the inputs). The kernels (kernels/conv_transpose.h) express everything through the regular
// convolution kernels. The VJP is the convolution row's own: it dispatches convolution_backward
// with transposed = true, which lands here.
#include "ops/conv_transpose.h"

#include <array>
#include <string>

#include "aotgrad/conv.h"
#include "aotgrad/nn_ops.h"
#include "aotgrad/ops.h"
#include "kernels/conv_transpose.h"
#include "kernels/copy.h"
#include "ops/row_helpers.h"
#include "tensor/checked_math.h"

namespace aotgrad::ops {
namespace {

constexpr char kConv[] = "convolution";
constexpr char kConvBackward[] = "convolution_backward";

struct TransposedSetup {
  kernels::Conv2dParams params;
  IntList out_sizes;  // the result's, 3-D for a 1-D convolution
  bool one_d = false;
};

// A stride / padding / dilation / output_padding list: one value, or one per spatial dim. For a
// 1-D convolution the height entry is the identity (`height_value`).
std::array<int64_t, 2> spatial(const char* op, const char* name, const IntList& v, bool one_d,
                               int64_t min_value, int64_t height_value) {
  const size_t dims = one_d ? 1 : 2;
  if (v.size() != 1 && v.size() != dims)
    fail(op, std::string(name) + " must have 1" + (one_d ? "" : " or 2") + " entries for a " +
                 (one_d ? "1-D" : "2-D") + " transposed convolution, got " + shape_to_string(v));
  for (int64_t x : v)
    if (x < min_value)
      fail(op, std::string(name) + " must be >= " + std::to_string(min_value) + ", got " +
                   shape_to_string(v));
  return one_d ? std::array<int64_t, 2>{height_value, v[0]}
               : std::array<int64_t, 2>{v[0], v.back()};
}

// args[first..]: stride, padding, dilation, transposed, output_padding, groups.
TransposedSetup transposed_setup(const char* op, const Tensor& input, const Tensor& weight,
                                 const Tensor& bias, const OpArgs& a, size_t first) {
  if (input.dim() != 3 && input.dim() != 4)
    fail(op,
         "a transposed convolution expects a 3-D input [N, C, L] or a 4-D input [N, C, H, W], "
         "got shape " +
             shape_to_string(input.sizes()));
  TransposedSetup s;
  s.one_d = input.dim() == 3;
  if (weight.dim() != input.dim())
    fail(op, "expected a " + std::to_string(input.dim()) +
                 "-D weight [in_channels, out_channels / groups, kernel...] for input of shape " +
                 shape_to_string(input.sizes()) + ", got shape " + shape_to_string(weight.sizes()));
  if (!is_floating(input.dtype()))
    fail(op, "input must be floating, got " + std::string(dtype_name(input.dtype())));
  for (const Tensor* t : {&weight, &bias})
    if (t->defined() && t->dtype() != input.dtype())
      fail(op, "input is " + std::string(dtype_name(input.dtype())) + " but " +
                   (t == &weight ? "weight" : "bias") + " is " +
                   std::string(dtype_name(t->dtype())) + "; convert them to one dtype");
  auto& p = s.params;
  p.stride = spatial(op, "stride", int_list_arg(a, first), s.one_d, 1, 1);
  p.padding = spatial(op, "padding", int_list_arg(a, first + 1), s.one_d, 0, 0);
  p.dilation = spatial(op, "dilation", int_list_arg(a, first + 2), s.one_d, 1, 1);
  const auto out_pad = spatial(op, "output_padding", int_list_arg(a, first + 4), s.one_d, 0, 0);
  p.groups = int_arg(a, first + 5);
  const int64_t C = input.size(1);
  if (p.groups < 1) fail(op, "groups must be >= 1, got " + std::to_string(p.groups));
  if (weight.size(0) != C || C % p.groups != 0)
    fail(op, "weight of shape " + shape_to_string(weight.sizes()) +
                 " expects its first dim to be the input channels (" + std::to_string(C) +
                 " for input of shape " + shape_to_string(input.sizes()) +
                 "), divisible by groups=" + std::to_string(p.groups));
  const int64_t O = saturating_mul(weight.size(1), p.groups);
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != O))
    fail(op, "bias must have shape [" + std::to_string(O) + "] (one per output channel), got " +
                 shape_to_string(bias.sizes()));
  s.out_sizes = {input.size(0), O};
  const int first_dim = s.one_d ? 1 : 0;
  for (int d = first_dim; d < 2; ++d) {
    if (out_pad[d] >= p.stride[d])
      fail(op, "output_padding " + std::to_string(out_pad[d]) +
                   " must be smaller than the stride " + std::to_string(p.stride[d]));
    const int64_t in = input.size(2 + d - first_dim), k = weight.size(2 + d - first_dim);
    // (in - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1, checked for overflow.
    std::optional<int64_t> grown = checked_mul(in - 1, p.stride[d]);
    std::optional<int64_t> span = checked_mul(p.dilation[d], k - 1);
    std::optional<int64_t> pad2 = checked_mul(p.padding[d], 2);
    std::optional<int64_t> out =
        grown && span ? checked_add(*grown, *span + out_pad[d] + 1) : std::nullopt;
    if (!out || !pad2)
      fail(op, "the output along spatial dim " + std::to_string(d - first_dim) +
                   " overflows int64; use smaller strides, dilations or paddings");
    if (*out - *pad2 < 1)
      fail(op, "the output along spatial dim " + std::to_string(d - first_dim) + " would be " +
                   std::to_string(*out - *pad2) + " long; use a smaller padding");
    s.out_sizes.push_back(*out - *pad2);
  }
  return s;
}

// `t` ([N, C, L] or [C_in, O / g, k]) seen as 4-D with a height of 1; 4-D tensors unchanged.
Tensor as_2d(const Tensor& t, bool one_d) {
  if (!one_d) return t;
  const IntList& st = t.strides();
  return make_view(t, {t.size(0), t.size(1), 1, t.size(2)}, {st[0], st[1], st[2], st[2]},
                   t.storage_offset());
}
IntList sizes_2d(const IntList& sizes, bool one_d) {
  return one_d ? IntList{sizes[0], sizes[1], 1, sizes[2]} : sizes;
}
// A fresh contiguous tensor of `sizes` holding `t4`'s values (t4 is the 4-D result).
Tensor from_2d(const Tensor& t4, const IntList& sizes, bool one_d) {
  if (!one_d) return t4;
  Tensor out = make_tensor(sizes, t4.dtype());
  kernels::copy_into(as_2d(out, true), t4);
  return out;
}

TensorMeta masked_meta(bool present, const IntList& sizes, DType dtype) {
  return TensorMeta::contiguous(present ? sizes : IntList{0}, dtype);
}

std::array<bool, 3> output_mask(const OpArgs& a, size_t i) {
  const IntList& m = int_list_arg(a, i);
  if (m.size() != 3)
    fail(kConvBackward, "output_mask must have 3 entries, got " + std::to_string(m.size()));
  return {m[0] != 0, m[1] != 0, m[2] != 0};
}

}  // namespace

std::vector<TensorMeta> transposed_convolution_meta(const OpArgs& a) {
  const Tensor& input = tensor_arg(a, 0);
  const Tensor bias = is_none(a, 2) ? Tensor() : tensor_arg(a, 2);
  TransposedSetup s = transposed_setup(kConv, input, tensor_arg(a, 1), bias, a, 3);
  return {TensorMeta::contiguous(s.out_sizes, input.dtype())};
}

std::vector<Tensor> transposed_convolution_kernel(const OpArgs& a) {
  const Tensor &input = tensor_arg(a, 0), &weight = tensor_arg(a, 1);
  const Tensor bias = is_none(a, 2) ? Tensor() : tensor_arg(a, 2);
  TransposedSetup s = transposed_setup(kConv, input, weight, bias, a, 3);
  Tensor out4 = kernels::conv_transpose2d(as_2d(input, s.one_d), as_2d(weight, s.one_d), bias,
                                          s.params, sizes_2d(s.out_sizes, s.one_d));
  return {from_2d(out4, s.out_sizes, s.one_d)};
}

std::vector<TensorMeta> transposed_convolution_backward_meta(const OpArgs& a) {
  const Tensor &grad = tensor_arg(a, 0), &input = tensor_arg(a, 1), &weight = tensor_arg(a, 2);
  TransposedSetup s = transposed_setup(kConvBackward, input, weight, Tensor(), a, 4);
  if (grad.sizes() != s.out_sizes || grad.dtype() != input.dtype())
    fail(kConvBackward, "grad_output is " + std::string(dtype_name(grad.dtype())) +
                            shape_to_string(grad.sizes()) +
                            ", expected the transposed convolution's output " +
                            std::string(dtype_name(input.dtype())) + shape_to_string(s.out_sizes));
  const IntList bias_sizes{s.out_sizes[1]};
  auto mask = output_mask(a, 10);
  if (mask[2] && !is_none(a, 3) && int_list_arg(a, 3) != bias_sizes)
    fail(kConvBackward, "bias_sizes " + shape_to_string(int_list_arg(a, 3)) + " do not match the " +
                            std::to_string(s.out_sizes[1]) + " output channels");
  return {masked_meta(mask[0], input.sizes(), input.dtype()),
          masked_meta(mask[1], weight.sizes(), input.dtype()),
          masked_meta(mask[2], bias_sizes, input.dtype())};
}

std::vector<Tensor> transposed_convolution_backward_kernel(const OpArgs& a) {
  std::vector<TensorMeta> m = transposed_convolution_backward_meta(a);
  const Tensor &grad = tensor_arg(a, 0), &input = tensor_arg(a, 1), &weight = tensor_arg(a, 2);
  TransposedSetup s = transposed_setup(kConvBackward, input, weight, Tensor(), a, 4);
  auto r = kernels::conv_transpose2d_backward(as_2d(grad, s.one_d), as_2d(input, s.one_d),
                                              as_2d(weight, s.one_d), s.params, output_mask(a, 10));
  std::vector<Tensor> out(3);
  for (size_t i = 0; i < 3; ++i)
    out[i] = r[i].defined() ? from_2d(r[i], m[i].sizes, s.one_d && i < 2)
                            : make_tensor({0}, input.dtype());
  return out;
}

}  // namespace aotgrad::ops

namespace aotgrad {

namespace {
// `input` without its batch dim (unbatched_dim: [C, L] or [C, H, W]) runs as a batch of one.
Tensor conv_transpose(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const IntList& stride, const IntList& padding, const IntList& output_padding,
                      int64_t groups, const IntList& dilation, int64_t unbatched_dim) {
  if (input.dim() == unbatched_dim)
    return squeeze(conv_transpose(unsqueeze(input, 0), weight, bias, stride, padding,
                                  output_padding, groups, dilation, unbatched_dim),
                   0);
  if (input.dim() != unbatched_dim + 1)
    throw std::invalid_argument("conv_transpose" + std::to_string(unbatched_dim - 1) +
                                "d: expected a " + std::to_string(unbatched_dim) +
                                "-D (unbatched) or " + std::to_string(unbatched_dim + 1) +
                                "-D (batched) input, got shape " + shape_to_string(input.sizes()));
  return convolution(input, weight, bias, stride, padding, dilation, true, output_padding, groups);
}
}  // namespace

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const IntList& stride, const IntList& padding,
                        const IntList& output_padding, int64_t groups, const IntList& dilation) {
  return conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const IntList& stride, const IntList& padding,
                        const IntList& output_padding, int64_t groups, const IntList& dilation) {
  return conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3);
}

}  // namespace aotgrad
