// Options builders for every module, with LibTorch's names, defaults and chaining:
//
//   nn::Conv2d conv(nn::Conv2dOptions(1, 10, 5).stride(2).padding(1).bias(false));
//   conv->options.stride()   // ExpandingArray<2>{2, 2}
//
// Each option is a private field with a getter `name()` and a chaining setter `name(value)`,
// declared by AOTGRAD_ARG (LibTorch's TORCH_ARG): dozens of fields would otherwise each be three
// hand-written lines that drift apart. Sizes given as one value apply to every spatial dim
// (ExpandingArray). Loss reductions take kMean / kSum / kNone or "mean" / "sum" / "none".
// Thread-safety: value types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "aotgrad/tensor.h"

#include "aotgrad/options_arg.h"

namespace aotgrad {

// D sizes, given as one value for all or as D values: kernel_size 5 is {5, 5} for 2-d layers.
template <size_t D>
class ExpandingArray {
 public:
  ExpandingArray(int64_t single) : values_(D, single) {}  // NOLINT: implicit, as LibTorch's
  ExpandingArray(std::initializer_list<int64_t> list) : ExpandingArray(IntList(list)) {}
  ExpandingArray(const IntList& values) : values_(values) {  // NOLINT: implicit
    if (values_.size() != D)
      throw std::invalid_argument("expected " + std::to_string(D) + " values, got " +
                                  shape_to_string(values_));
  }
  int64_t operator[](size_t i) const { return values_.at(i); }
  size_t size() const { return D; }
  const IntList& vec() const { return values_; }
  operator const IntList&() const { return values_; }  // NOLINT: implicit
  bool operator==(const ExpandingArray& other) const { return values_ == other.values_; }

 private:
  IntList values_;
};

namespace enumtype {
struct kMean {};
struct kSum {};
struct kNone {};
}  // namespace enumtype
inline constexpr enumtype::kMean kMean{};
inline constexpr enumtype::kSum kSum{};
inline constexpr enumtype::kNone kNone{};

namespace nn {

// How a loss reduces its elementwise values; name() is what the loss ops take.
class LossReduction {
 public:
  LossReduction(enumtype::kMean) : name_("mean") {}                      // NOLINT: implicit
  LossReduction(enumtype::kSum) : name_("sum") {}                        // NOLINT: implicit
  LossReduction(enumtype::kNone) : name_("none") {}                      // NOLINT: implicit
  LossReduction(const char* name) : LossReduction(std::string(name)) {}  // NOLINT: implicit
  LossReduction(const std::string& name) : name_(name) {                 // NOLINT: implicit
    if (name_ != "mean" && name_ != "sum" && name_ != "none")
      throw std::invalid_argument("loss reduction must be \"mean\", \"sum\" or \"none\", got \"" +
                                  name_ + "\"");
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  AOTGRAD_ARG(int64_t, in_features);
  AOTGRAD_ARG(int64_t, out_features);
  AOTGRAD_ARG(bool, bias) = true;
};

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  AOTGRAD_ARG(int64_t, num_embeddings);
  AOTGRAD_ARG(int64_t, embedding_dim);
  AOTGRAD_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

struct LayerNormOptions {
  LayerNormOptions(IntList normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  AOTGRAD_ARG(IntList, normalized_shape);
  AOTGRAD_ARG(double, eps) = 1e-5;
  AOTGRAD_ARG(bool, elementwise_affine) = true;
};

// Dropout and Dropout2d (LibTorch's Dropout2dOptions is the same type).
struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: implicit, so Dropout(0.2) works
  AOTGRAD_ARG(double, p);
  AOTGRAD_ARG(bool, inplace) = false;
};
using Dropout2dOptions = DropoutOptions;

struct GELUOptions {
  AOTGRAD_ARG(std::string, approximate) = "none";
};

struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT: implicit
  AOTGRAD_ARG(bool, inplace);
};

struct LeakyReLUOptions {
  AOTGRAD_ARG(double, negative_slope) = 1e-2;
  AOTGRAD_ARG(bool, inplace) = false;
};

struct FlattenOptions {
  AOTGRAD_ARG(int64_t, start_dim) = 1;
  AOTGRAD_ARG(int64_t, end_dim) = -1;
};

// Conv1dOptions, Conv2dOptions. padding_mode is always "zeros".
template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels),
        out_channels_(out_channels),
        kernel_size_(std::move(kernel_size)) {}
  AOTGRAD_ARG(int64_t, in_channels);
  AOTGRAD_ARG(int64_t, out_channels);
  AOTGRAD_ARG(ExpandingArray<D>, kernel_size);
  AOTGRAD_ARG(ExpandingArray<D>, stride) = 1;
  AOTGRAD_ARG(ExpandingArray<D>, padding) = 0;
  AOTGRAD_ARG(ExpandingArray<D>, dilation) = 1;
  AOTGRAD_ARG(int64_t, groups) = 1;
  AOTGRAD_ARG(bool, bias) = true;
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;

// ConvTranspose1dOptions, ConvTranspose2dOptions: as ConvOptions plus output_padding.
template <size_t D>
struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels),
        out_channels_(out_channels),
        kernel_size_(std::move(kernel_size)) {}
  AOTGRAD_ARG(int64_t, in_channels);
  AOTGRAD_ARG(int64_t, out_channels);
  AOTGRAD_ARG(ExpandingArray<D>, kernel_size);
  AOTGRAD_ARG(ExpandingArray<D>, stride) = 1;
  AOTGRAD_ARG(ExpandingArray<D>, padding) = 0;
  AOTGRAD_ARG(ExpandingArray<D>, output_padding) = 0;
  AOTGRAD_ARG(ExpandingArray<D>, dilation) = 1;
  AOTGRAD_ARG(int64_t, groups) = 1;
  AOTGRAD_ARG(bool, bias) = true;
};
using ConvTranspose2dOptions = ConvTransposeOptions<2>;

// BatchNorm1dOptions, BatchNorm2dOptions. momentum = nullopt: a cumulative moving average.
struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT: implicit
  AOTGRAD_ARG(int64_t, num_features);
  AOTGRAD_ARG(double, eps) = 1e-5;
  AOTGRAD_ARG(std::optional<double>, momentum) = 0.1;
  AOTGRAD_ARG(bool, affine) = true;
  AOTGRAD_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;

// stride defaults to kernel_size (LibTorch's constructor sets it so).
template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingArray<D> kernel_size)  // NOLINT: implicit
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  AOTGRAD_ARG(ExpandingArray<D>, kernel_size);
  AOTGRAD_ARG(ExpandingArray<D>, stride);
  AOTGRAD_ARG(ExpandingArray<D>, padding) = 0;
  AOTGRAD_ARG(ExpandingArray<D>, dilation) = 1;
  AOTGRAD_ARG(bool, ceil_mode) = false;
};
using MaxPool2dOptions = MaxPoolOptions<2>;

// The loss options: MSELossOptions(kSum), L1LossOptions().reduction("none"), ...
struct MSELossOptions {
  MSELossOptions(LossReduction reduction = kMean)  // NOLINT: implicit
      : reduction_(std::move(reduction)) {}
  AOTGRAD_ARG(LossReduction, reduction);
};
struct L1LossOptions {
  L1LossOptions(LossReduction reduction = kMean)  // NOLINT: implicit
      : reduction_(std::move(reduction)) {}
  AOTGRAD_ARG(LossReduction, reduction);
};
struct NLLLossOptions {
  NLLLossOptions(LossReduction reduction = kMean)  // NOLINT: implicit
      : reduction_(std::move(reduction)) {}
  AOTGRAD_ARG(Tensor, weight);  // one per class, or undefined
  AOTGRAD_ARG(int64_t, ignore_index) = -100;
  AOTGRAD_ARG(LossReduction, reduction);
};
struct CrossEntropyLossOptions {
  CrossEntropyLossOptions(LossReduction reduction = kMean)  // NOLINT: implicit
      : reduction_(std::move(reduction)) {}
  AOTGRAD_ARG(Tensor, weight);  // one per class, or undefined
  AOTGRAD_ARG(int64_t, ignore_index) = -100;
  AOTGRAD_ARG(LossReduction, reduction);
};
struct SmoothL1LossOptions {
  SmoothL1LossOptions(LossReduction reduction = kMean)  // NOLINT: implicit
      : reduction_(std::move(reduction)) {}
  AOTGRAD_ARG(LossReduction, reduction);
  AOTGRAD_ARG(double, beta) = 1.0;
};
struct BCELossOptions {
  BCELossOptions(LossReduction reduction = kMean)  // NOLINT: implicit
      : reduction_(std::move(reduction)) {}
  AOTGRAD_ARG(Tensor, weight);
  AOTGRAD_ARG(LossReduction, reduction);
};
struct BCEWithLogitsLossOptions {
  BCEWithLogitsLossOptions(LossReduction reduction = kMean)  // NOLINT: implicit
      : reduction_(std::move(reduction)) {}
  AOTGRAD_ARG(Tensor, weight);
  AOTGRAD_ARG(LossReduction, reduction);
  AOTGRAD_ARG(Tensor, pos_weight);
};

}  // namespace nn
}  // namespace aotgrad
