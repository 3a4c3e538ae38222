// Reading guide: each input lands in the window of `out` it fills along `dim`. Three paths, by
// what the input looks like:
//   - contiguous, out's dtype: out is [outer, dim, inner] and the input one run of len * inner
//     elements per outer index, so each run is a memcpy;
//   - strided, out's dtype: one innermost row at a time (a strided read, a contiguous write);
//   - another dtype: converted first by the elementwise engine into a contiguous temporary,
//     which then takes the memcpy path.
#include "kernels/joining.h"

#include <cstring>

#include "kernels/arith.h"
#include "kernels/elementwise.h"
#include "kernels/indexing.h"
#include "kernels/parallel.h"
#include "tensor/iter.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kGrain = 32768;

// A contiguous copy of `in` converted to `dtype`.
Tensor converted(const Tensor& in, DType dtype) {
  Tensor tmp = make_tensor(in.sizes(), dtype);
  visit_compute(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise::run<T, T>(tmp, {in}, [](T x) -> T { return x; });
  });
  return tmp;
}

// Copies contiguous `in` (out's dtype) into out at `offset` along dim.
void copy_runs(const Tensor& out, const Tensor& in, int64_t outer, int64_t inner, int64_t dim,
               int64_t offset) {
  const int64_t item = static_cast<int64_t>(itemsize(out.dtype()));
  const int64_t run = in.sizes()[dim] * inner, out_row = out.sizes()[dim] * inner;
  const char* src = in.impl()->data_bytes();
  char* dst = out.impl()->data_bytes() + offset * inner * item;
#pragma omp parallel for if (outer > 1 && in.numel() > kGrain)
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * out_row * item, src + o * run * item, static_cast<size_t>(run * item));
}

// Copies strided `in` (out's dtype) into out at `offset` along dim, row by innermost row.
void copy_rows(const Tensor& out, const Tensor& in, int64_t dim, int64_t offset) {
  const IntList& sizes = in.sizes();
  const IntList row_sizes(sizes.begin(), sizes.end() - 1);
  const IntList out_strides(out.strides().begin(), out.strides().end() - 1);
  const IntList in_strides(in.strides().begin(), in.strides().end() - 1);
  const int64_t inner = sizes.back(), si = in.strides().back(), so = out.strides().back();
  const int64_t rows = in.numel() / inner, base = offset * out.strides()[dim];
  visit_bits(out.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = reinterpret_cast<const U*>(in.impl()->data_bytes());
    U* dst = reinterpret_cast<U*>(out.impl()->data_bytes());
#pragma omp parallel if (in.numel() > kGrain)
    {
      const int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
      const int64_t begin = part_begin(rows, tid, nt), end = part_begin(rows, tid + 1, nt);
      if (begin < end) {
        NdCounter<2> it(row_sizes, {&out_strides, &in_strides}, {base, 0});
        it.seek(begin);
        for (int64_t r = begin; r < end; ++r, it.next()) {
          U* d = dst + it[0];
          const U* s = src + it[1];
          for (int64_t k = 0; k < inner; ++k) d[k * so] = s[k * si];
        }
      }
    }
  });
}

}  // namespace

void cat_into(const Tensor& out, std::span<const Tensor> inputs, int64_t dim) {
  const IntList& sizes = out.sizes();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= sizes[d];
  for (size_t d = static_cast<size_t>(dim) + 1; d < sizes.size(); ++d) inner *= sizes[d];
  int64_t offset = 0;  // along dim
  for (const Tensor& in : inputs) {
    if (in.dim() != out.dim()) continue;  // legacy empty [0]: the meta function checked
    const int64_t len = in.sizes()[dim];
    if (in.numel() > 0) {
      if (in.dtype() != out.dtype())
        copy_runs(out, converted(in, out.dtype()), outer, inner, dim, offset);
      else if (in.is_contiguous())
        copy_runs(out, in, outer, inner, dim, offset);
      else
        copy_rows(out, in, dim, offset);
    }
    offset += len;
  }
}

}  // namespace aotgrad::kernels
