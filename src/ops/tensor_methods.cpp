// Tensor's op methods: each forwards to the free function of the same name in ops.h.
#include "aotgrad/ops.h"

namespace aotgrad {

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return aotgrad::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o) const { return aotgrad::add(*this, o); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return aotgrad::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o) const { return aotgrad::sub(*this, o); }
Tensor Tensor::mul(const Tensor& o) const { return aotgrad::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return aotgrad::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return aotgrad::div(*this, o); }
Tensor Tensor::div(const Scalar& o) const { return aotgrad::div(*this, o); }
Tensor Tensor::neg() const { return aotgrad::neg(*this); }
Tensor Tensor::exp() const { return aotgrad::exp(*this); }
Tensor Tensor::log() const { return aotgrad::log(*this); }
Tensor Tensor::sqrt() const { return aotgrad::sqrt(*this); }
Tensor Tensor::rsqrt() const { return aotgrad::rsqrt(*this); }
Tensor Tensor::sin() const { return aotgrad::sin(*this); }
Tensor Tensor::cos() const { return aotgrad::cos(*this); }
Tensor Tensor::tanh() const { return aotgrad::tanh(*this); }
Tensor Tensor::sigmoid() const { return aotgrad::sigmoid(*this); }
Tensor Tensor::relu() const { return aotgrad::relu(*this); }
Tensor Tensor::pow(const Scalar& e) const { return aotgrad::pow(*this, e); }
Tensor Tensor::eq(const Tensor& o) const { return aotgrad::eq(*this, o); }
Tensor Tensor::gt(const Tensor& o) const { return aotgrad::gt(*this, o); }
Tensor Tensor::lt(const Tensor& o) const { return aotgrad::lt(*this, o); }
Tensor Tensor::eq(const Scalar& o) const { return aotgrad::eq(*this, o); }
Tensor Tensor::gt(const Scalar& o) const { return aotgrad::gt(*this, o); }
Tensor Tensor::lt(const Scalar& o) const { return aotgrad::lt(*this, o); }
Tensor Tensor::sum() const { return aotgrad::sum(*this); }
Tensor Tensor::sum(const IntList& d, bool k) const { return aotgrad::sum(*this, d, k); }
Tensor Tensor::mean() const { return aotgrad::mean(*this); }
Tensor Tensor::mean(const IntList& d, bool k) const { return aotgrad::mean(*this, d, k); }
Tensor Tensor::amax(const IntList& d, bool k) const { return aotgrad::amax(*this, d, k); }
Tensor Tensor::matmul(const Tensor& o) const { return aotgrad::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return aotgrad::mm(*this, o); }
Tensor Tensor::clone() const { return aotgrad::clone(*this); }
Tensor Tensor::contiguous() const { return aotgrad::contiguous(*this); }
Tensor Tensor::to(DType d) const { return aotgrad::to(*this, d); }
Tensor Tensor::detach() const { return aotgrad::detach(*this); }

Tensor Tensor::view(const IntList& s) const { return aotgrad::view(*this, s); }
Tensor Tensor::reshape(const IntList& s) const { return aotgrad::reshape(*this, s); }
Tensor Tensor::permute(const IntList& d) const { return aotgrad::permute(*this, d); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return aotgrad::transpose(*this, a, b); }
Tensor Tensor::t() const { return aotgrad::t(*this); }
Tensor Tensor::expand(const IntList& s) const { return aotgrad::expand(*this, s); }
Tensor Tensor::unsqueeze(int64_t d) const { return aotgrad::unsqueeze(*this, d); }
Tensor Tensor::squeeze(int64_t d) const { return aotgrad::squeeze(*this, d); }
Tensor Tensor::slice(int64_t d, int64_t s, int64_t e, int64_t st) const {
  return aotgrad::slice(*this, d, s, e, st);
}
Tensor Tensor::select(int64_t d, int64_t i) const { return aotgrad::select(*this, d, i); }
Tensor Tensor::as_strided(const IntList& s, const IntList& st, std::optional<int64_t> o) const {
  return aotgrad::as_strided(*this, s, st, o);
}
Tensor Tensor::alias() const { return aotgrad::alias(*this); }

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) { return aotgrad::add_(*this, o, alpha); }
Tensor& Tensor::add_(const Scalar& o) { return aotgrad::add_(*this, o); }
Tensor& Tensor::mul_(const Tensor& o) { return aotgrad::mul_(*this, o); }
Tensor& Tensor::mul_(const Scalar& o) { return aotgrad::mul_(*this, o); }
Tensor& Tensor::copy_(const Tensor& s) { return aotgrad::copy_(*this, s); }
Tensor& Tensor::zero_() { return aotgrad::zero_(*this); }
Tensor& Tensor::fill_(const Scalar& v) { return aotgrad::fill_(*this, v); }

}  // namespace aotgrad
