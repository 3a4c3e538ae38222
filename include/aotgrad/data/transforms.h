// Transforms applied to examples or batches (LibTorch's torch::data::transforms).
//
//   dataset.map(transforms::Normalize<>(0.1307, 0.3081))   // per example: (data - mean) / stddev
//          .map(transforms::Stack<>());                      // a batch of examples -> one Example
//
// A BatchTransform maps a whole batch; a Transform maps each example of it (apply_batch calls
// apply once per example). Stack is the collation most programs end with: it stacks the examples'
// data along a new first dimension, and their targets likewise.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "aotgrad/data/example.h"
#include "aotgrad/indexing.h"
#include "aotgrad/ops.h"

namespace aotgrad::data::transforms {

template <typename InputBatch, typename OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;
  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

template <typename Input, typename Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  virtual Output apply(Input input) = 0;
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> out;
    out.reserve(input_batch.size());
    for (Input& in : input_batch) out.push_back(apply(std::move(in)));
    return out;
  }
};

// A batch transform given as a function.
template <typename Input, typename Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit BatchLambda(FunctionType f) : f_(std::move(f)) {}
  Output apply_batch(Input input_batch) override { return f_(std::move(input_batch)); }

 private:
  FunctionType f_;
};

// A per-example transform given as a function.
template <typename Input, typename Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit Lambda(FunctionType f) : f_(std::move(f)) {}
  Output apply(Input input) override { return f_(std::move(input)); }

 private:
  FunctionType f_;
};

// Collation: a vector of examples to one batch.
template <typename T = Example<>>
struct Stack;

template <>
struct Stack<Example<>> : public BatchTransform<std::vector<Example<>>, Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override {
    if (examples.empty()) throw std::invalid_argument("transforms::Stack: the batch is empty");
    std::vector<Tensor> data, targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (Example<>& e : examples) {
      data.push_back(std::move(e.data));
      targets.push_back(std::move(e.target));
    }
    return {stack(data), stack(targets)};
  }
};

template <>
struct Stack<TensorExample> : public BatchTransform<std::vector<TensorExample>, TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    if (examples.empty()) throw std::invalid_argument("transforms::Stack: the batch is empty");
    std::vector<Tensor> data;
    data.reserve(examples.size());
    for (TensorExample& e : examples) data.push_back(std::move(e.data));
    return TensorExample(stack(data));
  }
};

// A transform of the data tensor of each example, the target passed through.
template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  virtual Tensor operator()(Tensor input) = 0;
  E apply(E input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;
  explicit TensorLambda(FunctionType f) : f_(std::move(f)) {}
  Tensor operator()(Tensor input) override { return f_(std::move(input)); }

 private:
  FunctionType f_;
};

// (data - mean) / stddev, per channel when given one value per channel (the data's first
// dimension), as torchvision's and LibTorch's Normalize.
template <typename Target = Tensor>
class Normalize : public TensorTransform<Target> {
 public:
  Normalize(double mean, double stddev) : Normalize(std::vector<double>{mean}, {stddev}) {}
  Normalize(std::vector<double> mean, std::vector<double> stddev)
      : mean_(std::move(mean)), stddev_(std::move(stddev)) {
    if (mean_.empty() || mean_.size() != stddev_.size())
      throw std::invalid_argument(
          "transforms::Normalize: mean and stddev need the same number of values (one, or one "
          "per channel); got " +
          std::to_string(mean_.size()) + " and " + std::to_string(stddev_.size()));
    for (double s : stddev_)
      if (!(s != 0.0)) throw std::invalid_argument("transforms::Normalize: stddev must be nonzero");
  }
  Tensor operator()(Tensor input) override {
    int64_t channels = static_cast<int64_t>(mean_.size());
    if (channels == 1) return div(sub(input, Scalar(mean_[0])), Scalar(stddev_[0]));
    if (input.dim() < 1 || input.sizes()[0] != channels)
      throw std::invalid_argument("transforms::Normalize: " + std::to_string(channels) +
                                  " channel values for data of shape " +
                                  shape_to_string(input.sizes()) +
                                  " (the first dimension must be the channels)");
    IntList shape(static_cast<size_t>(input.dim()), 1);
    shape[0] = channels;
    Tensor mean = from_vector(mean_, shape).to(input.dtype());
    Tensor stddev = from_vector(stddev_, shape).to(input.dtype());
    return div(sub(input, mean), stddev);
  }

 private:
  std::vector<double> mean_, stddev_;
};

}  // namespace aotgrad::data::transforms
