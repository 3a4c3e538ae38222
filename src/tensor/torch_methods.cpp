// Tensor's LibTorch-spelled methods (tensor.h, "LibTorch spellings") and the free functions of
// aotgrad/torch/functions.h. Each is one aotgrad op or a fixed composition of ops, so it runs
// eagerly with autograd and traces like the ops it is made of; nothing here has a kernel.
#include <limits>
#include <stdexcept>
#include <string>

#include "aotgrad/nn_ops.h"
#include "aotgrad/autograd.h"
#include "aotgrad/indexing.h"
#include "aotgrad/math.h"
#include "aotgrad/ops.h"
#include "aotgrad/random.h"
#include "aotgrad/torch/functions.h"
#include "tensor/dtype_dispatch.h"

namespace aotgrad {

TensorOptions Tensor::options() const {
  return TensorOptions().dtype(dtype()).device(device()).requires_grad(requires_grad());
}

Scalar Tensor::item() const {
  if (dtype() == DType::b8) return Scalar(item<bool>());
  if (is_floating(dtype())) return Scalar(item<double>());
  return Scalar(item<int64_t>());
}

void* Tensor::data_ptr() const {
  if (!defined()) throw std::invalid_argument("data_ptr() on an undefined Tensor");
  return impl()->data_bytes();
}

Tensor Tensor::to(Device d, std::optional<DType> dtype_arg) const {
  check_cpu_device(d, "Tensor::to");
  return dtype_arg && *dtype_arg != dtype() ? to(*dtype_arg) : *this;
}

Tensor Tensor::sum(int64_t d, bool keepdim) const {
  return aotgrad::sum(*this, {d}, keepdim);
}
Tensor Tensor::mean(int64_t d, bool keepdim) const {
  return aotgrad::mean(*this, {d}, keepdim);
}
Tensor Tensor::pow(const Tensor& e) const {
  return aotgrad::pow(*this, e);
}
Tensor Tensor::abs() const {
  return aotgrad::abs(*this);
}
Tensor Tensor::ne(const Scalar& o) const {
  return aotgrad::ne(*this, o);
}
Tensor Tensor::ne(const Tensor& o) const {
  return aotgrad::ne(*this, o);
}
Tensor Tensor::ge(const Scalar& o) const {
  return aotgrad::ge(*this, o);
}
Tensor Tensor::le(const Scalar& o) const {
  return aotgrad::le(*this, o);
}
Tensor Tensor::log_softmax(int64_t d) const {
  return aotgrad::log_softmax(*this, d);
}
Tensor Tensor::softmax(int64_t d) const {
  return aotgrad::softmax(*this, d);
}

Tensor Tensor::argmax(std::optional<int64_t> d, bool keepdim) const {
  return aotgrad::argmax(*this, d, keepdim);
}

Tensor Tensor::argmin(std::optional<int64_t> d, bool keepdim) const {
  return aotgrad::argmin(*this, d, keepdim);
}

// norm, all / any and argmin are op rows (src/ops/reduce_extra.cpp, declared in nn_ops.h); the
// methods call them.
Tensor Tensor::norm(const Scalar& p) const {
  return aotgrad::norm(*this, p);
}
Tensor Tensor::norm(const Scalar& p, int64_t d, bool keepdim) const {
  return aotgrad::norm(*this, std::optional<Scalar>(p), IntList{d}, keepdim);
}
Tensor Tensor::norm(const Scalar& p, const IntList& dims, bool keepdim) const {
  if (dims.empty())
    throw std::invalid_argument("norm: an empty dim list; call norm(p) for every element");
  return aotgrad::norm(*this, std::optional<Scalar>(p), dims, keepdim);
}
Tensor Tensor::all() const {
  return aotgrad::all(*this);
}
Tensor Tensor::any() const {
  return aotgrad::any(*this);
}
Tensor Tensor::all(int64_t d, bool keepdim) const {
  return aotgrad::all(*this, d, keepdim);
}
Tensor Tensor::any(int64_t d, bool keepdim) const {
  return aotgrad::any(*this, d, keepdim);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const int64_t s = wrap_dim(start_dim, dim(), "flatten start_dim");
  const int64_t e = wrap_dim(end_dim, dim(), "flatten end_dim");
  if (s > e)
    throw std::invalid_argument("flatten: start_dim " + std::to_string(start_dim) +
                                " comes after end_dim " + std::to_string(end_dim));
  IntList sizes(this->sizes().begin(), this->sizes().begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= size(d);
  sizes.push_back(n);
  sizes.insert(sizes.end(), this->sizes().begin() + e + 1, this->sizes().end());
  return reshape(sizes);
}

Tensor Tensor::squeeze() const {
  Tensor out = *this;
  for (int64_t d = dim() - 1; d >= 0; --d)
    if (size(d) == 1) out = aotgrad::squeeze(out, d);
  return out;
}

// ---- in-place ----

Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  if (dtype() == DType::b8)
    throw std::invalid_argument(
        "sub_: subtraction of bool tensors is not supported; use logical_xor or ~ instead");
  // x - a*y is x + (-a)*y exactly, in every dtype.
  const Scalar minus_alpha =
      alpha.is_floating() ? Scalar(-alpha.to_double()) : Scalar(int64_t{0} - alpha.to_int());
  return aotgrad::add_(*this, o, minus_alpha);
}

Tensor& Tensor::sub_(const Scalar& o) {
  if (dtype() == DType::b8)
    throw std::invalid_argument(
        "sub_: subtraction of bool tensors is not supported; use logical_xor or ~ instead");
  const Scalar minus = o.is_floating() ? Scalar(-o.to_double()) : Scalar(int64_t{0} - o.to_int());
  return aotgrad::add_(*this, minus);
}

namespace {

// self = f(self) as one in-place write: the value is computed out of place and copied in, so
// autograd records a copy_ into self. When autograd may save self for f's backward, f reads a
// clone (the copy_ bumps self's version, which a saved self would then fail its check on).
template <typename F>
Tensor& assign_result(Tensor& self, const char* op, DType result, bool needs_old_self, F&& f) {
  if (!is_floating(self.dtype()) && is_floating(result))
    throw std::invalid_argument(std::string(op) + ": result type " +
                                std::string(dtype_name(result)) +
                                " can't be cast to the desired output type " +
                                std::string(dtype_name(self.dtype())) + " of self");
  const Tensor old = needs_old_self && autograd::grad_mode_enabled() ? self.clone() : self;
  Tensor value = f(old);
  return aotgrad::copy_(self, value);
}

}  // namespace

Tensor& Tensor::div_(const Tensor& o) {
  const DType result = is_floating(dtype()) || is_floating(o.dtype())
                           ? promote_types(is_floating(dtype()) ? dtype() : kDefaultFloat,
                                           is_floating(o.dtype()) ? o.dtype() : kDefaultFloat)
                           : kDefaultFloat;
  return assign_result(*this, "div_", result, requires_grad() || o.requires_grad(),
                       [&](const Tensor& s) { return aotgrad::div(s, o); });
}

Tensor& Tensor::div_(const Scalar& o) {
  const DType result = is_floating(dtype()) ? dtype() : kDefaultFloat;
  return assign_result(*this, "div_", result, requires_grad(),
                       [&](const Tensor& s) { return aotgrad::div(s, o); });
}

Tensor& Tensor::eq_(const Tensor& o) {
  return assign_result(*this, "eq_", dtype(), false,
                       [&](const Tensor& s) { return aotgrad::eq(s, o).to(dtype()); });
}

Tensor& Tensor::eq_(const Scalar& o) {
  return assign_result(*this, "eq_", dtype(), false,
                       [&](const Tensor& s) { return aotgrad::eq(s, o).to(dtype()); });
}

Tensor& Tensor::uniform_(double from, double to_value) {
  return aotgrad::uniform_(*this, from, to_value);
}

Tensor& Tensor::normal_(double mean_value, double std_value) {
  if (!is_floating(dtype()))
    throw std::invalid_argument("normal_: expected a floating tensor, got dtype " +
                                std::string(dtype_name(dtype())));
  autograd::NoGradGuard no_grad;
  Tensor value =
      aotgrad::add(aotgrad::mul(randn(sizes(), dtype()), Scalar(std_value)), Scalar(mean_value));
  return aotgrad::copy_(*this, value);
}

// ---- free functions of aotgrad/torch/functions.h ----

std::string reduction_name(int64_t reduction) {
  switch (reduction) {
    case Reduction::None:
      return "none";
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
  }
  throw std::invalid_argument("reduction " + std::to_string(reduction) +
                              " is not one of Reduction::None, Mean or Sum");
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                int64_t reduction, int64_t ignore_index) {
  return nll_loss(log_probs, target, reduction_name(reduction), weight, ignore_index);
}

Tensor pow(const Tensor& base, const Tensor& exponent) {
  if (exponent.dim() == 0 && !exponent.requires_grad()) return pow(base, exponent.item());
  // base^e = exp(e * log(base)) for positive bases; a general Tensor exponent needs pow.Tensor.
  throw std::invalid_argument(
      "pow: a Tensor exponent with elements or gradient is not supported yet; pass a Scalar");
}

}  // namespace aotgrad
