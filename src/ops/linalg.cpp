// Linear-algebra rows (mm, bmm, addmm) and the matmul / linear composites.
//
// matmul follows ATen's _matmul_impl: vector and matrix cases go to mm; a batched operand
// against a vector or matrix is folded into one mm when that costs no copy (or when the batched
// side requires grad, so the backward does not materialize an expanded gradient); everything
// else broadcasts the batch dims and runs bmm. linear is addmm for 2-D inputs with a bias (as
// PyTorch's decomposition), matmul + add otherwise.
#include <stdexcept>
#include <string>

#include "aotgrad/ops.h"
#include "kernels/gemm.h"
#include "ops/families.h"
#include "tensor/iter.h"

namespace aotgrad::ops {
namespace {

void check_rank(const char* op, const char* arg, const Tensor& t, int64_t rank) {
  if (t.dim() != rank)
    throw std::invalid_argument(std::string(op) + ": expected '" + arg + "' to be " +
                                std::to_string(rank) + "-D, got shape " +
                                shape_to_string(t.sizes()) + "; use matmul for other ranks");
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw std::invalid_argument(std::string(op) +
                                ": expected both operands to have the same "
                                "dtype, got " +
                                std::string(dtype_name(a.dtype())) + " and " +
                                std::string(dtype_name(b.dtype())) + "; convert one with .to()");
  if (a.dtype() == DType::b8)
    throw std::invalid_argument(std::string(op) +
                                ": bool operands are not supported; convert "
                                "them with .to(f32) or .to(i64)");
}

void check_inner(const char* op, const Tensor& a, const Tensor& b, int64_t a_dim, int64_t b_dim) {
  if (a.size(a_dim) != b.size(b_dim))
    throw std::invalid_argument(std::string(op) + ": shapes " + shape_to_string(a.sizes()) +
                                " and " + shape_to_string(b.sizes()) +
                                " cannot be multiplied: the first has " +
                                std::to_string(a.size(a_dim)) + " columns, the second " +
                                std::to_string(b.size(b_dim)) + " rows");
}

Tensor scaled(const Tensor& t, const Scalar& s) {
  return s.to_double() == 1.0 ? t : mul(t, s);
}

// ---- the layout contract of product gradients ----
//
// A gradient comes back in the memory layout of the tensor it belongs to, as PyTorch's
// mm_mat1_backward / mm_mat2_backward choose: for an operand stored transposed (the weight of
// linear, which reaches addmm as t(weight)), the product is computed in the transposed order,
// (a @ b)^T = b^T @ a^T, so its transpose is the operand's layout and AccumulateGrad keeps it
// without a copy. A product is contiguous, so nothing else is needed for row-major operands.

// The matrices of `m` (its last two dims) are stored transposed: swapping them gives a
// contiguous tensor, and m itself is not contiguous (size-1 dims make both true; keep row-major).
// Read from the sizes and strides alone: an input saved as metadata only (its data not needed by
// the gradients wanted, SaveMask::read_by) is a fake no op may run on.
bool stored_transposed(const Tensor& m) {
  if (m.is_contiguous() || m.dim() < 2) return false;
  IntList sizes = m.sizes(), strides = m.strides();
  std::swap(sizes[sizes.size() - 1], sizes[sizes.size() - 2]);
  std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  int64_t expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// d(a @ b)/da = g @ b^T, laid out like `a`.
Tensor mm_grad_a(const Tensor& g, const Tensor& a, const Tensor& b) {
  if (stored_transposed(a)) return t(mm(b, t(g)));
  return mm(g, t(b));
}

// d(a @ b)/db = a^T @ g, laid out like `b`.
Tensor mm_grad_b(const Tensor& g, const Tensor& a, const Tensor& b) {
  if (stored_transposed(b)) return t(mm(t(g), a));
  return mm(t(a), g);
}

Tensor bmm_grad_a(const Tensor& g, const Tensor& a, const Tensor& b) {
  if (stored_transposed(a)) return transpose(bmm(b, transpose(g, 1, 2)), 1, 2);
  return bmm(g, transpose(b, 1, 2));
}

Tensor bmm_grad_b(const Tensor& g, const Tensor& a, const Tensor& b) {
  if (stored_transposed(b)) return transpose(bmm(transpose(g, 1, 2), a), 1, 2);
  return bmm(transpose(a, 1, 2), g);
}

// ---- mm ----

std::vector<TensorMeta> mm_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const Tensor& mat2 = tensor_arg(a, 1);
  check_rank("mm", "self", self, 2);
  check_rank("mm", "mat2", mat2, 2);
  check_same_dtype("mm", self, mat2);
  check_inner("mm", self, mat2, 1, 0);
  return {TensorMeta::contiguous({self.size(0), mat2.size(1)}, self.dtype())};
}
std::vector<Tensor> mm_kernel(const OpArgs& a) {
  mm_meta(a);
  return {kernels::mm(tensor_arg(a, 0), tensor_arg(a, 1))};
}
std::vector<Tensor> mm_vjp(const VjpContext& c) {
  const Tensor& g = c.grad();
  Tensor ga = c.needs(0) ? mm_grad_a(g, c.input(0), c.input(1)) : Tensor();
  Tensor gb = c.needs(1) ? mm_grad_b(g, c.input(0), c.input(1)) : Tensor();
  return {ga, gb};
}

// ---- bmm ----

std::vector<TensorMeta> bmm_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const Tensor& mat2 = tensor_arg(a, 1);
  check_rank("bmm", "self", self, 3);
  check_rank("bmm", "mat2", mat2, 3);
  check_same_dtype("bmm", self, mat2);
  if (self.size(0) != mat2.size(0))
    throw std::invalid_argument("bmm: batch sizes differ: self has " +
                                std::to_string(self.size(0)) + " matrices, mat2 has " +
                                std::to_string(mat2.size(0)) +
                                "; use matmul to broadcast batch dims");
  check_inner("bmm", self, mat2, 2, 1);
  return {TensorMeta::contiguous({self.size(0), self.size(1), mat2.size(2)}, self.dtype())};
}
std::vector<Tensor> bmm_kernel(const OpArgs& a) {
  bmm_meta(a);
  return {kernels::bmm(tensor_arg(a, 0), tensor_arg(a, 1))};
}
std::vector<Tensor> bmm_vjp(const VjpContext& c) {
  const Tensor& g = c.grad();
  Tensor ga = c.needs(0) ? bmm_grad_a(g, c.input(0), c.input(1)) : Tensor();
  Tensor gb = c.needs(1) ? bmm_grad_b(g, c.input(0), c.input(1)) : Tensor();
  return {ga, gb};
}

// ---- addmm ----

std::vector<TensorMeta> addmm_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const Tensor& mat1 = tensor_arg(a, 1);
  const Tensor& mat2 = tensor_arg(a, 2);
  check_rank("addmm", "mat1", mat1, 2);
  check_rank("addmm", "mat2", mat2, 2);
  check_same_dtype("addmm", mat1, mat2);
  check_same_dtype("addmm", self, mat1);
  check_inner("addmm", mat1, mat2, 1, 0);
  IntList out{mat1.size(0), mat2.size(1)};
  if (self.dim() > 2 || broadcast_shapes(self.sizes(), out) != out)
    throw std::invalid_argument("addmm: 'self' of shape " + shape_to_string(self.sizes()) +
                                " does not broadcast to the product's shape " +
                                shape_to_string(out));
  return {TensorMeta::contiguous(out, mat1.dtype())};
}
std::vector<Tensor> addmm_kernel(const OpArgs& a) {
  addmm_meta(a);
  return {kernels::addmm(tensor_arg(a, 0), tensor_arg(a, 1), tensor_arg(a, 2), scalar_arg(a, 3),
                         scalar_arg(a, 4))};
}
std::vector<Tensor> addmm_vjp(const VjpContext& c) {
  const Tensor& g = c.grad();
  const Scalar beta = scalar_arg(c.args, 3), alpha = scalar_arg(c.args, 4);
  Tensor gs = c.needs(0) ? sum_to_size(scaled(g, beta), c.input(0).sizes()) : Tensor();
  Tensor g1 = c.needs(1) ? scaled(mm_grad_a(g, c.input(1), c.input(2)), alpha) : Tensor();
  Tensor g2 = c.needs(2) ? scaled(mm_grad_b(g, c.input(1), c.input(2)), alpha) : Tensor();
  return {gs, g1, g2};
}

const OpDef kRows[] = {
    {.name = "aten.mm.default",
     .schema = "mm(Tensor self, Tensor mat2) -> Tensor",
     .meta = mm_meta,
     .kernel = mm_kernel,
     .vjp = mm_vjp,
     // derivatives.yaml: self: grad @ mat2^T, mat2: self^T @ grad: each read by the other's
     // gradient only.
     .saves = {.inputs = bit(0) | bit(1), .read_by = {bit(1), bit(0)}},
     .recompute = Recompute::compute_heavy},
    {.name = "aten.bmm.default",
     .schema = "bmm(Tensor self, Tensor mat2) -> Tensor",
     .meta = bmm_meta,
     .kernel = bmm_kernel,
     .vjp = bmm_vjp,
     .saves = {.inputs = bit(0) | bit(1), .read_by = {bit(1), bit(0)}},
     .recompute = Recompute::compute_heavy},
    {.name = "aten.addmm.default",
     .schema = "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) "
               "-> Tensor",
     .meta = addmm_meta,
     .kernel = addmm_kernel,
     .vjp = addmm_vjp,
     // As mm: mat1 is read by mat2's gradient only, and mat2 by mat1's.
     .saves = {.inputs = bit(1) | bit(2), .read_by = {0, bit(2), bit(1)}},
     .recompute = Recompute::compute_heavy},
};

// ---- matmul helpers ----

// addmm is not part of the public API (linear is); composites reach the row through this.
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2) {
  static const OpDef& def = lookup("aten.addmm.default");
  return call1(def, {self, mat1, mat2});
}

IntList drop_last(const IntList& s, size_t n) {
  return IntList(s.begin(), s.end() - n);
}

IntList concat(IntList a, const IntList& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ATen's should_fold: can the larger operand (batched, >= 3-D) be folded into the rows of one
// mm against the smaller (1-D or 2-D) operand?
bool should_fold(const Tensor& a, const Tensor& b) {
  const bool a_larger = a.dim() >= b.dim();
  const Tensor& big = a_larger ? a : b;
  const int64_t dim_big = big.dim(), dim_small = a_larger ? b.dim() : a.dim();
  if (!(dim_big >= 3 && dim_small <= 2)) return false;
  // Folding copies here, but avoids an expanded [batch, ...] gradient for the small operand.
  if (big.requires_grad()) return true;
  // 2-D @ batched would need the mm result transposed and copied back.
  if (a.dim() == 2) return false;
  if (big.numel() == 0) return true;
  // big (transposed when it is b) views as [-1, last] without a copy only when its leading
  // dims are mutually contiguous.
  IntList sizes = big.sizes(), strides = big.strides();
  if (!a_larger) {
    std::swap(sizes[dim_big - 1], sizes[dim_big - 2]);
    std::swap(strides[dim_big - 1], strides[dim_big - 2]);
  }
  for (int64_t i = 0; i < dim_big - 2; ++i)
    if (strides[i] != strides[i + 1] * sizes[i + 1]) return false;
  return true;
}

Tensor matmul_folded(const Tensor& a, const Tensor& b) {
  const bool transposed = b.dim() > a.dim();
  const Tensor t1 = transposed ? transpose(b, -2, -1) : a;
  const Tensor t2 = !transposed ? b : a.dim() == 2 ? t(a) : a;
  IntList out_shape = drop_last(t1.sizes(), 1);
  const int64_t folded = numel_of(out_shape);
  const Tensor t1_folded = reshape(t1, {folded, t1.sizes().back()});
  if (t2.dim() == 2) {
    out_shape.push_back(t2.size(1));
    Tensor out = view(mm(t1_folded, t2), out_shape);
    return transposed ? contiguous(transpose(out, -2, -1)) : out;
  }
  return view(mm(t1_folded, unsqueeze(t2, 1)), out_shape);
}

Tensor matmul_batched(const Tensor& a, const Tensor& b) {
  const int64_t n = a.dim() > 1 ? a.size(-2) : 1, m1 = a.size(-1);
  const int64_t m2 = b.dim() > 1 ? b.size(-2) : b.size(0), p = b.dim() > 1 ? b.size(-1) : 1;
  const IntList batch_a = a.dim() > 1 ? drop_last(a.sizes(), 2) : IntList{};
  const IntList batch_b = b.dim() > 1 ? drop_last(b.sizes(), 2) : IntList{};
  const IntList batch = broadcast_shapes(batch_a, batch_b);
  const int64_t batch_numel = numel_of(batch);
  IntList out_shape = batch;
  if (a.dim() > 1) out_shape.push_back(n);
  if (b.dim() > 1) out_shape.push_back(p);
  Tensor a3 = reshape(expand(a, concat(batch, {n, m1})), {batch_numel, n, m1});
  Tensor b3 = b.dim() == 1
                  ? unsqueeze(reshape(expand(b, concat(batch, {m2})), {batch_numel, m2}), 2)
                  : reshape(expand(b, concat(batch, {m2, p})), {batch_numel, m2, p});
  return view(bmm(a3, b3), out_shape);
}

}  // namespace

std::span<const OpDef> linalg_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor mm(const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.mm.default");
  return ops::call1(def, {a, b});
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.bmm.default");
  return ops::call1(def, {a, b});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  const int64_t da = a.dim(), db = b.dim();
  if (da == 0 || db == 0)
    throw std::invalid_argument("matmul: both arguments need at least 1 dim, got shapes " +
                                shape_to_string(a.sizes()) + " and " + shape_to_string(b.sizes()) +
                                "; use mul for scalars");
  const int64_t inner_b = db == 1 ? b.size(0) : b.size(-2);
  if (a.size(-1) != inner_b)
    throw std::invalid_argument("matmul: shapes " + shape_to_string(a.sizes()) + " and " +
                                shape_to_string(b.sizes()) +
                                " cannot be multiplied: the last "
                                "dim of the first (" +
                                std::to_string(a.size(-1)) + ") must equal the " +
                                (db == 1 ? "size" : "second-to-last dim") + " of the second (" +
                                std::to_string(inner_b) + ")");
  if (da == 1 && db == 1) return view(mm(unsqueeze(a, 0), unsqueeze(b, 1)), {});
  if (da == 2 && db == 1) return view(mm(a, unsqueeze(b, 1)), {a.size(0)});
  if (da == 1 && db == 2) return view(mm(unsqueeze(a, 0), b), {b.size(1)});
  if (da == 2 && db == 2) return mm(a, b);
  if (ops::should_fold(a, b)) return ops::matmul_folded(a, b);
  return ops::matmul_batched(a, b);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.dim() != 2)
    throw std::invalid_argument(
        "linear: weight must be 2-D [out_features, in_features], got "
        "shape " +
        shape_to_string(weight.sizes()));
  if (bias.defined() && bias.dim() > 2)
    throw std::invalid_argument("linear: bias must be 1-D [out_features], got shape " +
                                shape_to_string(bias.sizes()));
  if (bias.defined() && x.dim() == 2) return ops::addmm(bias, x, t(weight));
  if (bias.defined() && x.dim() >= 3 && x.is_contiguous() && x.size(-1) == weight.size(1)) {
    // Contiguous batched input: flatten to rows and keep the fused addmm.
    IntList lead(x.sizes().begin(), x.sizes().end() - 1);
    Tensor flat = view(x, {numel_of(lead), x.size(-1)});
    lead.push_back(weight.size(0));
    return view(ops::addmm(bias, flat, t(weight)), lead);
  }
  Tensor out = matmul(x, t(weight));
  return bias.defined() ? add(out, bias) : out;
}

}  // namespace aotgrad
