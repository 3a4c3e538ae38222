// The one include a LibTorch program changes to: #include <aotgrad/torch.h> instead of
// <torch/torch.h>. It makes `torch::` (and the `at::` / `c10::` names and the macros such
// programs use) name aotgrad's own API; nothing here computes. The API itself lives in
// namespace aotgrad with LibTorch's names, signatures and semantics (docs/porting-from-libtorch.md
// lists what maps to what and what is not supported: CUDA, TorchScript).
//
// How the mapping works: `namespace torch { using namespace ::aotgrad; }` makes every aotgrad
// name a torch name (torch::Tensor, torch::zeros, torch::nn::Linear, torch::data::...). Where
// LibTorch puts a name in a sub-namespace that aotgrad also has, a namespace alias makes both
// spellings one namespace (torch::autograd is aotgrad::autograd), so `using namespace torch;`
// never makes a name ambiguous.
#pragma once

// LibTorch's torch.h brings these in; programs rely on it (std::isnan, std::cout).
#include <cmath>
#include <iostream>
#include <stdexcept>

#include "aotgrad/accessor.h"
#include "aotgrad/aotgrad.h"
#include "aotgrad/autograd.h"
#include "aotgrad/indexing.h"
#include "aotgrad/math.h"
#include "aotgrad/random.h"
#include "aotgrad/serialize.h"
#include "aotgrad/torch/device.h"
#include "aotgrad/torch/factories.h"
#include "aotgrad/torch/functions.h"
#include "aotgrad/torch/tensor_options.h"
// TORCH_MODULE and the module holders come from aotgrad/nn/holder.h (through aotgrad.h).

namespace torch {
using namespace ::aotgrad;
namespace autograd = ::aotgrad::autograd;
namespace indexing = ::aotgrad::indexing;
namespace cuda = ::aotgrad::cuda;
using Dtype = ::aotgrad::DType;
using ScalarType = ::aotgrad::DType;
using IntArrayRef = ::aotgrad::IntList;
}  // namespace torch

namespace at {
using namespace ::aotgrad;
namespace indexing = ::aotgrad::indexing;
using ScalarType = ::aotgrad::DType;
using IntArrayRef = ::aotgrad::IntList;
}  // namespace at

namespace c10 {
using namespace ::aotgrad;
using ScalarType = ::aotgrad::DType;
using IntArrayRef = ::aotgrad::IntList;
}  // namespace c10

// AT_ASSERT(cond): throws std::logic_error naming the condition, file and line when it fails.
#define AT_ASSERT(cond)                                                                  \
  do {                                                                                   \
    if (!(cond))                                                                         \
      throw std::logic_error(                                                            \
          ::aotgrad::str("Assertion failed: ", #cond, " at ", __FILE__, ":", __LINE__)); \
  } while (false)

// TORCH_CHECK(cond, message parts...): throws std::invalid_argument with the parts streamed
// together (or the condition's text when there are none).
#define TORCH_CHECK(cond, ...)                                                           \
  do {                                                                                   \
    if (!(cond))                                                                         \
      throw std::invalid_argument(                                                       \
          ::aotgrad::str("Expected " #cond " to be true. " __VA_OPT__(, ) __VA_ARGS__)); \
  } while (false)
