// Writing a strided window of a contiguous tensor: the kernels behind select_backward,
// slice_backward and as_strided_scatter (the functional adjoints of select, slice, as_strided).
#pragma once

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// True when no two in-bounds indices of (sizes, strides) reach the same element. Conservative in
// the way that matters here: it may say "overlaps" for an exotic non-overlapping layout, which
// only costs the slower serial path, never a wrong answer.
bool is_non_overlapping(const IntList& sizes, const IntList& strides);

// Writes `src` into the window (src.sizes(), strides, offset) of the storage of `out`, which must
// be a fresh contiguous tensor at storage offset 0 that holds the whole window (callers check).
// Every element the window reaches once becomes the src element there (converted to out's dtype);
// an element the window reaches several times becomes the *sum* of those src elements. That makes
// the scatter the exact adjoint of an overlapping as_strided view, which is what its VJP needs;
// for a non-overlapping window it is a plain copy.
void scatter_window(const Tensor& out, const Tensor& src, const IntList& strides, int64_t offset);

}  // namespace aotgrad::kernels
