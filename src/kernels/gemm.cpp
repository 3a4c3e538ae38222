// GEMM: oneDNN matmul for f32, a cache-blocked OpenMP loop nest for everything else.
//
// Reading guide: every product is seen as batched, [batch, rows, cols] operands (Operand) with
// element strides; a 2-D operand, or a batch dim of stride 0 (an expanded weight), has batch 1
// and is shared by every batch entry. run_gemm() picks the path: f32 operands whose matrices are
// plain row- or column-major go to a cached oneDNN primitive (other layouts are copied first);
// if oneDNN rejects the case or offers only its reference implementation, gemm_loop() runs.
// Thread-safety: the primitive cache is thread_local; primitives are never shared across threads.
#include "kernels/gemm.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kernels/copy.h"
#include "kernels/onednn.h"
#include "kernels/parallel.h"
#include "tensor/checked_math.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kParallelWork = 32768;

struct Operand {
  const char* data = nullptr;
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t sb = 0, sr = 0, sc = 0;  // strides in elements
};

Operand as_operand(const Tensor& t) {
  Operand o;
  o.data = t.impl()->data_bytes();
  if (t.dim() == 2) {
    o.rows = t.size(0);
    o.cols = t.size(1);
    o.sr = t.stride(0);
    o.sc = t.stride(1);
  } else {
    o.batch = t.stride(0) == 0 ? 1 : t.size(0);
    o.rows = t.size(1);
    o.cols = t.size(2);
    o.sb = t.stride(0);
    o.sr = t.stride(1);
    o.sc = t.stride(2);
  }
  return o;
}

// Rewrites the strides of size-1 dims (free to choose) and reports whether the matrix is
// row-major (sc == 1, sr >= cols) or column-major (sr == 1, sc >= rows): the layouts oneDNN's
// fast implementations take without a copy.
bool make_plain(Operand& o) {
  if (o.rows == 1 && o.cols == 1) {
    o.sr = o.sc = 1;
  } else if (o.rows == 1) {
    if (o.sc == 1)
      o.sr = o.cols;
    else
      o.sr = 1;  // column-major with leading dimension sc
  } else if (o.cols == 1) {
    if (o.sr == 1)
      o.sc = o.rows;
    else
      o.sc = 1;  // row-major with leading dimension sr
  }
  return (o.sc == 1 && o.sr >= o.cols) || (o.sr == 1 && o.sc >= o.rows);
}

// Elements one matrix of the operand spans; the batch stride of a shared (batch 1) operand.
int64_t matrix_extent(const Operand& o) {
  return (o.rows - 1) * o.sr + (o.cols - 1) * o.sc + 1;
}

// ---- oneDNN ----

// A bias added inside the product (addmm's self): [rows, cols], each 1 (broadcast) or the
// output's size, row-major contiguous.
struct Bias {
  const char* data = nullptr;
  int64_t rows = 0, cols = 0;
};

struct Primitive {
  bool usable = false;  // false: oneDNN rejected the case or has only its reference impl
  std::string impl;
  dnnl::matmul matmul;
  dnnl::memory::desc a_md, b_md, c_md, bias_md;
};

using Key = std::array<int64_t, 16>;
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 0;
    for (int64_t v : k) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

dnnl::memory::desc f32_desc(int64_t batch, int64_t rows, int64_t cols, int64_t sb, int64_t sr,
                            int64_t sc) {
  return dnnl::memory::desc({batch, rows, cols}, dnnl::memory::data_type::f32, {sb, sr, sc});
}

// `ldc`: the row stride of the result (a column block of a wider one), or 0 for b.cols.
const Primitive& onednn_primitive(const Operand& a, const Operand& b, int64_t batch,
                                  const Bias& bias, int64_t ldc = 0) {
  if (ldc == 0) ldc = b.cols;
  // A long-running program with ever-changing shapes must not grow the cache without bound.
  constexpr size_t kMaxCached = 256;
  thread_local std::unordered_map<Key, std::unique_ptr<Primitive>, KeyHash> cache;
  int64_t a_sb = a.batch == 1 ? matrix_extent(a) : a.sb;
  int64_t b_sb = b.batch == 1 ? matrix_extent(b) : b.sb;
  // oneDNN fixes its thread partition when the primitive is created: the thread count is part
  // of the key, so omp_set_num_threads() takes effect on the next call.
  Key key{batch,
          a.rows,
          a.cols,
          b.cols,
          a.batch,
          a_sb,
          a.sr,
          a.sc,
          b.batch,
          b_sb,
          b.sr,
          b.sc,
          omp_get_max_threads(),
          bias.rows,
          bias.cols,
          ldc};
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  if (cache.size() >= kMaxCached) cache.clear();
  auto p = std::make_unique<Primitive>();
  try {
    p->a_md = f32_desc(a.batch, a.rows, a.cols, a_sb, a.sr, a.sc);
    p->b_md = f32_desc(b.batch, b.rows, b.cols, b_sb, b.sr, b.sc);
    p->c_md = f32_desc(batch, a.rows, b.cols, a.rows * ldc, ldc, 1);
    if (bias.data)
      p->bias_md = f32_desc(1, bias.rows, bias.cols, bias.rows * bias.cols, bias.cols, 1);
    dnnl::matmul::desc desc = bias.data ? dnnl::matmul::desc(p->a_md, p->b_md, p->bias_md, p->c_md)
                                        : dnnl::matmul::desc(p->a_md, p->b_md, p->c_md);
    dnnl::matmul::primitive_desc pd(desc, onednn_engine());
    p->impl = pd.impl_info_str();
    // The reference implementation is a naive scalar loop: the blocked fallback beats it.
    p->usable = p->impl.find("ref") == std::string::npos;
    if (p->usable) p->matmul = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    p->impl = std::string("rejected: ") + e.what();
    p->usable = false;
  }
  return *cache.emplace(key, std::move(p)).first->second;
}

void onednn_run(const Primitive& p, const Operand& a, const Operand& b, const Bias& bias,
                char* out) {
  dnnl::stream& stream = onednn_stream();
  dnnl::memory am(p.a_md, onednn_engine(), const_cast<char*>(a.data));
  dnnl::memory bm(p.b_md, onednn_engine(), const_cast<char*>(b.data));
  dnnl::memory cm(p.c_md, onednn_engine(), out);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
  if (bias.data)
    args.emplace(DNNL_ARG_BIAS,
                 dnnl::memory(p.bias_md, onednn_engine(), const_cast<char*>(bias.data)));
  p.matmul.execute(stream, args);
  stream.wait();
}

// ---- the loop nest ----

// c (contiguous [batch, M, N], zeroed) += a @ b. b is packed into a contiguous [K, N] panel per
// batch entry so the innermost loop streams two contiguous rows (c's and b's) and vectorizes;
// blocks of kRows x kCols x kDepth keep the active part of b in L2 while kRows rows of c reuse it.
template <typename T>
void gemm_loop(const Operand& a, const Operand& b, int64_t batch, T* c) {
  constexpr int64_t kRows = 32, kCols = 256, kDepth = 128;
  const int64_t M = a.rows, K = a.cols, N = b.cols;
  const T* ad = reinterpret_cast<const T*>(a.data);
  const T* bd = reinterpret_cast<const T*>(b.data);
  // A tensor, not a std::vector: b may be an expanded view far larger than memory, and the
  // allocator's out-of-memory error names the op and the bytes.
  const Tensor packed_buffer = make_tensor({b.batch * K * N}, dtype_of<T>());
  T* packed = packed_buffer.data_ptr<T>();
#pragma omp parallel for collapse(2) if (b.batch * K * N > kParallelWork)
  for (int64_t bi = 0; bi < b.batch; ++bi)
    for (int64_t k = 0; k < K; ++k) {
      T* dst = packed + (bi * K + k) * N;
      const T* src = bd + bi * b.sb + k * b.sr;
      for (int64_t n = 0; n < N; ++n) dst[n] = src[n * b.sc];
    }
  const int64_t row_blocks = (M + kRows - 1) / kRows;
#pragma omp parallel for collapse(2) \
    schedule(static) if (saturating_product({batch, M, N, K}) > kParallelWork)
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t rb = 0; rb < row_blocks; ++rb) {
      const T* ab = ad + (a.batch == 1 ? 0 : bi * a.sb);
      const T* bp = packed + (b.batch == 1 ? 0 : bi * K * N);
      T* cb = c + bi * M * N;
      const int64_t i0 = rb * kRows, i1 = std::min(M, i0 + kRows);
      for (int64_t n0 = 0; n0 < N; n0 += kCols) {
        const int64_t n1 = std::min(N, n0 + kCols);
        for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
          const int64_t k1 = std::min(K, k0 + kDepth);
          for (int64_t i = i0; i < i1; ++i) {
            T* crow = cb + i * N;
            const T* arow = ab + i * a.sr;
            int64_t k = k0;
            // Four rows of b per sweep of the c row: four multiply-adds per load/store of c.
            for (; k + 4 <= k1; k += 4) {
              const T a0 = arow[k * a.sc], a1 = arow[(k + 1) * a.sc];
              const T a2 = arow[(k + 2) * a.sc], a3 = arow[(k + 3) * a.sc];
              const T* b0 = bp + k * N;
              const T *b1 = b0 + N, *b2 = b1 + N, *b3 = b2 + N;
#pragma omp simd
              for (int64_t j = n0; j < n1; ++j)
                crow[j] += (a0 * b0[j] + a1 * b1[j]) + (a2 * b2[j] + a3 * b3[j]);
            }
            for (; k < k1; ++k) {
              const T av = arow[k * a.sc];
              const T* brow = bp + k * N;
#pragma omp simd
              for (int64_t j = n0; j < n1; ++j) crow[j] += av * brow[j];
            }
          }
        }
      }
    }
  }
}

void loop_into(const Operand& a, const Operand& b, int64_t batch, const Tensor& out) {
  fill(out, 0);
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, uint8_t>)
      gemm_loop<T>(a, b, batch, reinterpret_cast<T*>(out.impl()->data_bytes()));
    else
      throw std::logic_error("gemm_loop: unexpected dtype");
  });
}

// The oneDNN primitive for f32 operands, after copying any operand whose layout oneDNN's fast
// paths do not take. Null when the loop nest must run instead. May replace a / b (and their
// Operand) by contiguous copies, which the caller keeps alive.
const Primitive* choose_onednn(Tensor& a, Tensor& b, Operand& oa, Operand& ob, int64_t batch,
                               const Bias& bias = {}) {
  if (a.dtype() != DType::f32 || !fits_onednn_int({batch, oa.rows, oa.cols, ob.cols}))
    return nullptr;
  if (!make_plain(oa)) {
    a = contiguous_copy(a, DType::f32);
    oa = as_operand(a);
    make_plain(oa);
  }
  if (!make_plain(ob)) {
    b = contiguous_copy(b, DType::f32);
    ob = as_operand(b);
    make_plain(ob);
  }
  const Primitive& p = onednn_primitive(oa, ob, batch, bias);
  return p.usable ? &p : nullptr;
}

// Below about a million multiply-adds, waking a second thread costs more than it saves; oneDNN
// would split even a 64x64 product. One thread for the calling thread's next primitives (the
// thread count is part of the primitive cache's key), restored on exit.
class SmallProductScope {
 public:
  explicit SmallProductScope(int64_t multiply_adds)
      : prev_(omp_get_max_threads()), active_(multiply_adds < (int64_t{1} << 20) && prev_ > 1) {
    if (active_) omp_set_num_threads(1);
  }
  ~SmallProductScope() {
    if (active_) omp_set_num_threads(prev_);
  }
  SmallProductScope(const SmallProductScope&) = delete;
  SmallProductScope& operator=(const SmallProductScope&) = delete;

 private:
  int prev_;
  bool active_;
};

// One product as one column block of b per thread, each a one-thread oneDNN call (b and the
// result read and written in place at the block's first column), for b laid out row-major. On two
// cores oneDNN 2.x splits such a product between its threads so that both pack all of b: measured
// here (a throwaway program, 2 threads, the weights rotating through 32 MiB as in a training
// step), [64, 1024] @ [1024, 1024] took 0.45-0.51 ms as one call and 0.35-0.36 ms as two column
// blocks, and no row-major shape of the reference models was slower. With b transposed (a
// linear layer's forward) the blocks were faster on some shapes and slower on others (that
// product 0.42 ms as one call, 0.47 split), so those stay one call. Each result element is still
// one call's dot product over all of k, so results do not depend on how many threads run. False
// (nothing written) when the product is too narrow to split, or oneDNN refuses a block.
bool run_in_column_blocks(const Operand& a, const Operand& b, const Bias& bias, const Tensor& out) {
  constexpr int64_t kMinBlockCols = 128;
  const int threads = omp_get_max_threads();
  const int64_t n = b.cols;
  if (threads < 2 || omp_in_parallel() || n < threads * kMinBlockCols || bias.rows > 1 || b.sc != 1)
    return false;
  // Blocks of whole 16-column groups (a cache line of f32), the last one taking the rest.
  auto first_col = [&](int t) { return t == threads ? n : (n / threads * t) / 16 * 16; };
  std::atomic<bool> usable{true};
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int64_t n0 = first_col(t), n1 = first_col(t + 1);
    Operand bt = b;
    bt.cols = n1 - n0;
    bt.data = b.data + n0 * b.sc * static_cast<int64_t>(sizeof(float));
    Bias bb = bias;
    if (bias.data && bias.cols > 1) {
      bb.cols = bt.cols;
      bb.data = bias.data + n0 * static_cast<int64_t>(sizeof(float));
    }
    // Inside the region omp_get_max_threads() still answers the team's size, so the cache's key
    // and the primitive's plan are those of a several-thread call; oneDNN runs a call made
    // inside a parallel region on the calling thread alone.
    const Primitive& p = onednn_primitive(a, bt, 1, bb, n);
    if (!p.usable) usable = false;
#pragma omp barrier
    if (usable)
      onednn_run(p, a, bt, bb, out.impl()->data_bytes() + n0 * static_cast<int64_t>(sizeof(float)));
  }
  return usable;
}

// a @ b (+ bias, when given: f32 only; *bias_added says whether it was, since the loop nest adds
// none).
Tensor run_gemm(Tensor a, Tensor b, const IntList& out_sizes, const Bias& bias = {},
                bool* bias_added = nullptr) {
  const DType dtype = a.dtype();
  if (dtype == DType::f16 || dtype == DType::bf16) {
    Tensor r = run_gemm(contiguous_copy(a, DType::f32), contiguous_copy(b, DType::f32), out_sizes);
    return contiguous_copy(r, dtype);
  }
  if (dtype == DType::b8)
    throw std::invalid_argument(
        "matrix product of bool tensors is not supported; convert the "
        "operands with .to(f32) or .to(i64) first");
  Tensor out = make_tensor(out_sizes, dtype);
  if (out.numel() == 0) return out;
  Operand oa = as_operand(a), ob = as_operand(b);
  const int64_t batch = out.dim() == 3 ? out.size(0) : 1;
  if (oa.cols == 0) {
    fill(out, 0);
    return out;
  }
  SmallProductScope threads(saturating_product({batch, oa.rows, oa.cols, ob.cols}));
  if (const Primitive* p = choose_onednn(a, b, oa, ob, batch, bias)) {
    if (batch != 1 || !run_in_column_blocks(oa, ob, bias, out))
      onednn_run(*p, oa, ob, bias, out.impl()->data_bytes());
    if (bias_added) *bias_added = bias.data != nullptr;
    return out;
  }
  loop_into(oa, ob, batch, out);
  return out;
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  return run_gemm(a, b, {a.size(0), b.size(1)});
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  return run_gemm(a, b, {a.size(0), a.size(1), b.size(2)});
}

Tensor bmm_loop(const Tensor& a, const Tensor& b) {
  Tensor out = make_tensor({a.size(0), a.size(1), b.size(2)}, a.dtype());
  if (out.numel() > 0) loop_into(as_operand(a), as_operand(b), a.size(0), out);
  return out;
}

std::string gemm_backend(const Tensor& a, const Tensor& b) {
  Tensor ca = a, cb = b;
  Operand oa = as_operand(ca), ob = as_operand(cb);
  const Primitive* p = choose_onednn(ca, cb, oa, ob, a.dim() == 3 ? a.size(0) : 1);
  return p ? "onednn:" + p->impl : "loop";
}

namespace {

// self as addmm's oneDNN bias: f32, beta == alpha == 1 (nn.Linear's case) and at most 2-D; a
// non-contiguous self is copied (it is at most the output's size). Empty when not applicable.
Bias as_bias(const Tensor& self, const Tensor& a, const Scalar& beta, const Scalar& alpha,
             Tensor& keep) {
  if (a.dtype() != DType::f32 || self.dtype() != DType::f32 || self.dim() > 2 ||
      beta.to_double() != 1.0 || alpha.to_double() != 1.0)
    return {};
  const int64_t rows = self.dim() == 2 ? self.size(0) : 1;
  const int64_t cols = self.dim() >= 1 ? self.size(self.dim() - 1) : 1;
  keep = self.is_contiguous() ? self : contiguous_copy(self, DType::f32);
  return {keep.impl()->data_bytes(), rows, cols};
}

}  // namespace

Tensor addmm(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta,
             const Scalar& alpha) {
  Tensor bias_storage;
  const Bias bias = as_bias(self, a, beta, alpha, bias_storage);
  bool bias_added = false;
  Tensor out = run_gemm(a, b, {a.size(0), b.size(1)}, bias, &bias_added);
  if (bias_added) return out;
  const bool use_self = beta.to_double() != 0.0;
  if (!use_self && alpha.to_double() == 1.0) return out;
  const int64_t M = out.size(0), N = out.size(1);
  IntList ss = use_self ? broadcast_strides(self, out.sizes()) : IntList{0, 0};
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      throw std::logic_error("addmm: bool output");
    } else {
      using C =
          std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
      const C al = std::is_integral_v<C> ? static_cast<C>(alpha.to_int())
                                         : static_cast<C>(alpha.to_double());
      const C be =
          std::is_integral_v<C> ? static_cast<C>(beta.to_int()) : static_cast<C>(beta.to_double());
      T* o = reinterpret_cast<T*>(out.impl()->data_bytes());
      const T* s = use_self ? reinterpret_cast<const T*>(self.impl()->data_bytes()) : nullptr;
#pragma omp parallel for if (M * N > kParallelWork)
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
          C v = al * convert<C>(o[i * N + j]);
          if (s) v += be * convert<C>(s[i * ss[0] + j * ss[1]]);
          o[i * N + j] = convert<T>(v);
        }
      }
    }
  });
  return out;
}

// ---- epilogues as oneDNN post-ops ----

namespace {

struct EpiloguePrimitive {
  bool usable = false;
  int residual_index = -1;  // the residual's post-op
  dnnl::matmul matmul;
  dnnl::memory::desc a_md, b_md, c_md, bias_md;
};

// One primitive per (shapes, strides, bias shape, post-ops) and thread, as for the plain products
// (onednn_primitive).
const EpiloguePrimitive& epilogue_primitive(const Operand& a, const Operand& b, const Bias& bias,
                                            GemmActivation act, bool residual,
                                            bool residual_first) {
  constexpr size_t kMaxCached = 256;
  thread_local std::unordered_map<Key, std::unique_ptr<EpiloguePrimitive>, KeyHash> cache;
  Key key{a.rows,
          a.cols,
          b.cols,
          a.sr,
          a.sc,
          b.sr,
          b.sc,
          omp_get_max_threads(),
          bias.data != nullptr,
          bias.rows,
          bias.cols,
          static_cast<int64_t>(act),
          residual + 2 * residual_first};
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  if (cache.size() >= kMaxCached) cache.clear();
  auto p = std::make_unique<EpiloguePrimitive>();
  try {
    p->a_md = f32_desc(1, a.rows, a.cols, matrix_extent(a), a.sr, a.sc);
    p->b_md = f32_desc(1, b.rows, b.cols, matrix_extent(b), b.sr, b.sc);
    p->c_md = f32_desc(1, a.rows, b.cols, a.rows * b.cols, b.cols, 1);
    if (bias.data)
      p->bias_md = f32_desc(1, bias.rows, bias.cols, bias.rows * bias.cols, bias.cols, 1);
    dnnl::primitive_attr attr;
    attr.set_post_ops(
        epilogue_post_ops(act, residual, residual_first, p->c_md, &p->residual_index));
    dnnl::matmul::desc desc = bias.data ? dnnl::matmul::desc(p->a_md, p->b_md, p->bias_md, p->c_md)
                                        : dnnl::matmul::desc(p->a_md, p->b_md, p->c_md);
    dnnl::matmul::primitive_desc pd(desc, attr, onednn_engine());
    p->usable = std::string(pd.impl_info_str()).find("ref") == std::string::npos;
    if (p->usable) p->matmul = dnnl::matmul(pd);
  } catch (const dnnl::error&) {
    p->usable = false;
  }
  return *cache.emplace(key, std::move(p)).first->second;
}

bool is_f32_or_undefined(const Tensor& t) {
  return !t.defined() || t.dtype() == DType::f32;
}

}  // namespace

Tensor mm_epilogue(const Tensor& a, const Tensor& b, const GemmEpilogue& epilogue,
                   const IntList& out_sizes) {
  if (a.dim() != 2 || b.dim() != 2 || a.dtype() != DType::f32 || b.dtype() != DType::f32 ||
      !is_f32_or_undefined(epilogue.bias) || !is_f32_or_undefined(epilogue.residual))
    return {};
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  if (M == 0 || K == 0 || N == 0 || !fits_onednn_int({M, K, N}) || numel_of(out_sizes) != M * N)
    return {};
  Bias bias;
  Tensor bias_storage;
  if (epilogue.bias.defined()) {
    const Tensor& s = epilogue.bias;
    if (s.dim() < 1 || s.dim() > 2 || s.size(s.dim() - 1) != N ||
        (s.dim() == 2 && s.size(0) != 1 && s.size(0) != M))
      return {};
    bias_storage = s.is_contiguous() ? s : contiguous_copy(s, DType::f32);
    bias = {bias_storage.impl()->data_bytes(), s.dim() == 2 ? s.size(0) : 1, N};
  }
  const Tensor& residual = epilogue.residual;
  if (residual.defined() && (!residual.is_contiguous() || residual.numel() != M * N)) return {};
  Tensor ca = a, cb = b;
  Operand oa = as_operand(ca), ob = as_operand(cb);
  if (!make_plain(oa)) {
    ca = contiguous_copy(ca, DType::f32);
    oa = as_operand(ca);
    make_plain(oa);
  }
  if (!make_plain(ob)) {
    cb = contiguous_copy(cb, DType::f32);
    ob = as_operand(cb);
    make_plain(ob);
  }
  SmallProductScope threads(saturating_product({M, K, N}));
  const EpiloguePrimitive& p = epilogue_primitive(oa, ob, bias, epilogue.activation,
                                                  residual.defined(), epilogue.residual_first);
  if (!p.usable) return {};
  Tensor out = make_tensor(out_sizes, DType::f32);
  const dnnl::engine& engine = onednn_engine();
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(p.a_md, engine, const_cast<char*>(oa.data))},
      {DNNL_ARG_WEIGHTS, dnnl::memory(p.b_md, engine, const_cast<char*>(ob.data))},
      {DNNL_ARG_DST, dnnl::memory(p.c_md, engine, out.impl()->data_bytes())}};
  if (bias.data)
    args.emplace(DNNL_ARG_BIAS, dnnl::memory(p.bias_md, engine, const_cast<char*>(bias.data)));
  if (residual.defined()) {
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.residual_index) | DNNL_ARG_SRC_1,
                 dnnl::memory(p.c_md, engine, residual.impl()->data_bytes()));
  }
  dnnl::stream& stream = onednn_stream();
  p.matmul.execute(stream, args);
  stream.wait();
  return out;
}

}  // namespace aotgrad::kernels
