// TEMPORARY: weak fallbacks so the library links while op families are being written.
// Each family file's strong definition replaces these; this file is deleted once all exist.
#include <stdexcept>
#pragma GCC diagnostic ignored "-Wunused-parameter"

#include "aotgrad/ops.h"

namespace aotgrad {

__attribute__((weak)) Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  throw std::logic_error("aotgrad::add is not implemented yet");
}
__attribute__((weak)) Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  throw std::logic_error("aotgrad::add is not implemented yet");
}
__attribute__((weak)) Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  throw std::logic_error("aotgrad::sub is not implemented yet");
}
__attribute__((weak)) Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  throw std::logic_error("aotgrad::sub is not implemented yet");
}
__attribute__((weak)) Tensor mul(const Tensor& a, const Tensor& b) {
  throw std::logic_error("aotgrad::mul is not implemented yet");
}
__attribute__((weak)) Tensor mul(const Tensor& a, const Scalar& b) {
  throw std::logic_error("aotgrad::mul is not implemented yet");
}
__attribute__((weak)) Tensor div(const Tensor& a, const Tensor& b) {
  throw std::logic_error("aotgrad::div is not implemented yet");
}
__attribute__((weak)) Tensor div(const Tensor& a, const Scalar& b) {
  throw std::logic_error("aotgrad::div is not implemented yet");
}
__attribute__((weak)) Tensor neg(const Tensor& a) {
  throw std::logic_error("aotgrad::neg is not implemented yet");
}
__attribute__((weak)) Tensor exp(const Tensor& a) {
  throw std::logic_error("aotgrad::exp is not implemented yet");
}
__attribute__((weak)) Tensor log(const Tensor& a) {
  throw std::logic_error("aotgrad::log is not implemented yet");
}
__attribute__((weak)) Tensor sqrt(const Tensor& a) {
  throw std::logic_error("aotgrad::sqrt is not implemented yet");
}
__attribute__((weak)) Tensor rsqrt(const Tensor& a) {
  throw std::logic_error("aotgrad::rsqrt is not implemented yet");
}
__attribute__((weak)) Tensor sin(const Tensor& a) {
  throw std::logic_error("aotgrad::sin is not implemented yet");
}
__attribute__((weak)) Tensor cos(const Tensor& a) {
  throw std::logic_error("aotgrad::cos is not implemented yet");
}
__attribute__((weak)) Tensor tanh(const Tensor& a) {
  throw std::logic_error("aotgrad::tanh is not implemented yet");
}
__attribute__((weak)) Tensor sigmoid(const Tensor& a) {
  throw std::logic_error("aotgrad::sigmoid is not implemented yet");
}
__attribute__((weak)) Tensor relu(const Tensor& a) {
  throw std::logic_error("aotgrad::relu is not implemented yet");
}
__attribute__((weak)) Tensor gelu(const Tensor& a, const std::string& approximate) {
  throw std::logic_error("aotgrad::gelu is not implemented yet");
}
__attribute__((weak)) Tensor pow(const Tensor& a, const Scalar& exponent) {
  throw std::logic_error("aotgrad::pow is not implemented yet");
}
__attribute__((weak)) Tensor eq(const Tensor& a, const Tensor& b) {
  throw std::logic_error("aotgrad::eq is not implemented yet");
}
__attribute__((weak)) Tensor eq(const Tensor& a, const Scalar& b) {
  throw std::logic_error("aotgrad::eq is not implemented yet");
}
__attribute__((weak)) Tensor gt(const Tensor& a, const Tensor& b) {
  throw std::logic_error("aotgrad::gt is not implemented yet");
}
__attribute__((weak)) Tensor gt(const Tensor& a, const Scalar& b) {
  throw std::logic_error("aotgrad::gt is not implemented yet");
}
__attribute__((weak)) Tensor lt(const Tensor& a, const Tensor& b) {
  throw std::logic_error("aotgrad::lt is not implemented yet");
}
__attribute__((weak)) Tensor lt(const Tensor& a, const Scalar& b) {
  throw std::logic_error("aotgrad::lt is not implemented yet");
}
__attribute__((weak)) Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  throw std::logic_error("aotgrad::where is not implemented yet");
}
__attribute__((weak)) Tensor sum(const Tensor& a) {
  throw std::logic_error("aotgrad::sum is not implemented yet");
}
__attribute__((weak)) Tensor sum(const Tensor& a, const IntList& dims, bool keepdim) {
  throw std::logic_error("aotgrad::sum is not implemented yet");
}
__attribute__((weak)) Tensor mean(const Tensor& a) {
  throw std::logic_error("aotgrad::mean is not implemented yet");
}
__attribute__((weak)) Tensor mean(const Tensor& a, const IntList& dims, bool keepdim) {
  throw std::logic_error("aotgrad::mean is not implemented yet");
}
__attribute__((weak)) Tensor amax(const Tensor& a, const IntList& dims, bool keepdim) {
  throw std::logic_error("aotgrad::amax is not implemented yet");
}
__attribute__((weak)) Tensor sum_to_size(const Tensor& a, const IntList& sizes) {
  throw std::logic_error("aotgrad::sum_to_size is not implemented yet");
}
__attribute__((weak)) Tensor mm(const Tensor& a, const Tensor& b) {
  throw std::logic_error("aotgrad::mm is not implemented yet");
}
__attribute__((weak)) Tensor bmm(const Tensor& a, const Tensor& b) {
  throw std::logic_error("aotgrad::bmm is not implemented yet");
}
__attribute__((weak)) Tensor matmul(const Tensor& a, const Tensor& b) {
  throw std::logic_error("aotgrad::matmul is not implemented yet");
}
__attribute__((weak)) Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  throw std::logic_error("aotgrad::linear is not implemented yet");
}
__attribute__((weak)) Tensor _softmax(const Tensor& a, int64_t dim, bool half_to_float) {
  throw std::logic_error("aotgrad::_softmax is not implemented yet");
}
__attribute__((weak)) Tensor _log_softmax(const Tensor& a, int64_t dim, bool half_to_float) {
  throw std::logic_error("aotgrad::_log_softmax is not implemented yet");
}
__attribute__((weak)) Tensor softmax(const Tensor& a, int64_t dim) {
  throw std::logic_error("aotgrad::softmax is not implemented yet");
}
__attribute__((weak)) Tensor log_softmax(const Tensor& a, int64_t dim) {
  throw std::logic_error("aotgrad::log_softmax is not implemented yet");
}
__attribute__((weak)) Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const std::string& reduction) {
  throw std::logic_error("aotgrad::nll_loss is not implemented yet");
}
__attribute__((weak)) Tensor cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction) {
  throw std::logic_error("aotgrad::cross_entropy is not implemented yet");
}
__attribute__((weak)) Tensor mse_loss(const Tensor& a, const Tensor& b, const std::string& reduction) {
  throw std::logic_error("aotgrad::mse_loss is not implemented yet");
}
__attribute__((weak)) Tensor view(const Tensor& a, const IntList& sizes) {
  throw std::logic_error("aotgrad::view is not implemented yet");
}
__attribute__((weak)) Tensor reshape(const Tensor& a, const IntList& sizes) {
  throw std::logic_error("aotgrad::reshape is not implemented yet");
}
__attribute__((weak)) Tensor permute(const Tensor& a, const IntList& dims) {
  throw std::logic_error("aotgrad::permute is not implemented yet");
}
__attribute__((weak)) Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  throw std::logic_error("aotgrad::transpose is not implemented yet");
}
__attribute__((weak)) Tensor t(const Tensor& a) {
  throw std::logic_error("aotgrad::t is not implemented yet");
}
__attribute__((weak)) Tensor expand(const Tensor& a, const IntList& sizes) {
  throw std::logic_error("aotgrad::expand is not implemented yet");
}
__attribute__((weak)) Tensor unsqueeze(const Tensor& a, int64_t dim) {
  throw std::logic_error("aotgrad::unsqueeze is not implemented yet");
}
__attribute__((weak)) Tensor squeeze(const Tensor& a, int64_t dim) {
  throw std::logic_error("aotgrad::squeeze is not implemented yet");
}
__attribute__((weak)) Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step) {
  throw std::logic_error("aotgrad::slice is not implemented yet");
}
__attribute__((weak)) Tensor select(const Tensor& a, int64_t dim, int64_t index) {
  throw std::logic_error("aotgrad::select is not implemented yet");
}
__attribute__((weak)) Tensor as_strided(const Tensor& a, const IntList& sizes, const IntList& strides, std::optional<int64_t> storage_offset) {
  throw std::logic_error("aotgrad::as_strided is not implemented yet");
}
__attribute__((weak)) Tensor alias(const Tensor& a) {
  throw std::logic_error("aotgrad::alias is not implemented yet");
}
__attribute__((weak)) Tensor detach(const Tensor& a) {
  throw std::logic_error("aotgrad::detach is not implemented yet");
}
__attribute__((weak)) Tensor clone(const Tensor& a) {
  throw std::logic_error("aotgrad::clone is not implemented yet");
}
__attribute__((weak)) Tensor contiguous(const Tensor& a) {
  throw std::logic_error("aotgrad::contiguous is not implemented yet");
}
__attribute__((weak)) Tensor to(const Tensor& a, DType dtype) {
  throw std::logic_error("aotgrad::to is not implemented yet");
}
__attribute__((weak)) Tensor empty(const IntList& sizes, DType dtype) {
  throw std::logic_error("aotgrad::empty is not implemented yet");
}
__attribute__((weak)) Tensor zeros(const IntList& sizes, DType dtype) {
  throw std::logic_error("aotgrad::zeros is not implemented yet");
}
__attribute__((weak)) Tensor ones(const IntList& sizes, DType dtype) {
  throw std::logic_error("aotgrad::ones is not implemented yet");
}
__attribute__((weak)) Tensor full(const IntList& sizes, const Scalar& value, DType dtype) {
  throw std::logic_error("aotgrad::full is not implemented yet");
}
__attribute__((weak)) Tensor zeros_like(const Tensor& a) {
  throw std::logic_error("aotgrad::zeros_like is not implemented yet");
}
__attribute__((weak)) Tensor ones_like(const Tensor& a) {
  throw std::logic_error("aotgrad::ones_like is not implemented yet");
}
__attribute__((weak)) Tensor full_like(const Tensor& a, const Scalar& value) {
  throw std::logic_error("aotgrad::full_like is not implemented yet");
}
__attribute__((weak)) Tensor empty_like(const Tensor& a) {
  throw std::logic_error("aotgrad::empty_like is not implemented yet");
}
__attribute__((weak)) Tensor arange(const Scalar& end) {
  throw std::logic_error("aotgrad::arange is not implemented yet");
}
__attribute__((weak)) Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step) {
  throw std::logic_error("aotgrad::arange is not implemented yet");
}
__attribute__((weak)) Tensor rand(const IntList& sizes, DType dtype, Generator* gen) {
  throw std::logic_error("aotgrad::rand is not implemented yet");
}
__attribute__((weak)) Tensor randn(const IntList& sizes, DType dtype, Generator* gen) {
  throw std::logic_error("aotgrad::randn is not implemented yet");
}
__attribute__((weak)) Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  throw std::logic_error("aotgrad::add_ is not implemented yet");
}
__attribute__((weak)) Tensor& add_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  throw std::logic_error("aotgrad::add_ is not implemented yet");
}
__attribute__((weak)) Tensor& mul_(Tensor& self, const Tensor& other) {
  throw std::logic_error("aotgrad::mul_ is not implemented yet");
}
__attribute__((weak)) Tensor& mul_(Tensor& self, const Scalar& other) {
  throw std::logic_error("aotgrad::mul_ is not implemented yet");
}
__attribute__((weak)) Tensor& copy_(Tensor& self, const Tensor& src) {
  throw std::logic_error("aotgrad::copy_ is not implemented yet");
}
__attribute__((weak)) Tensor& zero_(Tensor& self) {
  throw std::logic_error("aotgrad::zero_ is not implemented yet");
}
__attribute__((weak)) Tensor& fill_(Tensor& self, const Scalar& value) {
  throw std::logic_error("aotgrad::fill_ is not implemented yet");
}
class Generator;
}  // namespace aotgrad
