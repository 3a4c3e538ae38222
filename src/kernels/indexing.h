// Eager CPU kernels of the indexing family: gathers and scatters along one dim through an i64
// index tensor, embedding lookups and their backward, masked_fill, tril / triu.
//
// Shapes and dtypes are validated by the rows' meta functions; these kernels trust them. What
// metadata cannot tell is whether the index *values* are in range: every kernel that reads an
// index tensor checks all of them first and throws std::invalid_argument naming `op`, the bad
// index, the dim and the valid range, before it writes anything. Inputs may have any strides;
// results are fresh and contiguous. A 0-dim self (or index) behaves as a 1-element 1-D tensor,
// as in ATen.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "aotgrad/tensor.h"
#include "tensor/dtype_dispatch.h"

namespace aotgrad::kernels {

// Calls f(TypeTag<U>) with an unsigned integer type as wide as one element of `dtype`: kernels
// that only move elements need one instantiation per width, not per dtype.
template <typename F>
void visit_bits(DType dtype, F&& f) {
  switch (itemsize(dtype)) {
    case 1:
      return f(TypeTag<uint8_t>{});
    case 2:
      return f(TypeTag<uint16_t>{});
    case 4:
      return f(TypeTag<uint32_t>{});
    case 8:
      return f(TypeTag<uint64_t>{});
    default:
      throw std::logic_error("visit_bits: unexpected element size");
  }
}

// out = self with dim replaced by the index.numel() entries self[..., index[j], ...]; index 0-D
// or 1-D. Result dtype: self's.
Tensor index_select(std::string_view op, const Tensor& self, int64_t dim, const Tensor& index);

// out[i] = self[i with i[dim] replaced by index[i]]; out has index's shape and self's dtype.
Tensor gather(std::string_view op, const Tensor& self, int64_t dim, const Tensor& index);

// out = self, then out[i with i[dim] replaced by index[i]] += src[i] for every i of index's shape.
// src has self's dtype.
Tensor scatter_add(std::string_view op, const Tensor& self, int64_t dim, const Tensor& index,
                   const Tensor& src);

// out = self, then out[..., index[j], ...] += alpha * source[..., j, ...] along dim (index 0-D or
// 1-D, source of self's dtype).
Tensor index_add(std::string_view op, const Tensor& self, int64_t dim, const Tensor& index,
                 const Tensor& source, const Scalar& alpha);

// weight.index_select(0, indices.flatten()) shaped indices.sizes() + [weight.size(1)].
Tensor embedding(std::string_view op, const Tensor& weight, const Tensor& indices);

// out[w, :] = sum over the positions p with indices[p] == w of grad[p, :] (grad viewed as
// [indices.numel(), D]); rows of padding_idx (when >= 0) stay zero; with scale_grad_by_freq each
// term is divided by how often its index occurs in `indices`. out is [num_weights, D].
Tensor embedding_dense_backward(std::string_view op, const Tensor& grad, const Tensor& indices,
                                int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq);

// out = mask ? value : self, broadcast to the shape of both; self's dtype. `value` is a Scalar or
// a 0-dim tensor (converted to self's dtype).
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value);

// self with the elements above (lower = true: tril) or below (triu) the diagonal-th diagonal of
// each matrix (the last two dims) set to zero.
Tensor tril_triu(const Tensor& self, int64_t diagonal, bool lower);

}  // namespace aotgrad::kernels
