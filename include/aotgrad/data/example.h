// One training example (LibTorch's torch::data::Example): an input and its target. A dataset
// without targets uses TensorExample, whose target is NoTarget.
#pragma once

#include "aotgrad/tensor.h"

namespace aotgrad::data {

namespace example {
struct NoTarget {};
}  // namespace example

template <typename Data = Tensor, typename Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;

  Example() = default;
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}

  Data data;
  Target target;
};

// An example with no target: one tensor.
template <>
struct Example<Tensor, example::NoTarget> {
  using DataType = Tensor;
  using TargetType = example::NoTarget;

  Example() = default;
  explicit Example(Tensor data) : data(std::move(data)) {}
  operator Tensor&() { return data; }
  operator const Tensor&() const { return data; }

  Tensor data;
};

using TensorExample = Example<Tensor, example::NoTarget>;

}  // namespace aotgrad::data
