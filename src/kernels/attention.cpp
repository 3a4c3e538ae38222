// Masked attention kernels (kernels/attention.h). Reading guide: Operand finds where each batch
// entry of an operand starts and its row stride (copying only an operand whose rows are not
// unit-stride); attend_forward / attend_backward do one batch entry; the two entry points run
// them over the batch, in parallel when the batch has at least one entry per thread (each call
// to oneDNN's sgemm then runs on its own thread), else one entry at a time with sgemm's own
// threads. Tiling finds, from the mask, the [T, S] blocks that have something to compute, so that
// a causal mask's upper triangle is neither multiplied nor exponentiated.
#include "kernels/attention.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/attention_gemm.h"
#include "kernels/data.h"
#include "kernels/vec/rows.h"

namespace aotgrad::kernels {
namespace {

// An operand [*, rows, cols] seen as `batch` matrices: entry n starts at offset[n] (elements)
// and its rows are `ld` apart, columns unit-stride.
template <typename T>
struct Operand {
  Tensor held;  // the contiguous copy, when the rows were not unit-stride
  const T* data = nullptr;
  std::vector<int64_t> offset;
  int64_t ld = 1;
};

// Offsets of each batch entry of `t` (its leading dims, all but the last two).
std::vector<int64_t> batch_offsets(const Tensor& t) {
  const int64_t dims = t.dim() - 2;
  int64_t batch = 1;
  for (int64_t d = 0; d < dims; ++d) batch *= t.size(d);
  std::vector<int64_t> offsets(static_cast<size_t>(batch));
  for (int64_t n = 0; n < batch; ++n) {
    int64_t rest = n, off = 0;
    for (int64_t d = dims - 1; d >= 0; --d) {
      off += (rest % t.size(d)) * t.stride(d);
      rest /= t.size(d);
    }
    offsets[static_cast<size_t>(n)] = off;
  }
  return offsets;
}

template <typename T>
Operand<T> operand(const Tensor& t) {
  Operand<T> o;
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const bool direct = (cols <= 1 || t.stride(-1) == 1) && (rows <= 1 || t.stride(-2) >= cols);
  o.held = direct ? t : t.contiguous();
  o.data = data_of<const T>(o.held);
  o.offset = batch_offsets(o.held);
  o.ld = std::max<int64_t>({1, cols, rows > 1 ? o.held.stride(-2) : 1});
  return o;
}

// Where a result [*, rows, cols] is written: entry n starts at offset[n], rows `ld` apart, columns
// unit-stride (a contiguous result, or a view of a caller's buffer: kernels/attention.h).
template <typename T>
struct Dest {
  T* data = nullptr;
  std::vector<int64_t> offset;
  int64_t ld = 1;
  T* at(int64_t n) const { return data + offset[static_cast<size_t>(n)]; }
};

template <typename T>
Dest<T> dest_of(Tensor& t) {
  return {data_of<T>(t), batch_offsets(t), std::max<int64_t>({1, t.size(-1), t.stride(-2)})};
}

// Row-major C[M, N] = op(A) @ op(B), op(X) = X or X^T as `ta` / `tb` say ('N' / 'T').
template <typename T>
void product(char ta, char tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
             int64_t ldb, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc) != dnnl_success)
      throw std::runtime_error("masked_attention: oneDNN sgemm rejected a [" + std::to_string(m) +
                               ", " + std::to_string(k) + "] x [" + std::to_string(k) + ", " +
                               std::to_string(n) + "] product");
  } else {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += (ta == 'N' ? a[i * lda + p] : a[p * lda + i]) *
                 (tb == 'N' ? b[p * ldb + j] : b[j * ldb + p]);
        c[i * ldc + j] = acc;
      }
  }
}

// C[M, N] = A[M, K] @ B[K, N], A's element (i, p) at a[i * a_row + p * a_col]: one strip of the
// tiled path (f32: kernels/attention_gemm.h; other dtypes: a plain loop nest).
template <typename T>
void strip_product(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col,
                   const T* b, int64_t ldb, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    strip_gemm(m, n, k, a, a_row, a_col, b, ldb, c, ldc);
  } else {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += a[i * a_row + p * a_col] * b[p * ldb + j];
        c[i * ldc + j] = acc;
      }
  }
}

// y = softmax(x) over n >= 1 elements, as kernels::softmax computes it.
template <typename T>
void softmax_row(const T* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    vec::row_kernels().softmax(x, y, n, false);
  } else {
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += (y[i] = std::exp(x[i] - mx));
    const T inv = static_cast<T>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

// r = y * (g - sum(g * y)), as kernels::softmax_backward computes it.
template <typename T>
void softmax_backward_row(const T* g, const T* y, T* r, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    vec::row_kernels().softmax_backward(g, y, r, n, false);
  } else {
    double acc = 0;
    for (int64_t i = 0; i < n; ++i) acc += double(g[i]) * double(y[i]);
    const T dot = static_cast<T>(acc);
    for (int64_t i = 0; i < n; ++i) r[i] = y[i] * (g[i] - dot);
  }
}

// The mask of one batch entry: element (i, j) at data[i * si + j * sj] (null: no mask).
struct MaskView {
  const bool* data = nullptr;
  int64_t si = 0, sj = 0;
  bool at(int64_t i, int64_t j) const { return data && data[i * si + j * sj]; }
  // The same mask seen from column `j` on.
  MaskView from_column(int64_t j) const { return {data ? data + j * sj : nullptr, si, sj}; }
};

// row[j] = mask(i, j) ? fill : row[j] * scale over one row of n.
template <typename T>
void scale_or_fill(T* row, const MaskView& mask, int64_t i, T scale, T fill, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (mask.data && mask.sj == 1)
      return vec::row_kernels().scale_or_fill(row, mask.data + i * mask.si, scale, fill, n);
  }
  if (!mask.data) {
    for (int64_t j = 0; j < n; ++j) row[j] *= scale;
    return;
  }
  for (int64_t j = 0; j < n; ++j) row[j] = mask.at(i, j) ? fill : row[j] * scale;
}

// Masked-out scores cost nothing: a row block's products cover only the keys some row of the block
// may attend, a key block's only the queries that may attend it (a causal mask: up to half the
// work). The skipped entries are those the composite fills with -inf; their weights are exactly 0
// and their score gradients masked_fill's 0 (times the scale), so leaving them out changes no
// value as long as 0 times every skipped operand is 0: the tiled path is taken only for finite
// operands and scale, and the backward falls back to the whole block when a row's weights are NaN
// (a fully masked row, or an overflowing score), whose NaN the composite spreads to every key.

// The side of a block (the oneDNN products' rows): half the query rows, a multiple of 16 within
// [64, 128]; no tiling below kMinTiledRows rows. Measured with `attention_bench` (2 threads,
// causal), when every product went to oneDNN by block: at T = 128, blocks of 32 and 64 alike,
// 8-9% faster than none; at T = 256 to 1024 blocks of 128 fastest (64 loses to the smaller
// products' lower rate, 256 skips less). With the strips (kStrip, strip_product) T = 64 gains
// too: one block of 64, strips of 16, forward 0.83x and backward 0.88-0.92x the untiled time (one
// thread, direct calls, alternating); two blocks of 32 had run 2-3% slower than none.
constexpr int64_t kMinTiledRows = 64;
// Nor above 2^28 scores per batch entry (1 GiB of f32 weights): reading such a mask would take
// seconds before the scratch's allocation could fail.
constexpr int64_t kMaxTiledScores = int64_t{1} << 28;
int64_t tile_side(int64_t t) {
  return std::clamp<int64_t>(t / 2 / 16 * 16, 64, 128);
}
// The side of a strip: the products that are not oneDNN's (strip_product) follow the mask at this
// step. A multiple of 16 dividing every tile_side.
constexpr int64_t kStrip = 16;

struct Span {
  int64_t lo = 0, hi = 0;
  int64_t size() const { return hi - lo; }
};

// Where one batch entry's unmasked scores lie, at two sizes. The strips of kStrip rows [r * kStrip,
// ...) attend only keys within keys[r] (never empty: a strip whose every row is masked keeps all
// keys, so its rows come out NaN as in the composite); the strips of keys [c * kStrip, ...) are
// attended only by queries within queries[c] (empty when no query attends them). The blocks of
// `tile` rows, for the products that go to oneDNN, attend block_keys[b]: their strips' spans
// together.
struct Tiling {
  int64_t tile = 0;
  std::vector<Span> keys;
  std::vector<Span> queries;
  std::vector<Span> block_keys;
};

// Calls f(i0, i1, keys) for each block of `tile` rows [i0, i1) of a [t, *] entry and its keys.
template <typename F>
void over_row_blocks(const Tiling& tl, int64_t t, const F& f) {
  for (int64_t r = 0; r * tl.tile < t; ++r)
    f(r * tl.tile, std::min(t, (r + 1) * tl.tile), tl.block_keys[static_cast<size_t>(r)]);
}

// Calls f(i0, i1, keys) for each strip of rows [i0, i1) within [lo, hi) (strip-aligned) and its
// keys.
template <typename F>
void over_strips(const Tiling& tl, int64_t lo, int64_t hi, const F& f) {
  for (int64_t i0 = lo; i0 < hi; i0 += kStrip)
    f(i0, std::min(hi, i0 + kStrip), tl.keys[static_cast<size_t>(i0 / kStrip)]);
}

// The tiling of a [t, s] mask, or none when it would skip less than an eighth of the scores (the
// extra, smaller products would then cost more than they save).
std::optional<Tiling> tiling_of(const MaskView& m, int64_t t, int64_t s) {
  if (!m.data || t < kMinTiledRows || s == 0 || t > kMaxTiledScores / s) return std::nullopt;
  Tiling tl;
  tl.tile = tile_side(t);
  tl.keys.resize(static_cast<size_t>((t + kStrip - 1) / kStrip));
  tl.queries.resize(static_cast<size_t>((s + kStrip - 1) / kStrip));
  std::vector<int64_t> first(static_cast<size_t>(s), t), last(static_cast<size_t>(s), -1);
  int64_t computed = 0;
  for (int64_t r = 0; r * kStrip < t; ++r) {
    const int64_t i1 = std::min(t, (r + 1) * kStrip);
    int64_t lo = s, hi = 0;
    for (int64_t i = r * kStrip; i < i1; ++i)
      for (int64_t j = 0; j < s; ++j)
        if (!m.at(i, j)) {
          lo = std::min(lo, j);
          hi = std::max(hi, j + 1);
          first[static_cast<size_t>(j)] = std::min(first[static_cast<size_t>(j)], i);
          last[static_cast<size_t>(j)] = i;
        }
    if (hi <= lo) lo = 0, hi = s;
    tl.keys[static_cast<size_t>(r)] = {lo, hi};
    computed += (i1 - r * kStrip) * (hi - lo);
  }
  for (int64_t c = 0; c * kStrip < s; ++c) {
    Span q{t, 0};
    for (int64_t j = c * kStrip; j < std::min(s, (c + 1) * kStrip); ++j)
      if (last[static_cast<size_t>(j)] >= 0) {
        q.lo = std::min(q.lo, first[static_cast<size_t>(j)]);
        q.hi = std::max(q.hi, last[static_cast<size_t>(j)] + 1);
      }
    tl.queries[static_cast<size_t>(c)] = q.hi > q.lo ? q : Span{};
  }
  for (int64_t i0 = 0; i0 < t; i0 += tl.tile) {
    Span block{s, 0};
    over_strips(tl, i0, std::min(t, i0 + tl.tile), [&](int64_t, int64_t, Span keys) {
      block.lo = std::min(block.lo, keys.lo);
      block.hi = std::max(block.hi, keys.hi);
    });
    tl.block_keys.push_back(block);
  }
  if (computed * 8 > t * s * 7) return std::nullopt;
  return tl;
}

// The largest magnitude in a [rows, cols] matrix (rows `ld` apart), or none when an element is
// not finite.
template <typename T>
std::optional<T> finite_max_abs(const T* data, int64_t rows, int64_t cols, int64_t ld) {
  T acc = 0, top = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const T* row = data + i * ld;
#pragma omp simd reduction(+ : acc) reduction(max : top)
    for (int64_t j = 0; j < cols; ++j) {
      acc += row[j] * T(0);  // inf * 0 and NaN * 0 are NaN
      const T a = row[j] < 0 ? -row[j] : row[j];
      top = a > top ? a : top;
    }
  }
  if (acc != T(0)) return std::nullopt;
  return top;
}

template <typename T>
bool all_finite(const T* data, int64_t rows, int64_t cols, int64_t ld) {
  return finite_max_abs(data, rows, cols, ld).has_value();
}

struct Geometry {
  int64_t batch, t, s, d, dv;
};

template <typename T>
struct Inputs {
  Operand<T> q, k, v;
  Tensor mask;  // expanded to [*, T, S]
  std::vector<int64_t> mask_offset;
  double scale;
  Geometry g;
  // Per batch entry, the index of its mask's tiling in `tilings`, or -1 (none: every score is
  // computed). Entries sharing a mask (a broadcast one) share its tiling.
  std::vector<int32_t> tiling_index;
  std::vector<Tiling> tilings;

  const Tiling* tiling(int64_t n) const {
    if (tiling_index.empty()) return nullptr;
    const int32_t i = tiling_index[static_cast<size_t>(n)];
    return i < 0 ? nullptr : &tilings[static_cast<size_t>(i)];
  }
  const T* entry(const Operand<T>& o, int64_t n) const {
    return o.data + o.offset[static_cast<size_t>(n)];
  }

  MaskView mask_of(int64_t n) const {
    if (!mask.defined()) return {};
    return {data_of<const bool>(mask) + mask_offset[static_cast<size_t>(n)], mask.stride(-2),
            mask.stride(-1)};
  }
};

template <typename T>
Inputs<T> inputs_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                    double scale) {
  Inputs<T> in{operand<T>(q), operand<T>(k), operand<T>(v), Tensor(), {}, scale, {}, {}, {}};
  in.g = {static_cast<int64_t>(in.q.offset.size()), q.size(-2), k.size(-2), q.size(-1), v.size(-1)};
  if (mask.defined()) {
    IntList full = q.sizes();
    full.back() = k.size(-2);
    in.mask = mask.expand(full);
    in.mask_offset = batch_offsets(in.mask);
    if (std::isfinite(scale)) {
      // One tiling per distinct mask (a broadcast one: one in all), the masks read in parallel.
      std::map<int64_t, int32_t> by_offset;  // a mask offset -> its index in `first_entry`
      std::vector<int64_t> first_entry;
      in.tiling_index.resize(in.mask_offset.size());
      for (size_t n = 0; n < in.mask_offset.size(); ++n) {
        auto [at, added] =
            by_offset.emplace(in.mask_offset[n], static_cast<int32_t>(first_entry.size()));
        if (added) first_entry.push_back(static_cast<int64_t>(n));
        in.tiling_index[n] = at->second;
      }
      std::vector<std::optional<Tiling>> found(first_entry.size());
      const auto count = static_cast<int64_t>(first_entry.size());
#pragma omp parallel for schedule(dynamic) if (count > 1)
      for (int64_t m = 0; m < count; ++m) {
        try {  // nothing may leave the team; without a tiling every score is computed
          found[static_cast<size_t>(m)] =
              tiling_of(in.mask_of(first_entry[static_cast<size_t>(m)]), in.g.t, in.g.s);
        } catch (...) {
        }
      }
      std::vector<int32_t> index(found.size(), -1);
      for (size_t m = 0; m < found.size(); ++m)
        if (found[m]) {
          index[m] = static_cast<int32_t>(in.tilings.size());
          in.tilings.push_back(std::move(*found[m]));
        }
      for (int32_t& i : in.tiling_index) i = index[static_cast<size_t>(i)];
    }
  }
  return in;
}

// p = softmax(mask(scale * (q @ k^T))) for batch entry n, `s` scratch of the same size.
template <typename T>
void attention_weights(const Inputs<T>& in, int64_t n, T* s, T* p) {
  const Geometry& g = in.g;
  product<T>('N', 'T', g.t, g.s, g.d, in.entry(in.q, n), in.q.ld, in.entry(in.k, n), in.k.ld, s,
             g.s);
  const MaskView mask = in.mask_of(n);
  const T scale = static_cast<T>(in.scale), minus_inf = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < g.t; ++i) {
    T* row = s + i * g.s;
    scale_or_fill<T>(row, mask, i, scale, minus_inf, g.s);
    softmax_row<T>(row, p + i * g.s, g.s);
  }
}

// attention_weights over `tl`'s spans only: each block's scores for its block_keys (one oneDNN
// product), then each strip's weights for its keys. With `zero_rest`, the other weights of each
// row are set to 0 (what the composite's are), for the products over key strips to read. Returns
// false when a row's weights hold a NaN (a fully masked row, or an overflowing score): the
// composite's NaN would then reach keys the spans leave out.
template <typename T>
bool tiled_attention_weights(const Inputs<T>& in, int64_t n, const Tiling& tl, T* s, T* p,
                             bool zero_rest) {
  const Geometry& g = in.g;
  const MaskView mask = in.mask_of(n);
  const T scale = static_cast<T>(in.scale), minus_inf = -std::numeric_limits<T>::infinity();
  bool finite = true;
  over_row_blocks(tl, g.t, [&](int64_t b0, int64_t b1, Span block) {
    product<T>('N', 'T', b1 - b0, block.size(), g.d, in.entry(in.q, n) + b0 * in.q.ld, in.q.ld,
               in.entry(in.k, n) + block.lo * in.k.ld, in.k.ld, s + b0 * g.s + block.lo, g.s);
    over_strips(tl, b0, b1, [&](int64_t i0, int64_t i1, Span keys) {
      const MaskView shifted = mask.from_column(keys.lo);
      for (int64_t i = i0; i < i1; ++i) {
        T* row = s + i * g.s + keys.lo;
        T* weights = p + i * g.s;
        scale_or_fill<T>(row, shifted, i, scale, minus_inf, keys.size());
        softmax_row<T>(row, weights + keys.lo, keys.size());
        if (zero_rest) {
          std::fill(weights, weights + keys.lo, T(0));
          std::fill(weights + keys.hi, weights + g.s, T(0));
          // softmax_row's row is NaN throughout or nowhere (a NaN or infinite maximum, or a sum
          // that is NaN, reaches every element), so its first weight tells.
          finite = finite && !std::isnan(weights[keys.lo]);
        }
      }
    });
  });
  return finite;
}

// This thread's scratch of at least n elements. Kept per thread (OpenMP's workers live as long as
// the process) and only grown, so a call neither maps fresh pages nor zeroes them, as blocks
// allocated per call (above malloc's mmap threshold) did.
// Above kKeptScratch bytes (long sequences) a call allocates its own, so no thread keeps that much
// after the call.
constexpr size_t kKeptScratch = size_t{8} << 20;

template <typename T>
T* thread_scratch(size_t n, std::vector<T>& owned) {
  thread_local std::vector<T> kept;
  std::vector<T>& buffer = n * sizeof(T) <= kKeptScratch ? kept : owned;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// Runs body(n, scratch) for every batch entry; scratch holds `blocks` [T, S] blocks per thread.
// The first exception a thread throws (a failed allocation included) is rethrown after the team
// ends (none may leave it).
template <typename T, typename Body>
void over_batch(const Geometry& g, int blocks, const Body& body) {
  const size_t scratch = static_cast<size_t>(blocks) * static_cast<size_t>(g.t * g.s);
  if (g.batch >= omp_get_max_threads() && g.batch > 1) {
    std::exception_ptr failure;
#pragma omp parallel
    {
      std::vector<T> owned;
#pragma omp for schedule(static)
      for (int64_t n = 0; n < g.batch; ++n) {
        try {
          body(n, thread_scratch<T>(scratch, owned));
        } catch (...) {
#pragma omp critical(aotgrad_attention_failure)
          if (!failure) failure = std::current_exception();
        }
      }
    }
    if (failure) std::rethrow_exception(failure);
    return;
  }
  std::vector<T> owned;
  T* buffer = thread_scratch<T>(scratch, owned);
  for (int64_t n = 0; n < g.batch; ++n) body(n, buffer);
}

// The output rows of batch entry n from its weights `p` over `tl`'s spans: p @ v per strip.
template <typename T>
void tiled_output(const Inputs<T>& in, int64_t n, const Tiling& tl, const T* p, T* out) {
  const Geometry& g = in.g;
  over_strips(tl, 0, g.t, [&](int64_t i0, int64_t i1, Span keys) {
    strip_product<T>(i1 - i0, g.dv, keys.size(), p + i0 * g.s + keys.lo, g.s, 1,
                     in.entry(in.v, n) + keys.lo * in.v.ld, in.v.ld, out + (n * g.t + i0) * g.dv,
                     g.dv);
  });
}

template <typename T>
Tensor forward_typed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                     double scale) {
  IntList out_sizes = q.sizes();
  out_sizes.back() = v.size(-1);
  Tensor out = make_tensor(out_sizes, q.dtype());
  if (out.numel() == 0) return out;
  const Inputs<T> in = inputs_of<T>(q, k, v, mask, scale);
  const Geometry& g = in.g;
  T* o = data_of<T>(out);
  over_batch<T>(g, 2, [&](int64_t n, T* scratch) {
    T *s = scratch, *p = scratch + g.t * g.s;
    const Tiling* tl = in.tiling(n);
    // A skipped weight is 0, and 0 times a finite value is 0: the composite's output rows are then
    // the products over each row block's keys alone (a NaN weight row stays inside its span).
    if (tl && all_finite(in.entry(in.v, n), g.s, g.dv, in.v.ld)) {
      tiled_attention_weights(in, n, *tl, s, p, false);
      tiled_output(in, n, *tl, p, o);
      return;
    }
    if (g.s > 0) attention_weights(in, n, s, p);
    product<T>('N', 'N', g.t, g.dv, g.s, p, g.s, in.entry(in.v, n), in.v.ld, o + n * g.t * g.dv,
               g.dv);
  });
  return out;
}

// The backward of batch entry n over `tl`'s spans, its weights `p` already computed with the rest
// of each row zeroed (tiled_attention_weights), every operand finite: the products of the full
// backward restricted to the blocks the mask leaves something in. s and ds are scratch [T, S].
template <typename T>
void tiled_backward(const Inputs<T>& in, int64_t n, const Tiling& tl, const T* gn, int64_t ld_gn,
                    T* s, const T* p, T* ds, const Dest<T>* dq, const Dest<T>* dk,
                    const Dest<T>* dv, T* out) {
  const Geometry& g = in.g;
  const T *q = in.entry(in.q, n), *k = in.entry(in.k, n), *v = in.entry(in.v, n);
  if (out) tiled_output(in, n, tl, p, out);
  // Over key strips: dv = p^T @ grad_out and, below, dk = ds^T @ q, each over the queries that
  // attend the strip (the other rows of p and ds are 0 there).
  const auto by_key_strip = [&](const T* weights, const T* b, int64_t ldb, int64_t cols,
                                const Dest<T>& to) {
    for (int64_t j0 = 0; j0 < g.s; j0 += kStrip) {
      const Span queries = tl.queries[static_cast<size_t>(j0 / kStrip)];
      strip_product<T>(std::min(g.s, j0 + kStrip) - j0, cols, queries.size(),
                       weights + queries.lo * g.s + j0, 1, g.s, b + queries.lo * ldb, ldb,
                       to.at(n) + j0 * to.ld, to.ld);
    }
  };
  if (dv) by_key_strip(p, gn, ld_gn, g.dv, *dv);
  if (!dq && !dk) return;
  const MaskView mask = in.mask_of(n);
  const T scale = static_cast<T>(in.scale), masked = T(0) * scale;
  over_row_blocks(tl, g.t, [&](int64_t b0, int64_t b1, Span block) {
    // dp = grad_out @ v^T over the block's keys, then per strip softmax's backward, the mask, the
    // scale.
    product<T>('N', 'T', b1 - b0, block.size(), g.dv, gn + b0 * ld_gn, ld_gn,
               v + block.lo * in.v.ld, in.v.ld, s + b0 * g.s + block.lo, g.s);
    over_strips(tl, b0, b1, [&](int64_t i0, int64_t i1, Span keys) {
      const MaskView shifted = mask.from_column(keys.lo);
      for (int64_t i = i0; i < i1; ++i) {
        T* row = ds + i * g.s;
        softmax_backward_row<T>(s + i * g.s + keys.lo, p + i * g.s + keys.lo, row + keys.lo,
                                keys.size());
        scale_or_fill<T>(row + keys.lo, shifted, i, scale, masked, keys.size());
        std::fill(row, row + keys.lo, masked);
        std::fill(row + keys.hi, row + g.s, masked);
      }
      if (dq)
        strip_product<T>(i1 - i0, g.d, keys.size(), ds + i0 * g.s + keys.lo, g.s, 1,
                         k + keys.lo * in.k.ld, in.k.ld, dq->at(n) + i0 * dq->ld, dq->ld);
    });
  });
  if (dk) by_key_strip(ds, q, in.q.ld, g.d, *dk);
}

// {dq, dk, dv} as `need` asks (written into `into`'s where defined), and with `with_output` the
// forward's output too (fourth), from the same weights.
template <typename T>
std::array<Tensor, 4> backward_typed(const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                     const Tensor& v, const Tensor& mask, double scale,
                                     std::array<bool, 3> need, bool with_output,
                                     const std::array<Tensor, 3>& into) {
  std::array<Tensor, 4> grads;
  const std::array<const Tensor*, 3> like{&q, &k, &v};
  for (size_t i = 0; i < 3; ++i)
    if (need[i])
      grads[i] = into[i].defined() ? into[i] : make_tensor(like[i]->sizes(), like[i]->dtype());
  if (with_output) {
    IntList out_sizes = q.sizes();
    out_sizes.back() = v.size(-1);
    grads[3] = make_tensor(out_sizes, q.dtype());
  }
  const Inputs<T> in = inputs_of<T>(q, k, v, mask, scale);
  const Operand<T> go = operand<T>(grad_out);
  const Geometry& g = in.g;
  std::array<Dest<T>, 3> dests;
  for (size_t i = 0; i < 3; ++i)
    if (need[i] && grads[i].numel() > 0) dests[i] = dest_of<T>(grads[i]);
  const Dest<T>* dq = dests[0].data ? &dests[0] : nullptr;
  const Dest<T>* dk = dests[1].data ? &dests[1] : nullptr;
  const Dest<T>* dv = dests[2].data ? &dests[2] : nullptr;
  T* out = with_output && grads[3].numel() > 0 ? data_of<T>(grads[3]) : nullptr;
  const T scale_t = static_cast<T>(scale);
  over_batch<T>(g, 3, [&](int64_t n, T* scratch) {
    const T* gn = go.data + go.offset[static_cast<size_t>(n)];
    T *s = scratch, *p = scratch + g.t * g.s, *ds = scratch + 2 * g.t * g.s;
    const Tiling* tl = in.tiling(n);
    // Besides finite operands, the skipped entries of dp = grad_out @ v^T must be finite: the
    // composite's softmax backward sums dp * p over whole rows, where an infinite dp at a masked
    // key (p = 0) makes the row NaN. |dp| <= Dv max|grad_out| max|v|, kept below half the largest
    // finite value.
    const auto products_stay_finite = [&] {
      const std::optional<T> gmax = finite_max_abs(gn, g.t, g.dv, go.ld);
      const std::optional<T> vmax = finite_max_abs(in.entry(in.v, n), g.s, g.dv, in.v.ld);
      if (!gmax || !vmax) return false;
      const T bound = std::numeric_limits<T>::max() / 2;
      return *vmax == T(0) || *gmax <= bound / (static_cast<T>(g.dv) * *vmax);
    };
    if (tl && products_stay_finite() && all_finite(in.entry(in.q, n), g.t, g.d, in.q.ld) &&
        all_finite(in.entry(in.k, n), g.s, g.d, in.k.ld) &&
        tiled_attention_weights(in, n, *tl, s, p, true)) {
      tiled_backward(in, n, *tl, gn, go.ld, s, p, ds, dq, dk, dv, out);
      return;
    }
    if (g.s > 0) attention_weights(in, n, s, p);
    if (out)
      product<T>('N', 'N', g.t, g.dv, g.s, p, g.s, in.entry(in.v, n), in.v.ld, out + n * g.t * g.dv,
                 g.dv);
    // dv = p^T @ grad_out
    if (dv) product<T>('T', 'N', g.s, g.dv, g.t, p, g.s, gn, go.ld, dv->at(n), dv->ld);
    if (!dq && !dk) return;
    // dp = grad_out @ v^T (into s), then eager softmax's backward, the mask, the scale.
    product<T>('N', 'T', g.t, g.s, g.dv, gn, go.ld, in.entry(in.v, n), in.v.ld, s, g.s);
    // A masked entry's gradient is masked_fill's 0 times the scale (NaN for a NaN or infinite
    // scale, as the composite's mul backward makes it), not 0.
    const MaskView m = in.mask_of(n);
    for (int64_t i = 0; i < g.t && g.s > 0; ++i) {
      T* row = ds + i * g.s;
      softmax_backward_row<T>(s + i * g.s, p + i * g.s, row, g.s);
      scale_or_fill<T>(row, m, i, scale_t, T(0) * scale_t, g.s);
    }
    if (dq)
      product<T>('N', 'N', g.t, g.d, g.s, ds, g.s, in.entry(in.k, n), in.k.ld, dq->at(n), dq->ld);
    if (dk)
      product<T>('T', 'N', g.s, g.d, g.t, ds, g.s, in.entry(in.q, n), in.q.ld, dk->at(n), dk->ld);
  });
  return grads;
}

}  // namespace

Tensor masked_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                        double scale) {
  if (q.dtype() == DType::f32) return forward_typed<float>(q, k, v, mask, scale);
  if (q.dtype() == DType::f64) return forward_typed<double>(q, k, v, mask, scale);
  throw std::invalid_argument("masked_attention: expected f32 or f64 query, got " +
                              std::string(dtype_name(q.dtype())));
}

namespace {

std::array<Tensor, 4> backward_of(const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                  const Tensor& v, const Tensor& mask, double scale,
                                  std::array<bool, 3> need, bool with_output,
                                  const std::array<Tensor, 3>& into) {
  const std::array<const Tensor*, 3> like{&q, &k, &v};
  static const char* names[] = {"dq", "dk", "dv"};
  for (size_t i = 0; i < 3; ++i) {
    const Tensor& t = into[i];
    if (!t.defined()) continue;
    const bool rows_apart = t.dim() >= 2 && (t.size(-1) <= 1 || t.stride(-1) == 1) &&
                            (t.size(-2) <= 1 || t.stride(-2) >= t.size(-1));
    if (!need[i] || t.dtype() != q.dtype() || t.sizes() != like[i]->sizes() || !rows_apart)
      throw std::invalid_argument(
          std::string("masked_attention_backward: the buffer given for ") + names[i] +
          " must be a needed result's " + std::string(dtype_name(q.dtype())) +
          shape_to_string(like[i]->sizes()) + " with unit-stride rows that do not overlap");
  }
  if (q.dtype() == DType::f32)
    return backward_typed<float>(grad_out, q, k, v, mask, scale, need, with_output, into);
  if (q.dtype() == DType::f64)
    return backward_typed<double>(grad_out, q, k, v, mask, scale, need, with_output, into);
  throw std::invalid_argument("masked_attention_backward: expected f32 or f64 query, got " +
                              std::string(dtype_name(q.dtype())));
}

}  // namespace

std::array<Tensor, 3> masked_attention_backward(const Tensor& grad_out, const Tensor& q,
                                                const Tensor& k, const Tensor& v,
                                                const Tensor& mask, double scale,
                                                std::array<bool, 3> need,
                                                const std::array<Tensor, 3>& into) {
  std::array<Tensor, 4> r = backward_of(grad_out, q, k, v, mask, scale, need, false, into);
  return {r[0], r[1], r[2]};
}

std::array<Tensor, 4> masked_attention_with_backward(const Tensor& grad_out, const Tensor& q,
                                                     const Tensor& k, const Tensor& v,
                                                     const Tensor& mask, double scale,
                                                     std::array<bool, 3> need,
                                                     const std::array<Tensor, 3>& into) {
  return backward_of(grad_out, q, k, v, mask, scale, need, true, into);
}

}  // namespace aotgrad::kernels
