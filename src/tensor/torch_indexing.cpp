// LibTorch's indexing API: Tensor::index({...}), index_put_({...}, v) and t[index_tensor].
//
// apply_basic() walks the entries left to right like Python's t[...]: integers select (the dim
// goes away), slices narrow, None inserts a size-1 dim, Ellipsis skips the dims the other entries
// leave; index tensors are set aside, one slot per dim of the view they index, for one advanced
// index()/index_put_() afterwards. Everything is made of view ops and index/index_put, so
// autograd and tracing see those ops.
#include <stdexcept>
#include <string>

#include "aotgrad/indexing.h"
#include "aotgrad/ops.h"

namespace aotgrad {

TensorIndex::TensorIndex(const char* text) : kind_(Kind::ellipsis) {
  if (text == nullptr || std::string_view(text) != "...")
    throw std::invalid_argument("TensorIndex: the only string index is \"...\" (Ellipsis)");
}

namespace {

struct BasicResult {
  Tensor view;                   // self after integers, slices, None and Ellipsis
  std::vector<Tensor> advanced;  // per dim of `view`: an index tensor or undefined (whole dim)
};

// A mask index (b8, or u8: PyTorch's byte mask) consumes as many dims as it has.
bool is_mask(const Tensor& t) {
  return t.dtype() == DType::b8 || t.dtype() == DType::u8;
}

// How many dims of self the entries consume (None and Ellipsis consume none; a mask its rank).
int64_t consumed_dims(const std::vector<TensorIndex>& indices) {
  int64_t n = 0;
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case TensorIndex::Kind::integer:
      case TensorIndex::Kind::slice:
        ++n;
        break;
      case TensorIndex::Kind::tensor:
        n += is_mask(i.tensor()) ? i.tensor().dim() : 1;
        break;
      default:
        break;
    }
  }
  return n;
}

// Python's slice semantics for one dim of size n: clamp start and stop into [0, n].
Tensor apply_slice(const Tensor& t, int64_t dim, const indexing::Slice& s) {
  const int64_t step = s.step().value_or(1);
  if (step <= 0)
    throw std::invalid_argument("index: slice step must be positive, got " + std::to_string(step));
  const int64_t n = t.size(dim);
  auto clamp = [n](int64_t v) {
    if (v < 0) v += n;
    return v < 0 ? 0 : v > n ? n : v;
  };
  const int64_t start = s.start() ? clamp(*s.start()) : 0;
  const int64_t stop = s.stop() ? clamp(*s.stop()) : n;
  return slice(t, dim, start, stop < start ? start : stop, step);
}

BasicResult apply_basic(const Tensor& self, const std::vector<TensorIndex>& indices) {
  const int64_t consumed = consumed_dims(indices);
  if (consumed > self.dim())
    throw std::invalid_argument("index: too many indices for a tensor of dimension " +
                                std::to_string(self.dim()) + " (got " + std::to_string(consumed) +
                                ")");
  BasicResult r{self, {}};
  int64_t dim = 0;  // the dim of r.view the next entry applies to
  bool seen_ellipsis = false;
  int64_t covered = 0;  // dims of r.view that the entries of r.advanced cover
  auto pad_advanced = [&](int64_t upto) {
    for (; covered < upto; ++covered) r.advanced.emplace_back();
  };
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case TensorIndex::Kind::integer:
        r.view = select(r.view, dim, i.integer());
        break;
      case TensorIndex::Kind::slice:
        r.view = apply_slice(r.view, dim, i.slice());
        ++dim;
        break;
      case TensorIndex::Kind::none:
        r.view = unsqueeze(r.view, dim);
        ++dim;
        break;
      case TensorIndex::Kind::boolean:
        // t[True] adds a size-1 dim; t[False] adds a size-0 one.
        r.view = unsqueeze(r.view, dim);
        if (!i.boolean()) r.view = slice(r.view, dim, 0, 0);
        ++dim;
        break;
      case TensorIndex::Kind::ellipsis:
        if (seen_ellipsis)
          throw std::invalid_argument("index: an index can only have a single ellipsis");
        seen_ellipsis = true;
        dim += self.dim() - consumed;
        break;
      case TensorIndex::Kind::tensor: {
        const Tensor& t = i.tensor();
        if (!t.defined()) throw std::invalid_argument("index: an index tensor is undefined");
        pad_advanced(dim);
        r.advanced.push_back(t);
        // A mask covers as many dims as it has with one entry, as index() reads it.
        const int64_t width = is_mask(t) ? t.dim() : 1;
        dim += width;
        covered += width;
        break;
      }
    }
  }
  return r;
}

}  // namespace

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  BasicResult r = apply_basic(*this, indices);
  if (r.advanced.empty()) return r.view;
  return aotgrad::index(r.view, r.advanced);
}

Tensor Tensor::operator[](const Tensor& index) const {
  return this->index({index});
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& values) {
  BasicResult r = apply_basic(*this, indices);
  if (r.advanced.empty()) {
    aotgrad::copy_(r.view, values);
  } else {
    aotgrad::index_put_(r.view, r.advanced, values);
  }
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Scalar& value) {
  return index_put_(indices, scalar_tensor(value, dtype()));
}

}  // namespace aotgrad
