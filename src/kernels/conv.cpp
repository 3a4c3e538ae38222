// 2-D convolution: cached oneDNN primitives for f32, a direct loop nest for everything else.
//
// Reading guide: Geometry holds every extent of one convolution. run_onednn() looks up (or
// creates) the primitive for a Geometry and a Pass (forward, backward_data, backward_weights) in
// a thread_local cache and runs it on the tensors' own memory; the loop nests below it are the
// f64 path and the fallback when oneDNN offers only its reference implementation.
// Thread-safety: the primitive cache is thread_local; primitives are never shared across threads.
#include "kernels/conv.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "kernels/copy.h"
#include "kernels/onednn.h"
#include "kernels/parallel.h"
#include "tensor/checked_math.h"
#include "tensor/dtype_dispatch.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kParallelWork = 32768;

struct Geometry {
  int64_t N, C, H, W;  // input
  int64_t O, kH, kW;   // weight [O, C / groups, kH, kW]
  int64_t oH, oW;      // output
  int64_t G, Cg, Og;   // groups, input and output channels per group
  Conv2dParams p;

  // Multiply-adds of one pass (forward, or either backward): the threading threshold's measure.
  int64_t multiply_adds() const { return saturating_product({N, O, oH, oW, Cg, kH, kW}); }
};

Geometry geometry(const Tensor& input, const Tensor& weight, const Conv2dParams& p) {
  Geometry g{};
  g.N = input.size(0);
  g.C = input.size(1);
  g.H = input.size(2);
  g.W = input.size(3);
  g.O = weight.size(0);
  g.kH = weight.size(2);
  g.kW = weight.size(3);
  g.oH = conv_output_size(g.H, g.kH, p.stride[0], p.padding[0], p.dilation[0]);
  g.oW = conv_output_size(g.W, g.kW, p.stride[1], p.padding[1], p.dilation[1]);
  g.G = p.groups;
  g.Cg = g.C / g.G;
  g.Og = g.O / g.G;
  g.p = p;
  return g;
}

// A contiguous tensor holding `t`'s values in `dtype`: `t` itself when it already is one.
Tensor dense(const Tensor& t, DType dtype) {
  if (t.is_contiguous() && t.dtype() == dtype) return t;
  return contiguous_copy(t, dtype);
}

// Output positions [lo, hi) whose input position o * stride + offset lies inside [0, in).
std::pair<int64_t, int64_t> valid_range(int64_t offset, int64_t stride, int64_t in, int64_t out) {
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t hi = in - 1 - offset < 0 ? 0 : (in - 1 - offset) / stride + 1;
  return {std::min(lo, out), std::clamp(hi, std::min(lo, out), out)};
}

// One kernel tap (ky, kx): input row y * stride + offy and column x * stride + offx lie inside
// the (unpadded) input exactly for output rows [y0, y1) and columns [x0, x1).
struct Tap {
  int64_t ky, kx, offy, offx, y0, y1, x0, x1;
};

template <typename Body>
void for_each_tap(const Geometry& g, Body&& body) {
  const auto& p = g.p;
  for (int64_t ky = 0; ky < g.kH; ++ky) {
    const int64_t offy = ky * p.dilation[0] - p.padding[0];
    auto [y0, y1] = valid_range(offy, p.stride[0], g.H, g.oH);
    for (int64_t kx = 0; kx < g.kW; ++kx) {
      const int64_t offx = kx * p.dilation[1] - p.padding[1];
      auto [x0, x1] = valid_range(offx, p.stride[1], g.W, g.oW);
      body(Tap{ky, kx, offy, offx, y0, y1, x0, x1});
    }
  }
}

// ---- the loop nests (contiguous operands of one type T) ----

template <typename T>
void forward_loop(const Geometry& g, const T* in, const T* w, const T* b, T* out) {
  const auto& p = g.p;
#pragma omp parallel for collapse(2) if (g.multiply_adds() > kParallelWork)
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t o = 0; o < g.O; ++o) {
      T* op = out + (n * g.O + o) * g.oH * g.oW;
      std::fill(op, op + g.oH * g.oW, b ? b[o] : T(0));
      const int64_t c0 = (o / g.Og) * g.Cg;
      for (int64_t c = 0; c < g.Cg; ++c) {
        const T* ip = in + (n * g.C + c0 + c) * g.H * g.W;
        for_each_tap(g, [&](const Tap& t) {
          const T wv = w[((o * g.Cg + c) * g.kH + t.ky) * g.kW + t.kx];
          for (int64_t y = t.y0; y < t.y1; ++y) {
            const T* irow = ip + (y * p.stride[0] + t.offy) * g.W + t.offx;
            T* orow = op + y * g.oW;
            for (int64_t x = t.x0; x < t.x1; ++x) orow[x] += wv * irow[x * p.stride[1]];
          }
        });
      }
    }
  }
}

// grad_input: each (n, c) plane gathers from the grad_output planes of c's group, so threads
// write disjoint planes.
template <typename T>
void backward_input_loop(const Geometry& g, const T* go, const T* w, T* gi) {
  const auto& p = g.p;
#pragma omp parallel for collapse(2) if (g.multiply_adds() > kParallelWork)
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t ci = 0; ci < g.C; ++ci) {
      T* ip = gi + (n * g.C + ci) * g.H * g.W;
      std::fill(ip, ip + g.H * g.W, T(0));
      const int64_t grp = ci / g.Cg, c = ci % g.Cg;
      for (int64_t o = grp * g.Og; o < (grp + 1) * g.Og; ++o) {
        const T* op = go + (n * g.O + o) * g.oH * g.oW;
        for_each_tap(g, [&](const Tap& t) {
          const T wv = w[((o * g.Cg + c) * g.kH + t.ky) * g.kW + t.kx];
          for (int64_t y = t.y0; y < t.y1; ++y) {
            T* irow = ip + (y * p.stride[0] + t.offy) * g.W + t.offx;
            const T* orow = op + y * g.oW;
            for (int64_t x = t.x0; x < t.x1; ++x) irow[x * p.stride[1]] += wv * orow[x];
          }
        });
      }
    }
  }
}

template <typename T>
void backward_weight_loop(const Geometry& g, const T* go, const T* in, T* gw) {
  const auto& p = g.p;
#pragma omp parallel for collapse(2) if (g.multiply_adds() > kParallelWork)
  for (int64_t o = 0; o < g.O; ++o) {
    for (int64_t c = 0; c < g.Cg; ++c) {
      const int64_t ci = (o / g.Og) * g.Cg + c;
      for_each_tap(g, [&](const Tap& t) {
        T acc = 0;
        for (int64_t n = 0; n < g.N; ++n) {
          const T* op = go + (n * g.O + o) * g.oH * g.oW;
          const T* ip = in + (n * g.C + ci) * g.H * g.W;
          for (int64_t y = t.y0; y < t.y1; ++y) {
            const T* irow = ip + (y * p.stride[0] + t.offy) * g.W + t.offx;
            const T* orow = op + y * g.oW;
            for (int64_t x = t.x0; x < t.x1; ++x) acc += orow[x] * irow[x * p.stride[1]];
          }
        }
        gw[((o * g.Cg + c) * g.kH + t.ky) * g.kW + t.kx] = acc;
      });
    }
  }
}

template <typename T>
void backward_bias_loop(const Geometry& g, const T* go, T* gb) {
#pragma omp parallel for if (g.N * g.O * g.oH * g.oW > kParallelWork)
  for (int64_t o = 0; o < g.O; ++o) {
    T acc = 0;
    for (int64_t n = 0; n < g.N; ++n) {
      const T* op = go + (n * g.O + o) * g.oH * g.oW;
      for (int64_t i = 0; i < g.oH * g.oW; ++i) acc += op[i];
    }
    gb[o] = acc;
  }
}

// ---- oneDNN ----

enum class Pass : int64_t { forward, backward_data, backward_weights };

// A layout oneDNN prefers for one operand, and the reorder between it and our plain layout
// (absent when the two agree).
struct Blocked {
  dnnl::memory::desc md;
  std::optional<dnnl::reorder> reorder;
};

struct Primitive {
  bool usable = false;  // false: oneDNN rejected the case or has only its reference impl
  std::string impl;
  dnnl::primitive prim;
  // backward_weights only: its operands in oneDNN's preferred (blocked) layouts.
  Blocked src, diff_dst, diff_weights;
};

// A forward primitive's epilogue (GemmEpilogue without its tensors).
struct PostOps {
  GemmActivation activation = GemmActivation::none;
  bool residual = false, residual_first = false;
  int64_t key() const {
    return static_cast<int64_t>(activation) * 4 + residual * 2 + residual_first;
  }
};

using Key = std::array<int64_t, 18>;
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 0;
    for (int64_t v : k) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

struct Descs {
  dnnl::memory::desc src, weights, bias, dst;
  dnnl::memory::dims strides, dilates, pad_l, pad_r;
};

Descs descs(const Geometry& g, bool with_bias) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const auto& p = g.p;
  Descs d;
  d.src = dnnl::memory::desc({g.N, g.C, g.H, g.W}, dt::f32, tag::nchw);
  d.dst = dnnl::memory::desc({g.N, g.O, g.oH, g.oW}, dt::f32, tag::nchw);
  d.weights = g.G == 1 ? dnnl::memory::desc({g.O, g.C, g.kH, g.kW}, dt::f32, tag::oihw)
                       : dnnl::memory::desc({g.G, g.Og, g.Cg, g.kH, g.kW}, dt::f32, tag::goihw);
  if (with_bias) d.bias = dnnl::memory::desc({g.O}, dt::f32, tag::x);
  d.strides = {p.stride[0], p.stride[1]};
  d.dilates = {p.dilation[0] - 1, p.dilation[1] - 1};  // oneDNN counts the gaps
  d.pad_l = {p.padding[0], p.padding[1]};
  // ATen's floor division may leave the last input rows unread: a negative right padding.
  d.pad_r = {(g.oH - 1) * p.stride[0] + (g.kH - 1) * p.dilation[0] + 1 - g.H - p.padding[0],
             (g.oW - 1) * p.stride[1] + (g.kW - 1) * p.dilation[1] + 1 - g.W - p.padding[1]};
  return d;
}

dnnl::convolution_forward::primitive_desc forward_pd(
    const Descs& d, const dnnl::primitive_attr& attr = dnnl::primitive_attr()) {
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training,
                                       dnnl::algorithm::convolution_direct, d.src, d.weights,
                                       d.bias, d.dst, d.strides, d.dilates, d.pad_l, d.pad_r);
  return {desc, attr, onednn_engine()};
}

Blocked blocked(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted, bool into) {
  Blocked b{wanted, std::nullopt};
  if (plain != wanted)
    b.reorder = into ? dnnl::reorder(dnnl::reorder::primitive_desc(onednn_engine(), plain,
                                                                   onednn_engine(), wanted))
                     : dnnl::reorder(dnnl::reorder::primitive_desc(onednn_engine(), wanted,
                                                                   onednn_engine(), plain));
  return b;
}

// The weight gradient on plain layouts runs oneDNN's im2col + GEMM at a third of the rate of
// its blocked kernel, even counting the reorders in and out (measured on the 3x3 64 -> 64
// ResNet layer), so backward_weights lets oneDNN pick the layouts.
dnnl::convolution_backward_weights::primitive_desc backward_weights_pd(
    const Descs& d, const dnnl::convolution_forward::primitive_desc& fwd) {
  using tag = dnnl::memory::format_tag;
  auto any = [](const dnnl::memory::desc& md) {
    return dnnl::memory::desc(md.dims(), md.data_type(), tag::any);
  };
  dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, any(d.src),
                                                any(d.weights), d.bias, any(d.dst), d.strides,
                                                d.dilates, d.pad_l, d.pad_r);
  return {desc, onednn_engine(), fwd};
}

template <typename PD>
void accept(Primitive& p, const PD& pd) {
  p.impl = pd.impl_info_str();
  // The reference implementation is a naive scalar loop: the loop nest here beats it.
  p.usable = p.impl.find("ref") == std::string::npos;
}

// `with_bias`: the forward adds a bias / backward_weights also computes the bias gradient.
// `post`: the forward's epilogue.
const Primitive& primitive(const Geometry& g, Pass pass, bool with_bias, const PostOps& post = {}) {
  // A long-running program with ever-changing shapes must not grow the cache without bound.
  constexpr size_t kMaxCached = 256;
  thread_local std::unordered_map<Key, std::unique_ptr<Primitive>, KeyHash> cache;
  const auto& p = g.p;
  // oneDNN fixes its thread partition when the primitive is created: the thread count is part
  // of the key, so omp_set_num_threads() takes effect on the next call.
  Key key{static_cast<int64_t>(pass),
          g.N,
          g.C,
          g.H,
          g.W,
          g.O,
          g.kH,
          g.kW,
          p.stride[0],
          p.stride[1],
          p.padding[0],
          p.padding[1],
          p.dilation[0],
          p.dilation[1],
          g.G,
          with_bias,
          omp_get_max_threads(),
          post.key()};
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  if (cache.size() >= kMaxCached) cache.clear();
  auto prim = std::make_unique<Primitive>();
  try {
    Descs d = descs(g, with_bias && pass != Pass::backward_data);
    auto fwd = forward_pd(d);
    if (pass == Pass::forward && post.key() != 0) {
      dnnl::primitive_attr attr;
      // The residual is copied into dst and added by a sum post-op: oneDNN's GEMM-based
      // convolution runs a binary post-op about 6x slower than the convolution itself.
      attr.set_post_ops(epilogue_post_ops(post.activation, post.residual, post.residual_first,
                                          d.dst, nullptr, true));
      auto pd = forward_pd(d, attr);
      accept(*prim, pd);
      if (prim->usable) prim->prim = dnnl::convolution_forward(pd);
    } else if (pass == Pass::forward) {
      accept(*prim, fwd);
      if (prim->usable) prim->prim = dnnl::convolution_forward(fwd);
    } else if (pass == Pass::backward_data) {
      dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, d.src,
                                                 d.weights, d.dst, d.strides, d.dilates, d.pad_l,
                                                 d.pad_r);
      dnnl::convolution_backward_data::primitive_desc pd(desc, onednn_engine(), fwd);
      accept(*prim, pd);
      if (prim->usable) prim->prim = dnnl::convolution_backward_data(pd);
    } else {
      auto pd = backward_weights_pd(d, fwd);
      accept(*prim, pd);
      if (prim->usable) {
        prim->prim = dnnl::convolution_backward_weights(pd);
        prim->src = blocked(d.src, pd.src_desc(), true);
        prim->diff_dst = blocked(d.dst, pd.diff_dst_desc(), true);
        prim->diff_weights = blocked(d.weights, pd.diff_weights_desc(), false);
      }
    }
  } catch (const dnnl::error& e) {
    prim->impl = std::string("rejected: ") + e.what();
    prim->usable = false;
  }
  return *cache.emplace(key, std::move(prim)).first->second;
}

// Runs a usable primitive; `args` maps oneDNN argument ids to memory over our tensors.
void execute(const Primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
  prim.prim.execute(onednn_stream(), args);
  onednn_stream().wait();
}

dnnl::memory mem(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, onednn_engine(), t.impl()->data_bytes());
}

// Memory in layout `b.md` for the plain `user` memory: `user` itself, or a reordered copy held
// by `scratch` (the reorder runs when `copy_in`).
dnnl::memory in_layout(const Blocked& b, const dnnl::memory& user, Tensor& scratch, bool copy_in) {
  if (!b.reorder) return user;
  scratch = make_tensor({static_cast<int64_t>((b.md.get_size() + 3) / 4)}, DType::f32);
  dnnl::memory m = mem(b.md, scratch);
  if (copy_in) b.reorder->execute(onednn_stream(), {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, m}});
  return m;
}

// Runs a usable forward primitive of `g` (made with bias.defined()) into `out`, f32
// [N, O, oH, oW]; operands in another dtype or layout are made dense f32 first.
void run_forward(const Primitive& prim, const Geometry& g, const Tensor& input,
                 const Tensor& weight, const Tensor& bias, const Tensor& out) {
  Descs d = descs(g, bias.defined());
  Tensor in = dense(input, DType::f32), w = dense(weight, DType::f32);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, mem(d.src, in)},
                                             {DNNL_ARG_WEIGHTS, mem(d.weights, w)},
                                             {DNNL_ARG_DST, mem(d.dst, out)}};
  Tensor b;
  if (bias.defined()) {
    b = dense(bias, DType::f32);
    args.emplace(DNNL_ARG_BIAS, mem(d.bias, b));
  }
  execute(prim, args);
}

bool onednn_eligible(const Geometry& g) {
  // oneDNN rejects empty problems; the loop nests handle them (as no-ops or zero fills).
  return g.N > 0 && g.C > 0 && g.O > 0 && g.oH > 0 && g.oW > 0 &&
         fits_onednn_int({g.N, g.C, g.H, g.W, g.O, g.kH, g.kW, g.oH, g.oW, g.p.stride[0],
                          g.p.stride[1], g.p.padding[0], g.p.padding[1], g.p.dilation[0],
                          g.p.dilation[1], g.G});
}

}  // namespace

int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dil) {
  return (in + 2 * pad - dil * (kernel - 1) - 1) / stride + 1;
}

Tensor conv2d_loop(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const Conv2dParams& p) {
  const DType dtype = input.dtype();
  const DType compute = dtype == DType::f64 ? DType::f64 : DType::f32;
  Geometry g = geometry(input, weight, p);
  Tensor in = dense(input, compute), w = dense(weight, compute);
  Tensor b = bias.defined() ? dense(bias, compute) : Tensor();
  Tensor out = make_tensor({g.N, g.O, g.oH, g.oW}, compute);
  visit_dtype(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>)
      forward_loop<T>(g, in.data_ptr<T>(), w.data_ptr<T>(), b.defined() ? b.data_ptr<T>() : nullptr,
                      out.data_ptr<T>());
  });
  return compute == dtype ? out : contiguous_copy(out, dtype);
}

std::array<Tensor, 3> conv2d_backward_loop(const Tensor& grad_output, const Tensor& input,
                                           const Tensor& weight, const Conv2dParams& p,
                                           std::array<bool, 3> need) {
  const DType dtype = input.dtype();
  const DType compute = dtype == DType::f64 ? DType::f64 : DType::f32;
  Geometry g = geometry(input, weight, p);
  Tensor go = dense(grad_output, compute);
  std::array<Tensor, 3> r;
  visit_dtype(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if (need[0]) {
        Tensor w = dense(weight, compute);
        r[0] = make_tensor(input.sizes(), compute);
        backward_input_loop<T>(g, go.data_ptr<T>(), w.data_ptr<T>(), r[0].data_ptr<T>());
      }
      if (need[1]) {
        Tensor in = dense(input, compute);
        r[1] = make_tensor(weight.sizes(), compute);
        backward_weight_loop<T>(g, go.data_ptr<T>(), in.data_ptr<T>(), r[1].data_ptr<T>());
      }
      if (need[2]) {
        r[2] = make_tensor({g.O}, compute);
        backward_bias_loop<T>(g, go.data_ptr<T>(), r[2].data_ptr<T>());
      }
    }
  });
  if (compute != dtype)
    for (Tensor& t : r)
      if (t.defined()) t = contiguous_copy(t, dtype);
  return r;
}

std::string conv2d_backend(const Tensor& input, const Tensor& weight, const Conv2dParams& p) {
  if (input.dtype() == DType::f64) return "loop";
  Geometry g = geometry(input, weight, p);
  if (!onednn_eligible(g)) return "loop";
  const Primitive& prim = primitive(g, Pass::forward, false);
  return prim.usable ? "onednn:" + prim.impl : "loop";
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dParams& p) {
  Geometry g = geometry(input, weight, p);
  if (input.dtype() == DType::f64 || !onednn_eligible(g))
    return conv2d_loop(input, weight, bias, p);
  const Primitive& prim = primitive(g, Pass::forward, bias.defined());
  if (!prim.usable) return conv2d_loop(input, weight, bias, p);
  Tensor out = make_tensor({g.N, g.O, g.oH, g.oW}, DType::f32);
  run_forward(prim, g, input, weight, bias, out);
  return input.dtype() == DType::f32 ? out : contiguous_copy(out, input.dtype());
}

Tensor conv2d_epilogue(const Tensor& input, const Tensor& weight, const Conv2dParams& p,
                       const GemmEpilogue& e) {
  const Tensor& bias = e.bias;
  const Tensor& residual = e.residual;
  if (input.dtype() != DType::f32 || weight.dtype() != DType::f32 ||
      (bias.defined() && bias.dtype() != DType::f32) ||
      (residual.defined() && residual.dtype() != DType::f32) || input.dim() != 4 ||
      weight.dim() != 4)
    return {};
  Geometry g = geometry(input, weight, p);
  if (!onednn_eligible(g)) return {};
  const IntList out_sizes{g.N, g.O, g.oH, g.oW};
  if (residual.defined() && (!residual.is_contiguous() || residual.sizes() != out_sizes)) return {};
  const PostOps post{e.activation, residual.defined(), residual.defined() && e.residual_first};
  const Primitive& prim = primitive(g, Pass::forward, bias.defined(), post);
  if (!prim.usable) return {};
  Tensor out = make_tensor(out_sizes, DType::f32);
  if (residual.defined())
    std::memcpy(out.impl()->data_bytes(), residual.impl()->data_bytes(),
                static_cast<size_t>(residual.numel()) * sizeof(float));  // the sum post-op's
  run_forward(prim, g, input, weight, bias, out);
  return out;
}

std::array<Tensor, 3> conv2d_backward(const Tensor& grad_output, const Tensor& input,
                                      const Tensor& weight, const Conv2dParams& p,
                                      std::array<bool, 3> need) {
  Geometry g = geometry(input, weight, p);
  const DType dtype = input.dtype();
  if (dtype == DType::f64 || !onednn_eligible(g))
    return conv2d_backward_loop(grad_output, input, weight, p, need);
  Descs d = descs(g, need[2]);
  Tensor go = dense(grad_output, DType::f32);
  std::array<Tensor, 3> r;
  if (need[0]) {
    const Primitive& prim = primitive(g, Pass::backward_data, false);
    if (prim.usable) {
      Tensor w = dense(weight, DType::f32);
      r[0] = make_tensor(input.sizes(), DType::f32);
      execute(prim, {{DNNL_ARG_DIFF_DST, mem(d.dst, go)},
                     {DNNL_ARG_WEIGHTS, mem(d.weights, w)},
                     {DNNL_ARG_DIFF_SRC, mem(d.src, r[0])}});
    } else {
      r[0] = conv2d_backward_loop(go, input, weight, p, {true, false, false})[0];
    }
  }
  if (need[1] || need[2]) {
    const Primitive& prim = primitive(g, Pass::backward_weights, need[2]);
    if (prim.usable) {
      Tensor in = dense(input, DType::f32);
      // oneDNN always produces the weight gradient; when only the bias one is wanted the
      // weight result is scratch.
      Tensor gw = make_tensor(weight.sizes(), DType::f32);
      Tensor src_scratch, dst_scratch, gw_scratch;
      dnnl::memory gw_user = mem(d.weights, gw);
      dnnl::memory gw_mem = in_layout(prim.diff_weights, gw_user, gw_scratch, false);
      std::unordered_map<int, dnnl::memory> args{
          {DNNL_ARG_SRC, in_layout(prim.src, mem(d.src, in), src_scratch, true)},
          {DNNL_ARG_DIFF_DST, in_layout(prim.diff_dst, mem(d.dst, go), dst_scratch, true)},
          {DNNL_ARG_DIFF_WEIGHTS, gw_mem}};
      if (need[2]) {
        r[2] = make_tensor({g.O}, DType::f32);
        args.emplace(DNNL_ARG_DIFF_BIAS, mem(d.bias, r[2]));
      }
      execute(prim, args);
      if (prim.diff_weights.reorder) {
        prim.diff_weights.reorder->execute(onednn_stream(),
                                           {{DNNL_ARG_FROM, gw_mem}, {DNNL_ARG_TO, gw_user}});
        onednn_stream().wait();
      }
      if (need[1]) r[1] = gw;
    } else {
      auto lr = conv2d_backward_loop(go, input, weight, p, {false, need[1], need[2]});
      r[1] = lr[1];
      r[2] = lr[2];
    }
  }
  for (Tensor& t : r)
    if (t.defined() && t.dtype() != dtype) t = contiguous_copy(t, dtype);
  return r;
}

}  // namespace aotgrad::kernels
