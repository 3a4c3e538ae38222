// Transposed convolution through the regular convolution kernels (see kernels/conv_transpose.h
// for the identities). The forward hands conv2d_backward a shape-only stand-in for the regular
// convolution's input: a view with all strides 0 over one element, which the backward-data pass
// reads only for its sizes and dtype, so nothing of the output's size is allocated twice.
#include "kernels/conv_transpose.h"

#include "kernels/copy.h"
#include "kernels/elementwise.h"
#include "kernels/reduction.h"

namespace aotgrad::kernels {

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const Conv2dParams& p, const IntList& out_sizes) {
  const Tensor one = make_tensor({1}, input.dtype());
  const Tensor shape_only = make_view(one, out_sizes, IntList(out_sizes.size(), 0), 0);
  Tensor out = conv2d_backward(input, shape_only, weight, p, {true, false, false})[0];
  if (bias.defined())
    add_into(out, make_view(bias, {out_sizes[1], 1, 1}, {bias.strides()[0], 0, 0},
                            bias.storage_offset()));
  return out;
}

std::array<Tensor, 3> conv_transpose2d_backward(const Tensor& grad_output, const Tensor& input,
                                                const Tensor& weight, const Conv2dParams& p,
                                                std::array<bool, 3> need) {
  std::array<Tensor, 3> r;
  if (need[0]) r[0] = conv2d(grad_output, weight, Tensor(), p);
  if (need[1]) r[1] = conv2d_backward(input, grad_output, weight, p, {false, true, false})[1];
  if (need[2]) r[2] = sum(grad_output, {0, 2, 3}, false, input.dtype());
  return r;
}

}  // namespace aotgrad::kernels
