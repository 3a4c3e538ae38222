// LibTorch free-function spellings that differ from aotgrad's own only in their argument form:
// integer kernel sizes, nll_loss's weight and Reduction enum, torch::str. Each forwards to one
// aotgrad op, so it behaves exactly as that op.
#pragma once

#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>

#include "aotgrad/conv.h"
#include "aotgrad/ops.h"

namespace aotgrad {

// LibTorch's at::Reduction::Reduction values for the losses.
namespace Reduction {
enum Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };
}  // namespace Reduction

// The reduction string aotgrad's losses take ("none", "mean", "sum"); throws std::invalid_argument
// for another value.
std::string reduction_name(int64_t reduction);

// torch::nll_loss(input, target, weight, reduction, ignore_index).
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                int64_t reduction = Reduction::Mean, int64_t ignore_index = -100);

// max_pool2d with one integer for a square window (stride defaults to the window).
inline Tensor max_pool2d(const Tensor& input, int64_t kernel_size) {
  return max_pool2d(input, IntList{kernel_size, kernel_size});
}

// Powers: a Tensor base and a Scalar or Tensor exponent.
Tensor pow(const Tensor& base, const Tensor& exponent);

// std::cout << t.dtype() prints the dtype's short name ("f32"), as LibTorch prints its own names.
inline std::ostream& operator<<(std::ostream& os, DType t) {
  return os << dtype_name(t);
}

// c10::str: the arguments streamed into one string.
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// argmin, norm, all and any: aotgrad/nn_ops.h.

}  // namespace aotgrad
