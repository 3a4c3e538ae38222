// Attention rows: aotgrad.masked_attention and its backward, the fused form of the eager
// composite softmax(masked_fill((q @ k^T) * scale, mask, -inf), -1) @ v (kernels/attention.h).
// User code does not call them: the fuse_attention graph pass (graph/fuse_attention.h) puts them
// into traced graphs in place of the composite, so a compiled function runs one kernel where the
// eager one runs nine ops and saves the heads where they lie rather than their contiguous clones.
//
// The rows are ours (aotgrad.*), not ATen's _scaled_dot_product_* rows: ATen's boolean attn_mask
// means "take part", masked_fill's means "masked out", and ATen's CPU flash row takes only an
// additive float mask; a row with masked_fill's reading keeps the rewrite exact.
//
// The VJP calls the backward row, which recomputes the weights from q, k and the mask (nothing
// [*, T, S] is saved). Under create_graph it computes the same gradients from differentiable ops
// instead, so double backward works through the fused row too.
#include "ops/attention.h"

#include <cmath>
#include <limits>
#include <string>

#include "aotgrad/indexing.h"
#include "aotgrad/ops.h"
#include "kernels/attention.h"
#include "ops/families.h"
#include "ops/norm_grad.h"
#include "ops/row_helpers.h"
#include "tensor/checked_math.h"

namespace aotgrad::ops {
namespace {

constexpr std::string_view kForward = "aotgrad.masked_attention.default";
constexpr std::string_view kBackward = "aotgrad.masked_attention_backward.default";

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + shape_to_string(t.sizes());
}

// Checks q [*, T, D], k [*, S, D], v [*, S, Dv] and the mask; returns the output's sizes.
IntList attention_sizes(std::string_view op, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& mask) {
  if (q.dtype() != DType::f32 && q.dtype() != DType::f64)
    fail(op, "query must be f32 or f64, got " + describe(q));
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
    fail(op, "query, key and value must share one dtype, got " + describe(q) + ", " + describe(k) +
                 ", " + describe(v));
  if (q.dim() < 2 || k.dim() != q.dim() || v.dim() != q.dim())
    fail(op,
         "query, key and value must be [*, T, D], [*, S, D] and [*, S, Dv] with the same "
         "batch dims, got " +
             describe(q) + ", " + describe(k) + ", " + describe(v));
  for (int64_t d = 0; d + 2 < q.dim(); ++d)
    if (k.size(d) != q.size(d) || v.size(d) != q.size(d))
      fail(op, "query, key and value must share their batch dims, got " + describe(q) + ", " +
                   describe(k) + ", " + describe(v));
  if (k.size(-1) != q.size(-1) || v.size(-2) != k.size(-2))
    fail(op, "key must be [*, S, D] for query [*, T, D] and value [*, S, Dv], got query " +
                 describe(q) + ", key " + describe(k) + ", value " + describe(v));
  IntList weights = q.sizes();
  weights.back() = k.size(-2);
  if (mask.defined()) {
    bool fits = mask.dtype() == DType::b8 && mask.dim() <= q.dim();
    for (int64_t d = 1; fits && d <= mask.dim(); ++d)
      fits = mask.size(-d) == 1 || mask.size(-d) == weights[weights.size() - size_t(d)];
    if (!fits)
      fail(op, "mask must be bool and broadcast to the weights " + shape_to_string(weights) +
                   ", got " + describe(mask));
  }
  // The kernels hold up to three [T, S] blocks of weights (f64: 8 bytes each) per thread.
  if (!checked_numel(std::initializer_list<int64_t>{q.size(-2), k.size(-2), 3, 8}))
    fail(op, "the weights of one batch entry, [T, S] = [" + std::to_string(q.size(-2)) + ", " +
                 std::to_string(k.size(-2)) +
                 "], are too large to hold (their byte count overflows); use shorter sequences");
  IntList out = q.sizes();
  out.back() = v.size(-1);
  return out;
}

std::vector<TensorMeta> attention_meta(const OpArgs& a) {
  const Tensor& q = tensor_arg(a, 0);
  return {TensorMeta::contiguous(
      attention_sizes(kForward, q, tensor_arg(a, 1), tensor_arg(a, 2), optional_tensor(a, 3)),
      q.dtype())};
}

std::vector<Tensor> attention_kernel(const OpArgs& a) {
  attention_meta(a);
  return {kernels::masked_attention(tensor_arg(a, 0), tensor_arg(a, 1), tensor_arg(a, 2),
                                    optional_tensor(a, 3), float_arg(a, 4))};
}

// The backward from differentiable ops (create_graph), the composite's own VJPs in order.
std::vector<Tensor> differentiable_backward(const Tensor& g, const Tensor& q, const Tensor& k,
                                            const Tensor& v, const Tensor& mask, double scale) {
  Tensor s = mul(matmul(q, k.transpose(-2, -1)), Scalar(scale));
  if (mask.defined()) s = masked_fill(s, mask, Scalar(-std::numeric_limits<double>::infinity()));
  Tensor p = softmax(s, -1);
  Tensor dp = matmul(g, v.transpose(-2, -1));
  Tensor ds = mul(p, sub(dp, sum(mul(dp, p), {-1}, true)));
  if (mask.defined()) ds = masked_fill(ds, mask, Scalar(0.0));
  ds = mul(ds, Scalar(scale));
  return {matmul(ds, k), matmul(ds.transpose(-2, -1), q), matmul(p.transpose(-2, -1), g)};
}

std::vector<Tensor> attention_vjp(const VjpContext& c) {
  std::vector<Tensor> grads(c.args.size() > 3 && !is_none(c.args, 3) ? 4 : 3);
  if (!c.grad(0).defined() || !(c.needs(0) || c.needs(1) || c.needs(2))) return grads;
  const Tensor mask = optional_tensor(c.args, 3);
  const double scale = float_arg(c.args, 4);
  std::vector<Tensor> r;
  if (recording_backward({c.grad(0), c.input(0), c.input(1), c.input(2)})) {
    r = differentiable_backward(c.grad(0), c.input(0), c.input(1), c.input(2), mask, scale);
  } else {
    static const OpDef& backward = lookup(kBackward);
    const IntList need{c.needs(0), c.needs(1), c.needs(2)};
    r = dispatch(backward, {c.grad(0), c.input(0), c.input(1), c.input(2),
                            mask.defined() ? Arg(mask) : Arg(std::monostate{}), scale, need});
  }
  for (size_t i = 0; i < 3; ++i)
    if (c.needs(i)) grads[i] = r[i];
  return grads;
}

std::array<bool, 3> output_mask_of(const OpArgs& a) {
  return output_mask_arg(kBackward, a, 6, "grad_query, grad_key, grad_value");
}

std::vector<TensorMeta> attention_backward_meta(const OpArgs& a) {
  const Tensor &g = tensor_arg(a, 0), &q = tensor_arg(a, 1), &k = tensor_arg(a, 2),
               &v = tensor_arg(a, 3);
  IntList out = attention_sizes(kBackward, q, k, v, optional_tensor(a, 4));
  if (g.sizes() != out || g.dtype() != q.dtype())
    fail(kBackward, "grad_out must be " + std::string(dtype_name(q.dtype())) +
                        shape_to_string(out) + ", got " + describe(g));
  std::array<bool, 3> need = output_mask_of(a);
  const std::array<const Tensor*, 3> like{&q, &k, &v};
  std::vector<TensorMeta> metas;
  for (size_t i = 0; i < 3; ++i)
    metas.push_back(TensorMeta::contiguous(need[i] ? like[i]->sizes() : IntList{0}, q.dtype()));
  return metas;
}

// The backward row's results for its arguments `a` (checked), each gradient not asked for an
// empty [0] tensor; with `with_output`, the forward's output from the same weights after them.
std::vector<Tensor> backward_results(const OpArgs& a, bool with_output,
                                     const std::array<Tensor, 3>& into = {}) {
  attention_backward_meta(a);
  const std::array<bool, 3> need = output_mask_of(a);
  const Tensor &g = tensor_arg(a, 0), &q = tensor_arg(a, 1), &k = tensor_arg(a, 2),
               &v = tensor_arg(a, 3), mask = optional_tensor(a, 4);
  std::vector<Tensor> r(with_output ? 4 : 3);
  if (with_output) {
    std::array<Tensor, 4> all =
        kernels::masked_attention_with_backward(g, q, k, v, mask, float_arg(a, 5), need, into);
    std::move(all.begin(), all.end(), r.begin());
  } else {
    std::array<Tensor, 3> grads =
        kernels::masked_attention_backward(g, q, k, v, mask, float_arg(a, 5), need, into);
    std::move(grads.begin(), grads.end(), r.begin());
  }
  for (size_t i = 0; i < 3; ++i)
    if (!need[i]) r[i] = make_tensor({0}, q.dtype());
  return r;
}

std::vector<Tensor> attention_backward_kernel(const OpArgs& a) {
  return backward_results(a, false);
}

}  // namespace

std::vector<Tensor> masked_attention_with_backward(const OpArgs& a,
                                                   const std::array<Tensor, 3>& into) {
  return backward_results(a, true, into);
}

std::vector<Tensor> masked_attention_backward_into(const OpArgs& a,
                                                   const std::array<Tensor, 3>& into) {
  return backward_results(a, false, into);
}

namespace {

const OpDef kRows[] = {
    {.name = kForward,
     .schema = "masked_attention(Tensor query, Tensor key, Tensor value, Tensor? mask, "
               "float scale) -> Tensor",
     .meta = attention_meta,
     .kernel = attention_kernel,
     .vjp = attention_vjp,
     .saves = {.inputs = bit(0) | bit(1) | bit(2) | bit(3)},
     .recompute = Recompute::compute_heavy},
    {.name = kBackward,
     .schema = "masked_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, "
               "Tensor? mask, float scale, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
     .meta = attention_backward_meta,
     .kernel = attention_backward_kernel,
     .recompute = Recompute::compute_heavy},
};

}  // namespace

std::span<const OpDef> attention_ops() {
  return kRows;
}

}  // namespace aotgrad::ops
