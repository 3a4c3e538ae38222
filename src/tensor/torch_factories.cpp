// LibTorch's factory spellings (aotgrad/torch/factories.h). Reading guide: every factory goes
// through finish(), which checks the device and applies requires_grad, after one aotgrad
// factory op made the values; torch::tensor literals are flattened by TensorLiteral's list
// constructor; from_blob wraps the caller's memory in an external Storage.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "aotgrad/ops.h"
#include "aotgrad/random.h"
#include "aotgrad/torch/factories.h"
#include "tensor/checked_math.h"
#include "tensor/dtype_dispatch.h"

namespace aotgrad {
namespace {

void check_options(const TensorOptions& o, const char* what) {
  check_cpu_device(o.device(), what);
}

Tensor finish(Tensor t, const TensorOptions& o) {
  if (o.requires_grad()) {
    if (!is_floating(t.dtype()))
      throw std::invalid_argument("requires_grad(true) needs a floating dtype, got " +
                                  std::string(dtype_name(t.dtype())) +
                                  ": only floating tensors can require gradients");
    t.requires_grad_(true);
  }
  return t;
}

}  // namespace

Tensor empty(const SizeArg& s, const TensorOptions& o) {
  check_options(o, "torch::empty");
  return finish(empty(s.sizes(), o.dtype()), o);
}
Tensor zeros(const SizeArg& s, const TensorOptions& o) {
  check_options(o, "torch::zeros");
  return finish(zeros(s.sizes(), o.dtype()), o);
}
Tensor ones(const SizeArg& s, const TensorOptions& o) {
  check_options(o, "torch::ones");
  return finish(ones(s.sizes(), o.dtype()), o);
}
Tensor full(const SizeArg& s, const Scalar& value, const TensorOptions& o) {
  check_options(o, "torch::full");
  // Without a dtype, torch.full takes the value's: f32 for a float, i64 for an int, b8 for a bool.
  DType d = o.has_dtype() ? o.dtype() : value.is_floating() ? kDefaultFloat : value.natural_dtype();
  return finish(full(s.sizes(), value, d), o);
}
Tensor rand(const SizeArg& s, const TensorOptions& o) {
  check_options(o, "torch::rand");
  return finish(rand(s.sizes(), o.dtype()), o);
}
Tensor randn(const SizeArg& s, const TensorOptions& o) {
  check_options(o, "torch::randn");
  return finish(randn(s.sizes(), o.dtype()), o);
}
Tensor randint(int64_t high, const SizeArg& s, const TensorOptions& o) {
  return randint(0, high, s, o);
}
Tensor randint(int64_t low, int64_t high, const SizeArg& s, const TensorOptions& o) {
  check_options(o, "torch::randint");
  return finish(randint(low, high, s.sizes(), o.has_dtype() ? o.dtype() : DType::i64), o);
}

Tensor arange(const Scalar& end, const TensorOptions& o) {
  return arange(0, end, 1, o);
}
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& o) {
  return arange(start, end, 1, o);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  check_options(o, "torch::arange");
  Tensor t = arange(start, end, step);
  return finish(o.has_dtype() && o.dtype() != t.dtype() ? t.to(o.dtype()) : t, o);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o) {
  check_options(o, "torch::linspace");
  if (steps < 0)
    throw std::invalid_argument("torch::linspace: number of steps must be non-negative, got " +
                                std::to_string(steps));
  const double a = start.to_double(), b = end.to_double();
  const double step = steps > 1 ? (b - a) / static_cast<double>(steps - 1) : 0.0;
  // ATen fills the first half from start and the second half back from end, so both ends are
  // exact; doing the same gives the same values.
  std::vector<double> v(static_cast<size_t>(steps));
  const int64_t half = steps / 2;
  for (int64_t i = 0; i < steps; ++i)
    v[static_cast<size_t>(i)] = i < half ? a + step * static_cast<double>(i)
                                         : b - step * static_cast<double>(steps - 1 - i);
  return finish(from_vector(v, {steps}).to(o.dtype()), o);
}

Tensor eye(int64_t n, const TensorOptions& o) {
  return eye(n, n, o);
}
Tensor eye(int64_t n, int64_t m, const TensorOptions& o) {
  check_options(o, "torch::eye");
  if (n < 0 || m < 0)
    throw std::invalid_argument("torch::eye: n and m must be non-negative, got " +
                                std::to_string(n) + " and " + std::to_string(m));
  Tensor t = zeros({n, m}, o.dtype());
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = convert<T>(1);
  });
  return finish(t, o);
}

Tensor empty_like(const Tensor& a, const TensorOptions& o) {
  return empty(a.sizes(), o.has_dtype() ? o : o.dtype(a.dtype()));
}
Tensor zeros_like(const Tensor& a, const TensorOptions& o) {
  return zeros(a.sizes(), o.has_dtype() ? o : o.dtype(a.dtype()));
}
Tensor ones_like(const Tensor& a, const TensorOptions& o) {
  return ones(a.sizes(), o.has_dtype() ? o : o.dtype(a.dtype()));
}
Tensor full_like(const Tensor& a, const Scalar& value, const TensorOptions& o) {
  return full(a.sizes(), value, o.has_dtype() ? o : o.dtype(a.dtype()));
}
Tensor rand_like(const Tensor& a, const TensorOptions& o) {
  return rand(a.sizes(), o.has_dtype() ? o : o.dtype(a.dtype()));
}
Tensor randn_like(const Tensor& a, const TensorOptions& o) {
  return randn(a.sizes(), o.has_dtype() ? o : o.dtype(a.dtype()));
}

// ---- torch::tensor literals ----

TensorLiteral::TensorLiteral(std::initializer_list<TensorLiteral> items) : dtype_(DType::b8) {
  if (items.size() == 0) {
    // torch::tensor({}) is an empty f32 tensor.
    sizes_ = {0};
    dtype_ = kDefaultFloat;
    return;
  }
  const TensorLiteral& first = *items.begin();
  bool first_item = true;
  size_t k = 0;
  for (const TensorLiteral& item : items) {
    if (item.sizes_ != first.sizes_)
      throw std::invalid_argument("torch::tensor: element " + std::to_string(k) + " has shape " +
                                  shape_to_string(item.sizes_) + " but element 0 has shape " +
                                  shape_to_string(first.sizes_) +
                                  "; every element of a brace list needs the same shape");
    dtype_ = first_item ? item.dtype_ : promote_types(dtype_, item.dtype_);
    first_item = false;
    values_.insert(values_.end(), item.values_.begin(), item.values_.end());
    ++k;
  }
  sizes_ = first.sizes_;
  sizes_.insert(sizes_.begin(), static_cast<int64_t>(items.size()));
}

namespace {
template <typename T>
std::vector<Scalar> scalars_of(const std::vector<T>& v) {
  std::vector<Scalar> out;
  out.reserve(v.size());
  for (T x : v) out.emplace_back(x);
  return out;
}
}  // namespace

TensorLiteral::TensorLiteral(const std::vector<float>& v)
    : sizes_{static_cast<int64_t>(v.size())}, dtype_(DType::f32), values_(scalars_of(v)) {}
TensorLiteral::TensorLiteral(const std::vector<double>& v)
    : sizes_{static_cast<int64_t>(v.size())}, dtype_(DType::f64), values_(scalars_of(v)) {}
TensorLiteral::TensorLiteral(const std::vector<int64_t>& v)
    : sizes_{static_cast<int64_t>(v.size())}, dtype_(DType::i64), values_(scalars_of(v)) {}
TensorLiteral::TensorLiteral(const std::vector<int>& v)
    : sizes_{static_cast<int64_t>(v.size())}, dtype_(DType::i64), values_(scalars_of(v)) {}
TensorLiteral::TensorLiteral(const std::vector<bool>& v)
    : sizes_{static_cast<int64_t>(v.size())}, dtype_(DType::b8) {
  for (bool b : v) values_.emplace_back(b);
}

Tensor tensor(const TensorLiteral& data, const TensorOptions& o) {
  check_options(o, "torch::tensor");
  Tensor t = make_tensor(data.sizes(), o.has_dtype() ? o.dtype() : data.dtype());
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    const std::vector<Scalar>& v = data.values();
    for (size_t k = 0; k < v.size(); ++k)
      p[k] = v[k].is_floating() ? convert<T>(v[k].to_double()) : convert<T>(v[k].to_int());
  });
  return finish(t, o);
}

// ---- from_blob ----

Tensor from_blob(void* data, const SizeArg& s, const TensorOptions& o) {
  return from_blob(data, s, contiguous_strides(s.sizes()), std::function<void(void*)>(), o);
}
Tensor from_blob(void* data, const SizeArg& s, const IntList& strides, const TensorOptions& o) {
  return from_blob(data, s, strides, std::function<void(void*)>(), o);
}
Tensor from_blob(void* data, const SizeArg& s, std::function<void(void*)> deleter,
                 const TensorOptions& o) {
  return from_blob(data, s, contiguous_strides(s.sizes()), std::move(deleter), o);
}
Tensor from_blob(void* data, const SizeArg& s, const IntList& strides,
                 std::function<void(void*)> deleter, const TensorOptions& o) {
  check_options(o, "torch::from_blob");
  const IntList& sizes = s.sizes();
  if (strides.size() != sizes.size())
    throw std::invalid_argument("torch::from_blob: " + std::to_string(strides.size()) +
                                " strides for the " + std::to_string(sizes.size()) + "-dim shape " +
                                shape_to_string(sizes) + "; give one stride per dim");
  for (int64_t st : strides)
    if (st < 0)
      throw std::invalid_argument("torch::from_blob: negative stride in " +
                                  shape_to_string(strides) + "; strides must be >= 0");
  const DType dtype = o.dtype();
  check_view_geometry(sizes, strides, 0, dtype);
  if (data == nullptr && numel_of(sizes) != 0)
    throw std::invalid_argument("torch::from_blob: data is null for the non-empty shape " +
                                shape_to_string(sizes));
  // The storage spans every element the view reaches (the geometry check above bounds it).
  int64_t reach = numel_of(sizes) == 0 ? 0 : 1;
  for (size_t d = 0; d < sizes.size() && reach > 0; ++d) reach += (sizes[d] - 1) * strides[d];
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = dtype;
  impl->sizes = sizes;
  impl->strides = strides;
  impl->storage = std::make_shared<Storage>(data, static_cast<size_t>(reach) * itemsize(dtype),
                                            std::move(deleter));
  return finish(Tensor(std::move(impl)), o);
}

}  // namespace aotgrad
