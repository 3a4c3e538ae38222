// Tensor, TensorImpl and Storage: the eager data model.
//
// Reading guide: a Tensor is a refcounted handle to a TensorImpl. A TensorImpl is a strided view
// (sizes, strides, storage_offset in elements) onto a refcounted Storage. Views share their base's
// Storage and remember the base (`_base()`); the version counter lives on the Storage, so a base
// and all its views see one counter, bumped by every in-place op. A "fake" Storage has a byte size
// but no memory: tracing runs on fake tensors so no kernel can touch data.
// Thread-safety: tensors are not synchronized: several threads may read one tensor, one thread at
// a time may write it. The version counter is atomic (threads may write disjoint views).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/dtype.h"
#include "aotgrad/scalar.h"
#include "aotgrad/torch/tensor_options.h"

namespace aotgrad {

using IntList = std::vector<int64_t>;

namespace autograd {
class Node;
}
template <typename T, size_t N>
class TensorAccessor;  // aotgrad/accessor.h

class Storage {
 public:
  // Allocates `nbytes` (64-byte aligned). A fake storage allocates nothing.
  Storage(size_t nbytes, bool fake);
  // Memory the caller owns (from_blob): nothing is allocated; `deleter`, when set, runs on `data`
  // when the last tensor sharing this storage dies.
  Storage(void* data, size_t nbytes, std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  bool is_fake() const { return fake_; }
  // Atomic: threads writing disjoint views of one storage bump the same counter.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  bool fake_ = false;
  bool external_ = false;
  std::function<void(void*)> deleter_;
  std::atomic<uint64_t> version_{0};
};

struct TensorImpl;
class TensorIndex;

// Which graph value a fake tensor stands for while a Trace interpreter is active.
struct TraceSlot {
  const void* owner = nullptr;  // the tracer that created the binding
  uint32_t value = 0;           // ValueId inside the owner's graph
  uint32_t alias = UINT32_MAX;  // the owner's functionalization record for this tensor, if any
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  DType dtype() const;
  const IntList& sizes() const;
  const IntList& strides() const;
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const;
  int64_t numel() const;
  int64_t storage_offset() const;
  bool is_contiguous() const;
  bool is_fake() const;
  const std::shared_ptr<Storage>& storage() const;
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  uint64_t version() const;

  // ---- LibTorch metadata spellings (torch/tensor_methods.cpp) ----
  DType scalar_type() const { return dtype(); }
  int64_t ndimension() const { return dim(); }
  int64_t element_size() const { return static_cast<int64_t>(itemsize(dtype())); }
  bool is_floating_point() const { return is_floating(dtype()); }
  Device device() const { return Device(DeviceType::CPU); }
  bool is_cpu() const { return true; }
  bool is_cuda() const { return false; }
  // dtype, device and requires_grad of this tensor.
  TensorOptions options() const;

  // ---- data ----
  template <typename T>
  T* data_ptr() const;
  // The value of a one-element tensor, converted to T.
  template <typename T>
  T item() const;
  // The value of a one-element tensor as a Scalar of its kind (bool, integral or floating).
  Scalar item() const;
  // Address of element 0 (nullptr for a fake tensor).
  void* data_ptr() const;
  // Copies the elements, in logical (row-major) order, converted to T.
  template <typename T>
  std::vector<T> to_vector() const;
  std::string to_string() const;
  // LibTorch's accessor<float, 2>(): a[i][j] reads and writes elements through the strides.
  // Defined in aotgrad/accessor.h (included by aotgrad.h and torch.h). Not on a temporary: the
  // accessor points into this tensor, which must outlive it.
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() const&;
  template <typename T, size_t N>
  TensorAccessor<T, N> accessor() && = delete;

  // ---- autograd ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool flag = true);
  Tensor grad() const;
  void set_grad(const Tensor& g) const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  bool is_leaf() const;
  bool is_view() const;
  Tensor _base() const;
  // Keeps the gradient of a non-leaf tensor in .grad() after backward().
  void retain_grad() const;
  // As autograd::backward({*this}, ...): retain_graph defaults to create_graph.
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  Tensor detach() const;

  // ---- ops as methods (same semantics as the free functions in ops.h) ----
  Tensor add(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& o) const;
  Tensor sub(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor mul(const Scalar& o) const;
  Tensor div(const Tensor& o) const;
  Tensor div(const Scalar& o) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor pow(const Scalar& exponent) const;
  Tensor eq(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor eq(const Scalar& o) const;
  Tensor gt(const Scalar& o) const;
  Tensor lt(const Scalar& o) const;
  Tensor sum() const;
  Tensor sum(const IntList& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const IntList& dims, bool keepdim = false) const;
  Tensor amax(const IntList& dims, bool keepdim = false) const;
  Tensor matmul(const Tensor& o) const;
  Tensor mm(const Tensor& o) const;
  Tensor clone() const;
  Tensor contiguous() const;
  Tensor to(DType dtype) const;
  // The CPU is the only device: to(kCPU) returns this tensor (or its cast), a CUDA device throws.
  Tensor to(Device device, std::optional<DType> dtype = std::nullopt) const;
  Tensor cpu() const { return *this; }
  Tensor type_as(const Tensor& other) const { return to(other.dtype()); }

  // ---- more ops as methods, LibTorch spellings (torch/tensor_methods.cpp) ----
  Tensor sum(int64_t dim, bool keepdim = false) const;
  Tensor mean(int64_t dim, bool keepdim = false) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor abs() const;
  Tensor ne(const Scalar& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor ge(const Scalar& o) const;
  Tensor le(const Scalar& o) const;
  // Index of the largest / smallest element (flattened, or along `dim`), i64.
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  // Vector p-norm over all elements, or over `dims` (floating tensors only).
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(const Scalar& p, int64_t dim, bool keepdim = false) const;
  Tensor norm(const Scalar& p, const IntList& dims, bool keepdim = false) const;
  // Whether every / any element is non-zero (b8; over `dim` when given).
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor softmax(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor view_as(const Tensor& other) const { return view(other.sizes()); }
  Tensor reshape_as(const Tensor& other) const { return reshape(other.sizes()); }
  // Drops every size-1 dim.
  Tensor squeeze() const;
  // views
  Tensor view(const IntList& sizes) const;
  Tensor reshape(const IntList& sizes) const;
  Tensor permute(const IntList& dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor expand(const IntList& sizes) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor as_strided(const IntList& sizes, const IntList& strides,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor alias() const;

  // ---- indexing, LibTorch spellings (torch/indexing.cpp; TensorIndex is in aotgrad/indexing.h)
  // t[i] is t.select(0, i); t[index_tensor] is t.index({index_tensor}).
  Tensor operator[](int64_t i) const { return select(0, i); }
  Tensor operator[](const Tensor& index) const;
  // Python's t[i0, i1, ...]: integers, Slice, None, Ellipsis, bool and index tensors.
  Tensor index(const std::vector<TensorIndex>& indices) const;
  // Python's t[i0, i1, ...] = values, in place.
  Tensor& index_put_(const std::vector<TensorIndex>& indices, const Tensor& values);
  Tensor& index_put_(const std::vector<TensorIndex>& indices, const Scalar& value);

  // in-place: return *this after bumping the version counter
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& o);
  Tensor& mul_(const Tensor& o);
  Tensor& mul_(const Scalar& o);
  Tensor& copy_(const Tensor& src);
  Tensor& zero_();
  Tensor& fill_(const Scalar& value);
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& sub_(const Scalar& o);
  Tensor& div_(const Tensor& o);
  Tensor& div_(const Scalar& o);
  // self = (self == other), in self's dtype.
  Tensor& eq_(const Tensor& o);
  Tensor& eq_(const Scalar& o);
  Tensor& uniform_(double from = 0.0, double to = 1.0);
  Tensor& normal_(double mean = 0.0, double std = 1.0);
  // Compound assignment: the in-place ops above, recorded by autograd as such.
  Tensor& operator+=(const Tensor& o) { return add_(o); }
  Tensor& operator+=(const Scalar& o) { return add_(o); }
  Tensor& operator-=(const Tensor& o) { return sub_(o); }
  Tensor& operator-=(const Scalar& o) { return sub_(o); }
  Tensor& operator*=(const Tensor& o) { return mul_(o); }
  Tensor& operator*=(const Scalar& o) { return mul_(o); }
  Tensor& operator/=(const Tensor& o) { return div_(o); }
  Tensor& operator/=(const Scalar& o) { return div_(o); }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// How a view was made, which decides whether it may be modified in place (PyTorch's
// CreationMeta): a view made under no_grad, or one of several views returned by one op (split,
// chunk, unbind), must not be written in place while autograd tracks it.
enum class ViewCreation : uint8_t { normal, no_grad_mode, multi_output };

// Everything autograd knows about one tensor. Absent (null) for tensors that never took part.
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;                   // which output of grad_fn this tensor is
  std::weak_ptr<autograd::Node> grad_accumulator;
  // Views only: how the view was made and the storage version then (a later write through any
  // alias makes a non-normal view unusable by autograd).
  ViewCreation view_creation = ViewCreation::normal;
  uint64_t view_creation_version = 0;

  // From a per-thread pool of small blocks: the autograd state of a call's outputs takes no
  // malloc.
  static void* operator new(size_t nbytes);
  static void operator delete(void* p, size_t nbytes) noexcept;
};

struct TensorImpl {
  DType dtype = DType::f32;
  IntList sizes;
  IntList strides;
  int64_t storage_offset = 0;
  std::shared_ptr<Storage> storage;
  std::shared_ptr<TensorImpl> base;  // set for views: the tensor whose storage this one views
  std::unique_ptr<AutogradMeta> autograd;
  TraceSlot trace;

  int64_t numel() const;
  bool is_contiguous() const;
  AutogradMeta& autograd_meta();  // creates it on first use
  // Byte address of element 0 of this view (nullptr for a fake tensor).
  char* data_bytes() const;
};

// Sizes, strides and byte sizes are int64 and never wrap: each function below throws
// std::invalid_argument naming the op being run (or the function) and the shape instead of
// returning a wrapped number, e.g. "aten.ones.default: shape [2147483648, 2147483648] has
// 4611686018427387904 elements of 4 bytes: the byte size overflows int64; use a smaller shape".

// The element count of `sizes`; throws when a size is negative or the count overflows.
int64_t numel_of(const IntList& sizes);
// Row-major strides for `sizes` (a size-0 or size-1 dim counts as 1); throws like numel_of, or
// when a stride overflows.
IntList contiguous_strides(const IntList& sizes);
// Throws unless a contiguous `dtype` tensor of `sizes` can exist: sizes >= 0, and its strides,
// element count and byte size fit int64.
void check_shape(const IntList& sizes, DType dtype);
// Throws unless a view (sizes, strides, storage offset, all in elements) of `dtype` elements can
// be addressed: sizes >= 0, its element count fits int64, and every element offset it reaches,
// and that offset in bytes, fits int64 (a view's storage may be tiny, as expand's is, while
// its geometry spans far).
void check_view_geometry(const IntList& sizes, const IntList& strides, int64_t offset, DType dtype);
// Wraps a possibly negative dim into [0, ndim); throws naming `what` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* what = "dim");
std::string shape_to_string(const IntList& sizes);

// A fresh, contiguous, uninitialised tensor (real or fake storage). Checks the shape
// (check_shape); an allocation the system refuses throws OutOfMemoryError (aotgrad/memory.h)
// naming the op, the bytes and the shape.
Tensor make_tensor(const IntList& sizes, DType dtype, bool fake = false);
// A tensor sharing `base`'s storage with new geometry; records `base` (or base's own base) as
// _base. Checks the geometry (check_view_geometry), not that it stays inside the storage.
Tensor make_view(const Tensor& base, const IntList& sizes, const IntList& strides, int64_t offset);

// A fake tensor (no memory) with exactly this geometry, over a fake storage just large enough for
// every element it reaches, so view metas that check bounds against the storage accept it.
// Checks the geometry (check_view_geometry), so even an expanded view of 2^62 elements works.
Tensor make_fake_strided(const IntList& sizes, const IntList& strides, int64_t offset, DType dtype);

// ---- construction from and export to std::vector ----
Tensor from_vector(const std::vector<float>& values, const IntList& sizes);
Tensor from_vector(const std::vector<double>& values, const IntList& sizes);
Tensor from_vector(const std::vector<int64_t>& values, const IntList& sizes);
Tensor from_vector(const std::vector<bool>& values, const IntList& sizes);
Tensor scalar_tensor(const Scalar& value, DType dtype);

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace aotgrad
