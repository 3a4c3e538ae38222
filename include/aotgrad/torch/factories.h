// LibTorch's factory spellings: every factory takes TensorOptions (dtype, device, requires_grad),
// sizes may be one integer (torch::zeros(n, device)), torch::tensor({..}) brace literals and
// from_blob over the caller's memory. Each forwards to the aotgrad factory op of ops.h / random.h
// and then applies the options, so eager, traced and compiled code see the same ops.
// A CUDA device in the options throws one line (check_cpu_device). Thread-safe as the ops are.
#pragma once

#include <functional>
#include <initializer_list>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad {

// Sizes the way LibTorch's IntArrayRef accepts them: {2, 3}, a vector, or a single integer n
// (meaning {n}).
class SizeArg {
 public:
  SizeArg(int64_t n) : sizes_{n} {}                                 // NOLINT: implicit
  SizeArg(std::initializer_list<int64_t> sizes) : sizes_(sizes) {}  // NOLINT
  SizeArg(const IntList& sizes) : sizes_(sizes) {}                  // NOLINT
  const IntList& sizes() const { return sizes_; }

 private:
  IntList sizes_;
};

Tensor empty(const SizeArg& sizes, const TensorOptions& options);
Tensor zeros(const SizeArg& sizes, const TensorOptions& options);
Tensor ones(const SizeArg& sizes, const TensorOptions& options);
Tensor full(const SizeArg& sizes, const Scalar& value, const TensorOptions& options);
Tensor rand(const SizeArg& sizes, const TensorOptions& options);
Tensor randn(const SizeArg& sizes, const TensorOptions& options);
// Integers uniform in [low, high) / [0, high); i64 unless the options say otherwise.
Tensor randint(int64_t high, const SizeArg& sizes, const TensorOptions& options = {});
Tensor randint(int64_t low, int64_t high, const SizeArg& sizes, const TensorOptions& options);
// torch.arange with options; without a dtype, i64 when every bound is integral, else f32.
Tensor arange(const Scalar& end, const TensorOptions& options);
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              const TensorOptions& options);
// `steps` points from start to end inclusive (torch.linspace); f32 unless the options say.
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                const TensorOptions& options = {});
// The n x m identity (m = n when absent).
Tensor eye(int64_t n, const TensorOptions& options = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions& options = {});
// *_like with options: `a`'s shape; dtype from the options, else a's.
Tensor empty_like(const Tensor& a, const TensorOptions& options);
Tensor zeros_like(const Tensor& a, const TensorOptions& options);
Tensor ones_like(const Tensor& a, const TensorOptions& options);
Tensor full_like(const Tensor& a, const Scalar& value, const TensorOptions& options);
Tensor rand_like(const Tensor& a, const TensorOptions& options);
Tensor randn_like(const Tensor& a, const TensorOptions& options);

// The data of a torch::tensor literal: a number, or a brace list of equal-shaped literals
// ({1.0, 2.0}, {{1, 2}, {3, 4}}). Its dtype is LibTorch's: a floating literal the default float
// (f32), any integer i64 (LibTorch widens int to kLong too), a bool b8; a list mixing kinds
// promotes (int with float: f32). Ragged lists throw std::invalid_argument naming the first
// mismatched shape.
class TensorLiteral {
 public:
  TensorLiteral(double v) : TensorLiteral(Scalar(v), kDefaultFloat) {}  // NOLINT: implicit
  TensorLiteral(float v) : TensorLiteral(Scalar(v), kDefaultFloat) {}   // NOLINT
  TensorLiteral(int v) : TensorLiteral(Scalar(v), DType::i64) {}        // NOLINT
  TensorLiteral(int64_t v) : TensorLiteral(Scalar(v), DType::i64) {}    // NOLINT
  TensorLiteral(bool v) : TensorLiteral(Scalar(v), DType::b8) {}        // NOLINT
  TensorLiteral(std::initializer_list<TensorLiteral> items);            // NOLINT
  TensorLiteral(const std::vector<float>& v);                           // NOLINT
  TensorLiteral(const std::vector<double>& v);                          // NOLINT
  TensorLiteral(const std::vector<int64_t>& v);                         // NOLINT
  TensorLiteral(const std::vector<int>& v);                             // NOLINT
  TensorLiteral(const std::vector<bool>& v);                            // NOLINT

  const IntList& sizes() const { return sizes_; }
  DType dtype() const { return dtype_; }
  const std::vector<Scalar>& values() const { return values_; }

 private:
  TensorLiteral(Scalar v, DType d) : dtype_(d), values_{v} {}
  IntList sizes_;
  DType dtype_;
  std::vector<Scalar> values_;  // row-major
};

// torch::tensor: a fresh tensor holding the literal, in the options' dtype when given.
Tensor tensor(const TensorLiteral& data, const TensorOptions& options = {});

// Wraps the caller's memory without copying. The caller keeps `data` alive (and unaliased by
// other writes) for as long as a tensor sharing it lives, or passes `deleter`, which runs on
// `data` when the last one dies. `strides` are in elements; without them the tensor is
// contiguous. The options' dtype (default f32) says what `data` holds.
Tensor from_blob(void* data, const SizeArg& sizes, const TensorOptions& options = {});
Tensor from_blob(void* data, const SizeArg& sizes, const IntList& strides,
                 const TensorOptions& options = {});
Tensor from_blob(void* data, const SizeArg& sizes, std::function<void(void*)> deleter,
                 const TensorOptions& options = {});
Tensor from_blob(void* data, const SizeArg& sizes, const IntList& strides,
                 std::function<void(void*)> deleter, const TensorOptions& options = {});

}  // namespace aotgrad
