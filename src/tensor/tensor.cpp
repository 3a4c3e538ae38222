// Storage, TensorImpl and the metadata/data half of Tensor.
#include "aotgrad/tensor.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "tensor/allocator.h"
#include "tensor/checked_math.h"
#include "tensor/current_op.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"
#include "tensor/small_object_pool.h"

namespace aotgrad {

Storage::Storage(size_t nbytes, bool fake) : nbytes_(nbytes), fake_(fake) {
  if (!fake) data_ = cpu_allocator().allocate(nbytes);
}

Storage::Storage(void* data, size_t nbytes, std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), external_(true), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (!external_) {
    cpu_allocator().deallocate(data_, nbytes_);
    return;
  }
  if (!deleter_) return;
  // A destructor must not throw: a throwing user deleter is swallowed (the memory's fate is then
  // the caller's, as it would be with no deleter).
  try {
    deleter_(data_);
  } catch (...) {
  }
}

// ---- the op this thread runs (tensor/current_op.h) ----

namespace {
thread_local std::string_view t_current_op;
}  // namespace

CurrentOpScope::CurrentOpScope(std::string_view op) noexcept : previous_(t_current_op) {
  t_current_op = op;
}
CurrentOpScope::~CurrentOpScope() {
  t_current_op = previous_;
}
std::string_view current_op() noexcept {
  return t_current_op;
}
std::string op_label(std::string_view fallback) {
  return std::string(t_current_op.empty() ? fallback : t_current_op);
}

// ---- checked sizes ----

namespace {

[[noreturn]] void size_error(std::string_view fallback, const std::string& what) {
  throw std::invalid_argument(op_label(fallback) + ": " + what);
}

void check_sizes_not_negative(std::string_view fallback, const IntList& sizes) {
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] < 0)
      size_error(fallback, "shape " + shape_to_string(sizes) + " has the negative size " +
                               std::to_string(sizes[d]) + " at dim " + std::to_string(d) +
                               "; sizes must be >= 0");
}

int64_t checked_numel_or_throw(std::string_view fallback, const IntList& sizes) {
  check_sizes_not_negative(fallback, sizes);
  std::optional<int64_t> n = checked_numel(sizes);
  if (!n)
    size_error(fallback, "shape " + shape_to_string(sizes) + " has more than " +
                             std::to_string(std::numeric_limits<int64_t>::max()) +
                             " elements: the element count overflows int64; use a smaller shape");
  return *n;
}

}  // namespace

int64_t numel_of(const IntList& sizes) {
  return checked_numel_or_throw("numel", sizes);
}

namespace {

// Writes the contiguous strides of `sizes` to `strides` when given; throws naming the shape when
// an inner stride overflows int64. check_shape runs it without a buffer (no allocation).
void fill_contiguous_strides(const IntList& sizes, int64_t* strides) {
  int64_t acc = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (strides) strides[d] = acc;
    std::optional<int64_t> next = checked_mul(acc, std::max<int64_t>(sizes[d], 1));
    // The outermost stride is never multiplied further, so only inner products must fit.
    if (!next && d > 0)
      size_error("contiguous_strides",
                 "shape " + shape_to_string(sizes) + " has a stride that overflows int64 at dim " +
                     std::to_string(d - 1) +
                     " (the product of the sizes after it, counting 0 as 1); use a smaller shape");
    acc = next.value_or(0);
  }
}

// check_shape's checks; returns the element count.
int64_t checked_shape_numel(const IntList& sizes, DType dtype) {
  const int64_t numel = checked_numel_or_throw("make_tensor", sizes);
  fill_contiguous_strides(sizes, nullptr);
  const int64_t item = static_cast<int64_t>(itemsize(dtype));
  if (!checked_mul(numel, item))
    size_error("make_tensor", "shape " + shape_to_string(sizes) + " has " + std::to_string(numel) +
                                  " elements of " + std::to_string(item) +
                                  " bytes: the byte size overflows int64; use a smaller shape");
  return numel;
}

}  // namespace

IntList contiguous_strides(const IntList& sizes) {
  IntList strides(sizes.size());
  fill_contiguous_strides(sizes, strides.data());
  return strides;
}

void check_shape(const IntList& sizes, DType dtype) {
  checked_shape_numel(sizes, dtype);
}

void check_view_geometry(const IntList& sizes, const IntList& strides, int64_t offset,
                         DType dtype) {
  checked_numel_or_throw("make_view", sizes);
  if (strides.size() != sizes.size())
    size_error("make_view", "a view of shape " + shape_to_string(sizes) + " was given " +
                                std::to_string(strides.size()) + " strides");
  auto describe = [&] {
    return "a view of shape " + shape_to_string(sizes) + ", strides " + shape_to_string(strides) +
           " and storage offset " + std::to_string(offset);
  };
  std::optional<ReachableOffsets> reach = checked_reachable_offsets(sizes, strides, offset);
  if (!reach)
    size_error("make_view",
               describe() + " reaches element offsets beyond int64; use smaller sizes or strides");
  const int64_t item = static_cast<int64_t>(itemsize(dtype));
  // One past the last byte must be addressable too.
  if (!checked_mul(reach->lo, item) || !checked_mul(reach->hi, item) ||
      !checked_add(reach->hi * item, item))
    size_error("make_view", describe() + " reaches element offset " + std::to_string(reach->hi) +
                                ", whose end in bytes ((offset + 1) x " + std::to_string(item) +
                                ") overflows int64; use smaller sizes or strides");
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* what) {
  int64_t n = std::max<int64_t>(ndim, 1);
  if (dim < -n || dim >= n)
    throw std::invalid_argument(std::string(what) + " " + std::to_string(dim) +
                                " is out of range for a tensor of " + std::to_string(ndim) +
                                " dims (expected [" + std::to_string(-n) + ", " +
                                std::to_string(n - 1) + "])");
  return dim < 0 ? dim + n : dim;
}

std::string shape_to_string(const IntList& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

bool is_dense(const IntList& sizes, const IntList& strides) {
  // Dims of size > 1 by stride, ties in order (an insertion sort in a stack array up to rank 8:
  // a compiled call asks this of each leaf's first gradient, and a vector plus stable_sort's
  // buffer were two allocations each time).
  constexpr size_t kInline = 8;
  std::array<size_t, kInline> inline_dims;
  std::vector<size_t> heap_dims;
  size_t* dims = inline_dims.data();
  if (sizes.size() > kInline) {
    heap_dims.resize(sizes.size());
    dims = heap_dims.data();
  }
  size_t n = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    size_t at = n++;
    for (; at > 0 && strides[dims[at - 1]] > strides[d]; --at) dims[at] = dims[at - 1];
    dims[at] = d;
  }
  int64_t expected = 1;
  for (size_t k = 0; k < n; ++k) {
    if (strides[dims[k]] != expected) return false;
    expected *= sizes[dims[k]];
  }
  return true;
}

bool expandable_to(const IntList& from, const IntList& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i) {
    int64_t f = from[from.size() - i], t = to[to.size() - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

IntList broadcast_shapes(const IntList& a, const IntList& b) {
  size_t n = std::max(a.size(), b.size());
  IntList out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (sa != sb && sa != 1 && sb != 1)
      throw std::invalid_argument("shapes " + shape_to_string(a) + " and " + shape_to_string(b) +
                                  " do not broadcast (dim " + std::to_string(i) + ": " +
                                  std::to_string(sa) + " vs " + std::to_string(sb) + ")");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

IntList broadcast_strides(const Tensor& t, const IntList& out_sizes) {
  IntList s(out_sizes.size(), 0);
  size_t lead = out_sizes.size() - static_cast<size_t>(t.dim());
  for (size_t i = 0; i < static_cast<size_t>(t.dim()); ++i)
    s[lead + i] = t.sizes()[i] == 1 && out_sizes[lead + i] != 1 ? 0 : t.strides()[i];
  return s;
}

// ---- TensorImpl ----

int64_t TensorImpl::numel() const { return numel_of(sizes); }

bool TensorImpl::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (sizes[d] == 0) return true;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

void* AutogradMeta::operator new(size_t nbytes) {
  return pool_allocate(nbytes);
}
void AutogradMeta::operator delete(void* p, size_t nbytes) noexcept {
  pool_deallocate(p, nbytes);
}

AutogradMeta& TensorImpl::autograd_meta() {
  if (!autograd) autograd = std::make_unique<AutogradMeta>();
  return *autograd;
}

char* TensorImpl::data_bytes() const {
  if (!storage || storage->is_fake()) return nullptr;
  return static_cast<char*>(storage->data()) + storage_offset * static_cast<int64_t>(itemsize(dtype));
}

namespace {

// make_tensor's checks and strides in one pass: writes the contiguous strides of `sizes` and
// returns the byte size, or -1 when a size is negative or a stride, the element count or the
// byte size overflows (checked_shape_numel then says which, or accepts an empty shape whose
// other sizes alone overflow).
int64_t contiguous_layout(const IntList& sizes, int64_t item, int64_t* strides) {
  int64_t stride = 1, numel = 1;
  bool ok = true;
  for (size_t d = sizes.size(); d-- > 0;) {
    const int64_t s = sizes[d];
    strides[d] = stride;
    ok &= s >= 0 && !__builtin_mul_overflow(numel, s, &numel);
    if (d > 0) ok &= !__builtin_mul_overflow(stride, std::max<int64_t>(s, 1), &stride);
  }
  int64_t nbytes = 0;
  ok &= !__builtin_mul_overflow(numel, item, &nbytes);
  return ok ? nbytes : -1;
}

}  // namespace

Tensor make_tensor(const IntList& sizes, DType dtype, bool fake) {
  auto impl = new_tensor_impl();
  impl->dtype = dtype;
  impl->sizes = sizes;
  impl->strides.resize(sizes.size());
  int64_t layout_bytes =
      contiguous_layout(sizes, static_cast<int64_t>(itemsize(dtype)), impl->strides.data());
  if (layout_bytes < 0) {
    const int64_t numel = checked_shape_numel(sizes, dtype);  // throws unless a size is 0
    fill_contiguous_strides(sizes, impl->strides.data());     // checked: cannot throw
    layout_bytes = numel * static_cast<int64_t>(itemsize(dtype));
  }
  const size_t nbytes = static_cast<size_t>(layout_bytes);
  try {
    impl->storage = std::allocate_shared<Storage>(PoolAllocator<Storage>(), nbytes, fake);
  } catch (const OutOfMemoryError& e) {
    // The allocator knows the op and the bytes; the shape is known here.
    throw OutOfMemoryError(out_of_memory_message(op_label("make_tensor"), nbytes,
                                                 " for the " + std::string(dtype_name(dtype)) +
                                                     shape_to_string(sizes) + " result"),
                           e.bytes());
  }
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, const IntList& sizes, const IntList& strides, int64_t offset) {
  check_view_geometry(sizes, strides, offset, base.dtype());
  auto impl = new_tensor_impl();
  impl->dtype = base.dtype();
  impl->sizes = sizes;
  impl->strides = strides;
  impl->storage_offset = offset;
  impl->storage = base.storage();
  impl->base = base.impl()->base ? base.impl()->base : base.impl_ptr();
  return Tensor(std::move(impl));
}

Tensor make_fake_strided(const IntList& sizes, const IntList& strides, int64_t offset,
                         DType dtype) {
  check_view_geometry(sizes, strides, offset, dtype);
  // The checks above guarantee both the reach and its byte size fit int64.
  ReachableOffsets reach = *checked_reachable_offsets(sizes, strides, offset);
  const int64_t elements = reach.empty ? offset : reach.hi + 1;
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = dtype;
  impl->sizes = sizes;
  impl->strides = strides;
  impl->storage_offset = offset;
  impl->storage = std::make_shared<Storage>(
      static_cast<size_t>(std::max<int64_t>(elements, 0)) * itemsize(dtype), /*fake=*/true);
  return Tensor(std::move(impl));
}

// ---- Tensor metadata ----

namespace {
const TensorImpl& need(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) throw std::invalid_argument("operation on an undefined Tensor");
  return *impl;
}
}  // namespace

DType Tensor::dtype() const { return need(impl_).dtype; }
const IntList& Tensor::sizes() const { return need(impl_).sizes; }
const IntList& Tensor::strides() const { return need(impl_).strides; }
int64_t Tensor::dim() const { return static_cast<int64_t>(sizes().size()); }
int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, dim())]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim())]; }
int64_t Tensor::numel() const { return need(impl_).numel(); }
int64_t Tensor::storage_offset() const { return need(impl_).storage_offset; }
bool Tensor::is_contiguous() const { return need(impl_).is_contiguous(); }
bool Tensor::is_fake() const { return need(impl_).storage && impl_->storage->is_fake(); }
const std::shared_ptr<Storage>& Tensor::storage() const { return need(impl_).storage; }
uint64_t Tensor::version() const { return storage()->version(); }
bool Tensor::is_view() const { return need(impl_).base != nullptr; }
Tensor Tensor::_base() const { return Tensor(need(impl_).base); }

template <typename T>
T* Tensor::data_ptr() const {
  const TensorImpl& i = need(impl_);
  if (i.dtype != dtype_of<T>())
    throw std::invalid_argument("data_ptr<" + std::string(dtype_name(dtype_of<T>())) +
                                "> on a tensor of dtype " + std::string(dtype_name(i.dtype)));
  if (is_fake())
    throw std::logic_error("data access on a fake tensor (tracing runs no kernels)");
  return reinterpret_cast<T*>(i.data_bytes());
}

namespace {

// The first `count` elements of `i` in logical order, converted to T. An expanded view can hold
// more elements than memory: the copy then fails with an OutOfMemoryError naming the tensor.
template <typename T>
std::vector<T> first_values(const TensorImpl& i, int64_t count) {
  std::vector<T> out;
  try {
    out.resize(static_cast<size_t>(count));
  } catch (const std::exception&) {  // std::bad_alloc, or std::length_error past max_size()
    const size_t bytes = saturating_mul(static_cast<size_t>(count), sizeof(T));
    throw OutOfMemoryError(
        out_of_memory_message(op_label("to_vector"), bytes,
                              " to copy the values of a " + std::string(dtype_name(i.dtype)) +
                                  shape_to_string(i.sizes) + " tensor"),
        bytes);
  }
  visit_dtype(i.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = reinterpret_cast<const S*>(i.data_bytes());
    NdCounter<1> it(i.sizes, {&i.strides}, {0});
    for (size_t k = 0; k < out.size(); ++k, it.next()) out[k] = convert<T>(src[it[0]]);
  });
  return out;
}

}  // namespace

template <typename T>
std::vector<T> Tensor::to_vector() const {
  const TensorImpl& i = need(impl_);
  if (is_fake()) throw std::logic_error("to_vector on a fake tensor (tracing runs no kernels)");
  return first_values<T>(i, i.numel());
}

template <typename T>
T Tensor::item() const {
  if (numel() != 1)
    throw std::invalid_argument("item() needs a one-element tensor, got shape " +
                                shape_to_string(sizes()));
  return to_vector<T>()[0];
}

#define AOTGRAD_INSTANTIATE(T)                       \
  template T* Tensor::data_ptr<T>() const;           \
  template std::vector<T> Tensor::to_vector<T>() const; \
  template T Tensor::item<T>() const;
AOTGRAD_INSTANTIATE(float)
AOTGRAD_INSTANTIATE(double)
AOTGRAD_INSTANTIATE(int64_t)
AOTGRAD_INSTANTIATE(bool)
AOTGRAD_INSTANTIATE(uint8_t)
AOTGRAD_INSTANTIATE(int32_t)
#undef AOTGRAD_INSTANTIATE
template Half* Tensor::data_ptr<Half>() const;
template BFloat16* Tensor::data_ptr<BFloat16>() const;

// ---- construction from std::vector ----

namespace {
template <typename T>
Tensor from_values(const T* values, size_t count, const IntList& sizes, DType dtype) {
  if (static_cast<int64_t>(count) != numel_of(sizes))
    throw std::invalid_argument("from_vector: " + std::to_string(count) +
                                " values do not fill shape " + shape_to_string(sizes));
  Tensor t = make_tensor(sizes, dtype);
  visit_dtype(dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    D* dst = reinterpret_cast<D*>(t.impl()->data_bytes());
    for (size_t k = 0; k < count; ++k) dst[k] = convert<D>(values[k]);
  });
  return t;
}
}  // namespace

Tensor from_vector(const std::vector<float>& v, const IntList& s) {
  return from_values(v.data(), v.size(), s, DType::f32);
}
Tensor from_vector(const std::vector<double>& v, const IntList& s) {
  return from_values(v.data(), v.size(), s, DType::f64);
}
Tensor from_vector(const std::vector<int64_t>& v, const IntList& s) {
  return from_values(v.data(), v.size(), s, DType::i64);
}
Tensor from_vector(const std::vector<bool>& v, const IntList& s) {
  std::vector<char> bytes(v.begin(), v.end());
  return from_values(bytes.data(), bytes.size(), s, DType::b8);
}

Tensor scalar_tensor(const Scalar& value, DType dtype) {
  Tensor t = make_tensor({}, dtype);
  visit_dtype(dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    D* dst = reinterpret_cast<D*>(t.impl()->data_bytes());
    if (value.is_floating()) *dst = convert<D>(value.to_double());
    else *dst = convert<D>(value.to_int());
  });
  return t;
}

// ---- printing ----

std::string Tensor::to_string() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  os << "tensor(";
  if (t.is_fake()) {
    os << "<fake>";
  } else {
    // Nested brackets, one level per dim; at most 64 values read and printed (an expanded view
    // may stand for more values than memory holds).
    const int64_t total = t.numel();
    std::vector<double> v = first_values<double>(*t.impl(), std::min<int64_t>(total, 64));
    const IntList& sizes = t.sizes();
    std::ostringstream body;
    body << std::setprecision(6);
    size_t shown = v.size();
    IntList idx(sizes.size(), 0);
    for (size_t k = 0; k < shown; ++k) {
      size_t opens = 0;
      for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0 && idx[d] == 0; --d) ++opens;
      if (k == 0) opens = sizes.size();
      for (size_t o = 0; o < opens; ++o) body << "[";
      body << v[k];
      size_t closes = 0;
      for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
        if (++idx[d] < sizes[d]) break;
        idx[d] = 0;
        ++closes;
      }
      for (size_t c = 0; c < closes; ++c) body << "]";
      if (k + 1 < shown) body << ", ";
    }
    if (static_cast<int64_t>(shown) < total) body << ", ...";
    if (total == 0) body << "[]";
    os << body.str();
  }
  os << ", shape=" << shape_to_string(t.sizes()) << ", dtype=" << dtype_name(t.dtype());
  if (t.requires_grad()) os << ", requires_grad=true";
  return os << ")";
}

}  // namespace aotgrad
