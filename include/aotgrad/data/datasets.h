// Datasets (LibTorch's torch::data::datasets): a dataset answers get_batch(indices) with one
// batch; most derive from Dataset<Self, Example> and answer get(index) with one example.
//
//   struct Squares : datasets::Dataset<Squares> {
//     Example<> get(size_t i) override { ... }
//     std::optional<size_t> size() const override { return 100; }
//   };
//   auto ds = Squares{}.map(transforms::Stack<>());   // batches become one stacked Example
//
// Datasets are read by the data loader's worker threads at once: get/get_batch must be safe to
// call concurrently (the datasets here only read immutable tensors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "aotgrad/data/example.h"
#include "aotgrad/tensor.h"

namespace aotgrad::data::datasets {

template <typename Source, typename Transform>
class MapDataset;

// The most general dataset: one batch per request.
template <typename Self, typename Batch = std::vector<Example<>>,
          typename BatchRequest = std::vector<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  constexpr static bool is_stateful = false;

  virtual ~BatchDataset() = default;
  virtual Batch get_batch(BatchRequest request) = 0;
  virtual std::optional<size_t> size() const = 0;

  // This dataset with `transform` applied to every batch it returns.
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return MapDataset<Self, TransformType>(static_cast<Self&>(*this), std::move(transform));
  }
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return MapDataset<Self, TransformType>(std::move(static_cast<Self&>(*this)),
                                           std::move(transform));
  }
};

// A dataset of single examples; a batch is the examples at the requested indices.
template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;

  virtual SingleExample get(size_t index) = 0;
  std::vector<SingleExample> get_batch(std::vector<size_t> indices) override {
    std::vector<SingleExample> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

// `Source` with a batch transform applied (built by map()).
template <typename Source, typename Transform>
class MapDataset
    : public BatchDataset<MapDataset<Source, Transform>, typename Transform::OutputBatchType,
                          typename Source::BatchRequestType> {
 public:
  using DatasetType = Source;
  using TransformType = Transform;
  using BatchRequestType = typename Source::BatchRequestType;
  using OutputBatchType = typename Transform::OutputBatchType;

  MapDataset(Source dataset, Transform transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType indices) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(indices)));
  }
  std::optional<size_t> size() const override { return dataset_.size(); }
  const Source& dataset() const { return dataset_; }
  const Transform& transform() const { return transform_; }

 private:
  Source dataset_;
  Transform transform_;
};

// The rows of one tensor, as examples without targets.
class TensorDataset : public Dataset<TensorDataset, TensorExample> {
 public:
  explicit TensorDataset(Tensor tensor);
  TensorExample get(size_t index) override;
  std::optional<size_t> size() const override;
  const Tensor& tensor() const { return tensor_; }

 private:
  Tensor tensor_;
};

// The MNIST digits in their IDX files under `root` (train-images-idx3-ubyte and
// train-labels-idx1-ubyte, or t10k-* for kTest): images as f32 [N, 1, rows, cols] in [0, 1],
// targets as i64 [N]. Any N, rows and cols the headers state; a missing, truncated or malformed
// file is a std::invalid_argument naming the file.
class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);

  Example<> get(size_t index) override;
  std::optional<size_t> size() const override;
  bool is_train() const noexcept { return is_train_; }
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
  bool is_train_;
};

// The IDX readers behind MNIST, over a file's bytes; `source` names the file in errors.
// Images: magic 2051, count, rows, cols (big-endian u32), then count*rows*cols bytes.
Tensor read_mnist_images(std::string_view bytes, std::string_view source);
// Labels: magic 2049, count, then count bytes.
Tensor read_mnist_targets(std::string_view bytes, std::string_view source);

}  // namespace aotgrad::data::datasets
