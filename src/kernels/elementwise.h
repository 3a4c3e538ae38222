// The elementwise engine behind every pointwise kernel: out[i] = op(in0[i], in1[i], ...).
//
// Reading guide: the output is a fresh contiguous tensor; each input is a strided tensor broadcast
// to the output shape (stride 0 on broadcast dims) or a Scalar. The index space [0, numel) is cut
// into blocks of kBlock elements, split across OpenMP threads. For each block every input yields
// a contiguous array of its compute type:
//   - "direct": already contiguous over the whole output and of the compute type -> no copy;
//   - "constant": a Scalar, or a tensor whose strides are all 0 -> a buffer filled once;
//   - otherwise a Reader gathers the block, converting from the stored dtype as it reads.
// Then one tight loop applies `op` to the arrays (vectorised by `omp simd`), or run_vec calls a
// runtime-dispatched vector kernel (kernels/vec/vec.h) on them: the floating ops whose element
// math is a transcendental or must vectorize on AVX2/AVX-512 take that path. This keeps the
// instantiations per op to one loop per compute type; the dtype conversions live in the Readers,
// shared by every op. Dims are coalesced per input, so a transposed or sliced view gathers in
// long strided runs rather than element by element.
// Thread-safety: each call is independent; the threads of one call share nothing writable.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "aotgrad/tensor.h"
#include "kernels/parallel.h"
#include "kernels/vec/vec.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"

namespace aotgrad::kernels::elementwise {

constexpr int64_t kBlock = 512;
constexpr int64_t kParallelGrain = 32768;

// A kernel input: a tensor (broadcast to the output shape) or a number.
using Input = std::variant<Tensor, Scalar>;

// One input, with dims coalesced against the output shape. An empty `sizes` means constant.
struct Strided {
  const char* data = nullptr;
  DType dtype = DType::f32;
  IntList sizes;    // innermost last; size-1 dims dropped, mergeable neighbours merged
  IntList strides;  // in elements
};

// Coalesces `t` read as if broadcast to `out_sizes`.
Strided coalesce(const Tensor& t, const IntList& out_sizes);

// Sequentially reads one Strided input, converting to T, starting at a linear output index.
template <typename T>
class Reader {
 public:
  Reader(const Strided& in, int64_t start) : in_(in), index_(in.sizes.size(), 0) {
    // Seek: split `start` into the multi-index of the coalesced shape.
    int64_t ndim = static_cast<int64_t>(in.sizes.size());
    for (int64_t d = ndim - 1; d >= 0; --d) {
      index_[d] = start % in.sizes[d];
      start /= in.sizes[d];
      if (d < ndim - 1) offset_ += index_[d] * in.strides[d];
    }
    inner_ = index_.back();
  }

  void read(T* dst, int64_t len) {
    visit_dtype(in_.dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* src = reinterpret_cast<const S*>(in_.data);
      const int64_t n0 = in_.sizes.back(), s0 = in_.strides.back();
      while (len > 0) {
        int64_t m = std::min(len, n0 - inner_);
        const S* p = src + offset_ + inner_ * s0;
        if (s0 == 1) {
          for (int64_t j = 0; j < m; ++j) dst[j] = convert<T>(p[j]);
        } else {
          for (int64_t j = 0; j < m; ++j) dst[j] = convert<T>(p[j * s0]);
        }
        dst += m;
        len -= m;
        inner_ += m;
        if (inner_ == n0) {
          inner_ = 0;
          step_outer();
        }
      }
    });
  }

 private:
  void step_outer() {
    for (int64_t d = static_cast<int64_t>(index_.size()) - 2; d >= 0; --d) {
      offset_ += in_.strides[d];
      if (++index_[d] < in_.sizes[d]) return;
      offset_ -= index_[d] * in_.strides[d];
      index_[d] = 0;
    }
  }

  const Strided& in_;
  IntList index_;
  int64_t inner_ = 0;
  int64_t offset_ = 0;  // of element (index_[0..n-2], 0)
};

// Writes `len` values of type R to `dst` of dtype `d` (the f16/bf16 outputs of float compute).
template <typename R>
void store_converted(const R* src, DType d, char* dst, int64_t len) {
  visit_dtype(d, [&](auto tag) {
    using D = typename decltype(tag)::type;
    D* out = reinterpret_cast<D*>(dst);
    for (int64_t j = 0; j < len; ++j) out[j] = convert<D>(src[j]);
  });
}

template <typename R, typename Op, typename... Ts>
void apply_block(R* __restrict out, int64_t len, const Op& op, const Ts* __restrict... in) {
#pragma omp simd
  for (int64_t j = 0; j < len; ++j) out[j] = op(in[j]...);
}

// A Scalar in compute type T; integers stay exact (no trip through double).
template <typename T>
T scalar_as(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool>)
    return s.to_bool();
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(s.to_int());
  else
    return convert<T>(s.to_double());
}

// How one input feeds the blocks of one thread.
template <typename T>
struct Feed {
  enum class Kind : uint8_t { direct, constant, gathered } kind;
  const T* base = nullptr;  // direct: element 0; constant: the filled buffer
  std::array<T, kBlock> buf;
};

template <typename T>
void init_feed(Feed<T>& f, const Input& in, const Strided& s, int64_t numel) {
  if (const Scalar* sc = std::get_if<Scalar>(&in)) {
    f.kind = Feed<T>::Kind::constant;
    f.buf.fill(scalar_as<T>(*sc));
  } else if (s.sizes.empty()) {
    f.kind = Feed<T>::Kind::constant;
    visit_dtype(s.dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      f.buf.fill(convert<T>(*reinterpret_cast<const S*>(s.data)));
    });
  } else if (s.dtype == dtype_of<T>() && s.sizes.size() == 1 && s.strides[0] == 1 &&
             s.sizes[0] == numel) {
    f.kind = Feed<T>::Kind::direct;
  } else {
    f.kind = Feed<T>::Kind::gathered;
  }
  f.base = f.kind == Feed<T>::Kind::direct ? reinterpret_cast<const T*>(s.data) : f.buf.data();
}

// Fills `out` (fresh, contiguous) block by block: block_op(dst, len, in0, in1, ...) writes len
// results of type R to dst from contiguous arrays in_k of the matching T in Ts, each input
// converted as it is read; the results are stored into out's dtype.
template <typename R, typename... Ts, typename BlockOp>
void run_blocks(const Tensor& out, const std::array<Input, sizeof...(Ts)>& ins,
                const BlockOp& block_op) {
  constexpr size_t N = sizeof...(Ts);
  const int64_t n = out.numel();
  if (n == 0) return;
  std::array<Strided, N> strided;
  for (size_t k = 0; k < N; ++k)
    if (const Tensor* t = std::get_if<Tensor>(&ins[k])) strided[k] = coalesce(*t, out.sizes());
  char* out_bytes = out.impl()->data_bytes();
  const bool out_direct = out.dtype() == dtype_of<R>();
  const int64_t blocks = (n + kBlock - 1) / kBlock;

  parallel_or_inline(n > kParallelGrain, [&](int tid, int nt) {
    const int64_t b0 = part_begin(blocks, tid, nt), b1 = part_begin(blocks, tid + 1, nt);
    if (b0 < b1) {
      std::tuple<Feed<Ts>...> feeds;
      [&]<size_t... I>(std::index_sequence<I...>) {
        (init_feed(std::get<I>(feeds), ins[I], strided[I], n), ...);
        std::tuple<std::optional<Reader<Ts>>...> readers;
        ((std::get<I>(feeds).kind == Feed<Ts>::Kind::gathered
              ? (void)std::get<I>(readers).emplace(strided[I], b0 * kBlock)
              : (void)0),
         ...);
        std::array<R, kBlock> out_buf;
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t start = b * kBlock, len = std::min(kBlock, n - start);
          auto ptr = [&](auto& feed, auto& reader) {
            using F = std::remove_reference_t<decltype(feed)>;
            if (feed.kind == F::Kind::direct) return feed.base + start;
            if (feed.kind == F::Kind::gathered) reader->read(feed.buf.data(), len);
            return static_cast<decltype(feed.base)>(feed.buf.data());
          };
          R* dst = out_direct ? reinterpret_cast<R*>(out_bytes) + start : out_buf.data();
          block_op(dst, len, ptr(std::get<I>(feeds), std::get<I>(readers))...);
          if (!out_direct)
            store_converted(out_buf.data(), out.dtype(),
                            out_bytes + start * static_cast<int64_t>(itemsize(out.dtype())), len);
        }
      }
      (std::make_index_sequence<N>{});
    }
  });
}

// out[i] = op(ins[0][i], ins[1][i], ...) for every i of `out` (fresh, contiguous). Each input is
// converted to the matching T in Ts as it is read; op returns R, stored into out's dtype.
template <typename R, typename... Ts, typename Op>
void run(const Tensor& out, const std::array<Input, sizeof...(Ts)>& ins, const Op& op) {
  run_blocks<R, Ts...>(
      out, ins, [&op](R* dst, int64_t len, const Ts*... in) { apply_block(dst, len, op, in...); });
}

// out = f(a) through a vector kernel of kernels/vec (one call per block of contiguous values).
template <typename T>
void run_vec(const Tensor& out, const Input& a, vec::UnaryKernel<T> kernel, T p = T(0)) {
  run_blocks<T, T>(out, {a},
                   [kernel, p](T* dst, int64_t len, const T* x) { kernel(x, dst, len, p); });
}

// out = f(a, b) through a vector kernel of kernels/vec.
template <typename T>
void run_vec(const Tensor& out, const Input& a, const Input& b, vec::BinaryKernel<T> kernel,
             T p = T(0)) {
  run_blocks<T, T, T>(out, {a, b}, [kernel, p](T* dst, int64_t len, const T* x, const T* y) {
    kernel(x, y, dst, len, p);
  });
}

}  // namespace aotgrad::kernels::elementwise
