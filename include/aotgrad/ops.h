// The functional op API. Each function dispatches one op-table row (or, for composites such as
// matmul and linear, a fixed composition of rows), so it runs eagerly with autograd or is
// recorded when traced. Semantics follow ATen: broadcasting, type promotion, negative dims.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad {

class Generator;

// ---- pointwise arithmetic (ops/pointwise.cpp) ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor rsqrt(const Tensor& a);
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
// approximate: "none" (erf) or "tanh".
Tensor gelu(const Tensor& a, const std::string& approximate = "none");
Tensor pow(const Tensor& a, const Scalar& exponent);

// ---- comparison and selection (ops/compare.cpp) ----
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);

// ---- reductions (ops/reduction.cpp) ----
Tensor sum(const Tensor& a);
Tensor sum(const Tensor& a, const IntList& dims, bool keepdim = false);
Tensor mean(const Tensor& a);
Tensor mean(const Tensor& a, const IntList& dims, bool keepdim = false);
Tensor amax(const Tensor& a, const IntList& dims, bool keepdim = false);
// Sums `a` down to `sizes` (the inverse of broadcasting `sizes` to a.sizes()).
Tensor sum_to_size(const Tensor& a, const IntList& sizes);

// ---- linear algebra (ops/linalg.cpp) ----
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);  // composite, numpy rules
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());  // composite

// ---- neural-network ops (ops/nn.cpp) ----
Tensor _softmax(const Tensor& a, int64_t dim, bool half_to_float = false);
Tensor _log_softmax(const Tensor& a, int64_t dim, bool half_to_float = false);
Tensor softmax(const Tensor& a, int64_t dim);      // composite
Tensor log_softmax(const Tensor& a, int64_t dim);  // composite
// reduction: "mean", "sum" or "none". weight: one per class ([C], log_probs' dtype) or
// undefined; targets equal to ignore_index add nothing, and "mean" divides by the summed weight
// of the other targets (PyTorch's nll_loss).
constexpr int64_t kDefaultIgnoreIndex = -100;  // PyTorch's
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const std::string& reduction = "mean");
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const std::string& reduction,
                const Tensor& weight, int64_t ignore_index = kDefaultIgnoreIndex);
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const std::string& reduction = "mean");  // composite
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction,
                     const Tensor& weight, int64_t ignore_index = kDefaultIgnoreIndex);
Tensor mse_loss(const Tensor& a, const Tensor& b, const std::string& reduction = "mean");

// ---- views (ops/views.cpp): the result shares storage with the input ----
Tensor view(const Tensor& a, const IntList& sizes);
Tensor reshape(const Tensor& a, const IntList& sizes);  // composite: view, or clone + view
Tensor permute(const Tensor& a, const IntList& dims);
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1);
Tensor t(const Tensor& a);
Tensor expand(const Tensor& a, const IntList& sizes);
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor squeeze(const Tensor& a, int64_t dim);
Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& a, int64_t dim, int64_t index);
Tensor as_strided(const Tensor& a, const IntList& sizes, const IntList& strides,
                  std::optional<int64_t> storage_offset = std::nullopt);
Tensor alias(const Tensor& a);
Tensor detach(const Tensor& a);

// ---- copies, casts, factories (ops/factory.cpp) ----
Tensor clone(const Tensor& a);
Tensor contiguous(const Tensor& a);  // composite: a itself when already contiguous
Tensor to(const Tensor& a, DType dtype);
Tensor empty(const IntList& sizes, DType dtype = kDefaultFloat);
Tensor zeros(const IntList& sizes, DType dtype = kDefaultFloat);
Tensor ones(const IntList& sizes, DType dtype = kDefaultFloat);
Tensor full(const IntList& sizes, const Scalar& value, DType dtype = kDefaultFloat);
Tensor zeros_like(const Tensor& a);
Tensor ones_like(const Tensor& a);
Tensor full_like(const Tensor& a, const Scalar& value);
// Pads (or, with negative entries, crops) trailing dims: pad = {last_before, last_after,
// second_to_last_before, ...}; new elements are `value`.
Tensor constant_pad_nd(const Tensor& self, const IntList& pad, const Scalar& value = 0);
// Rotates along dims[i] by shifts[i]; with no dims, rolls the flattened tensor by shifts[0].
Tensor roll(const Tensor& self, const IntList& shifts, const IntList& dims = {});
// Tensor.new_zeros / new_ones / new_full: `size`, in self's dtype unless `dtype` is given.
Tensor new_zeros(const Tensor& self, const IntList& size, std::optional<DType> dtype = {});
Tensor new_ones(const Tensor& self, const IntList& size, std::optional<DType> dtype = {});
Tensor new_full(const Tensor& self, const IntList& size, const Scalar& value,
                std::optional<DType> dtype = {});
// self's shape and dtype, every element the 0-dim `value` (which gets the summed gradient).
Tensor fill(const Tensor& self, const Tensor& value);
Tensor empty_like(const Tensor& a);
// [start, end) by step; dtype i64 when all three are integers, else f32 (as torch.arange).
Tensor arange(const Scalar& end);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1);
Tensor rand(const IntList& sizes, DType dtype = kDefaultFloat, Generator* gen = nullptr);
Tensor randn(const IntList& sizes, DType dtype = kDefaultFloat, Generator* gen = nullptr);

// ---- in-place (ops/inplace.cpp): mutate `self`, bump its version counter, return it ----
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& add_(Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor& mul_(Tensor& self, const Tensor& other);
Tensor& mul_(Tensor& self, const Scalar& other);
Tensor& copy_(Tensor& self, const Tensor& src);
Tensor& zero_(Tensor& self);
Tensor& fill_(Tensor& self, const Scalar& value);

// ---- operators ----
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
inline Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
inline Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(const Scalar& a, const Tensor& b) { return add(neg(b), a); }
inline Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace aotgrad
