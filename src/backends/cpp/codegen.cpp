#include "backends/cpp/codegen.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace aotgrad::backends::cpp {
namespace {

// f32 exp, erf and tanh as branch-free inline code, so that the loops calling them vectorize
// in full (16 lanes with AVX-512), with the same bits in a loop's vector body and its remainder
// (libmvec would give 8 lanes, a scalar fallback for every vector holding -inf or a value whose
// result is subnormal, and other bits than libm's).
// Maximum error over every float, checked exhaustively against double precision: exp 1.01 ulp,
// erf 1.18 ulp, tanh 1.33 ulp (SLEEF's u10 functions, which the eager kernels call, are within
// 1 ulp; libmvec within 4). NaN, ±inf, overflow and subnormal results keep IEEE behaviour.
// exp: Cephes' reduction x = n ln2 + r and degree-6 polynomial; erf and tanh: x P(x^2) near 0,
// then 1 - exp(Q(|x|)) (Q fitted to log erfc) and 1 - 2 / (exp(2|x|) + 1). f64 keeps <cmath>.
constexpr const char* kMathHelpers = R"(
static inline float ag_bits_to_float(int32_t i) { return __builtin_bit_cast(float, i); }
// exp(r) for |r| <= ln2 / 2, x = n ln2 + r.
static inline float ag_exp_reduced(float x, float n) {
  float r = __builtin_fmaf(n, -0.693359375f, x);
  r = __builtin_fmaf(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = __builtin_fmaf(p, r, 1.3981999507e-3f);
  p = __builtin_fmaf(p, r, 8.3334519073e-3f);
  p = __builtin_fmaf(p, r, 4.1665795894e-2f);
  p = __builtin_fmaf(p, r, 1.6666665459e-1f);
  p = __builtin_fmaf(p, r, 5.0000001201e-1f);
  return __builtin_fmaf(p, r * r, r) + 1.0f;
}
static inline float ag_exp(float x) {
  // Below -104 (and at -inf) the result is 0 without computing a subnormal: an x86 instruction
  // producing one takes a microcode assist, which rows of masked (-inf) logits would hit often.
  const bool nan = x != x, zero = x < -104.0f;
  const float xc = nan || zero ? 0.0f : (x > 89.0f ? 89.0f : x);
  const float n = __builtin_rintf(xc * 1.44269504088896341f);
  const int32_t n1 = static_cast<int32_t>(n) >> 1, n2 = static_cast<int32_t>(n) - n1;
  const float y = ag_exp_reduced(xc, n) * ag_bits_to_float((n1 + 127) << 23) *
                  ag_bits_to_float((n2 + 127) << 23);
  return nan ? x : (zero ? 0.0f : y);
}
// exp(x) for finite x in [-87, 88]: no special cases, one exponent scaling.
static inline float ag_exp_finite(float x) {
  const float n = __builtin_rintf(x * 1.44269504088896341f);
  return ag_exp_reduced(x, n) * ag_bits_to_float((static_cast<int32_t>(n) + 127) << 23);
}
static inline float ag_erf(float x) {
  const float a = __builtin_fabsf(x), t = a < 3.95f ? a : 3.95f, s = x * x;
  float p = 8.423202208e-05f;
  p = __builtin_fmaf(p, s, -8.156600449e-04f);
  p = __builtin_fmaf(p, s, 5.202417720e-03f);
  p = __builtin_fmaf(p, s, -2.686005105e-02f);
  p = __builtin_fmaf(p, s, 1.128371002e-01f);
  p = __builtin_fmaf(p, s, -3.761263504e-01f);
  p = __builtin_fmaf(p, s, 1.283791670e-01f);
  const float small = __builtin_fmaf(x, p, x);
  float q = 3.163781017e-08f;
  q = __builtin_fmaf(q, t, 9.561424613e-07f);
  q = __builtin_fmaf(q, t, -3.967658737e-05f);
  q = __builtin_fmaf(q, t, 5.626662363e-04f);
  q = __builtin_fmaf(q, t, -4.644772850e-03f);
  q = __builtin_fmaf(q, t, 2.616952630e-02f);
  q = __builtin_fmaf(q, t, -1.097211286e-01f);
  q = __builtin_fmaf(q, t, -6.321473092e-01f);
  q = __builtin_fmaf(q, t, -1.130069891e+00f);
  q = __builtin_fmaf(q, t, 2.840850349e-04f);
  const float big = __builtin_copysignf(1.0f - ag_exp_finite(q), x);
  return a <= 0.92f ? small : (x != x ? x : big);
}
static inline float ag_tanh(float x) {
  const float a = __builtin_fabsf(x), s = x * x;
  float p = 2.142214346e-03f;
  p = __builtin_fmaf(p, s, -8.176142211e-03f);
  p = __builtin_fmaf(p, s, 2.169988911e-02f);
  p = __builtin_fmaf(p, s, -5.394650653e-02f);
  p = __builtin_fmaf(p, s, 1.333320198e-01f);
  p = __builtin_fmaf(p, s, -3.333333052e-01f);
  p = __builtin_fmaf(p, s, -6.205969700e-11f);
  const float small = __builtin_fmaf(x, p, x);
  const float e = ag_exp_finite(2.0f * a < 40.0f ? 2.0f * a : 40.0f);
  const float big = __builtin_copysignf(1.0f - 2.0f / (e + 1.0f), x);
  return a <= 0.625f ? small : (x != x ? x : big);
}
static inline double ag_exp(double x) { return std::exp(x); }
static inline double ag_erf(double x) { return std::erf(x); }
static inline double ag_tanh(double x) { return std::tanh(x); }
)";

// The math functions the fused code calls instead of <cmath>'s (kMathHelpers).
std::string with_own_math(std::string expr) {
  static const char* const names[][2] = {
      {"std::exp(", "ag_exp("}, {"std::erf(", "ag_erf("}, {"std::tanh(", "ag_tanh("}};
  for (const auto& [from, to] : names)
    for (size_t at = expr.find(from); at != std::string::npos; at = expr.find(from, at))
      expr.replace(at, std::string_view(from).size(), to);
  return expr;
}

const char* c_type(DType t) {
  switch (t) {
    case DType::f32:
      return "float";
    case DType::f64:
      return "double";
    case DType::b8:
      return "bool";
    default:
      return "?";
  }
}

// The type a node computes in: its result's when floating, else (a comparison) the widest
// floating input's. Scalars of the node are converted to it, as the eager kernels do.
DType compute_dtype(const graph::Graph& g, const graph::Node& n) {
  DType out = g.value(n.outputs[0]).meta.dtype;
  if (out != DType::b8) return out;
  DType widest = DType::f32;
  for (const graph::NodeArg& a : n.args)
    for (graph::ValueId v : graph::arg_values(a))
      if (g.value(v).meta.dtype == DType::f64) widest = DType::f64;
  return widest;
}

std::string var(uint32_t value) {
  return "v" + std::to_string(value);
}

// How many of the kernel's outputs are pointwise values (all but a reduction's, which is last).
size_t pointwise_outputs(const Kernel& k) {
  return k.outputs.size() - (k.reduction == Reduction::none ? 0 : 1);
}

// The node's fusion expression with a/b/c renamed to its operands' variables and sN to its
// scalar variables.
std::string node_expr(const graph::Node& n, uint32_t scalar_base) {
  std::vector<uint32_t> operands;
  const auto& schema = n.op->parsed_schema().args;
  for (size_t k = 0; k < n.args.size(); ++k)
    if (schema[k].type == ops::ArgType::tensor)
      operands.push_back(std::get<graph::ValueId>(n.args[k]).index);
  std::string out;
  for (const std::string& tok : expr_tokens(n.op->fusion_expr)) {
    if (tok.size() == 1 && tok[0] >= 'a' && tok[0] <= 'c')
      out += var(operands[tok[0] - 'a']);
    else if (tok.size() == 2 && tok[0] == 's' && tok[1] >= '0' && tok[1] <= '9')
      out += "sc" + std::to_string(scalar_base + (tok[1] - '0'));
    else
      out += tok;
  }
  return with_own_math(out);
}

// Loads of the kernel inputs at inner index `i`, the nodes' values, and the stores of the outputs
// that are `k.shape`-sized (`q0[i] = ...`): one element of the fused pointwise chain.
void emit_element(std::ostream& o, const graph::Graph& g, const Kernel& k, const std::string& pad) {
  auto dtype_of = [&](uint32_t v) { return g.value(graph::ValueId{v}).meta.dtype; };
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    uint32_t v = k.inputs[i].value;
    std::string at = k.inputs[i].inner == InnerStride::zero   ? "0"
                     : k.inputs[i].inner == InnerStride::unit ? "i"
                                                              : "i * st" + std::to_string(i);
    o << pad << "const " << c_type(dtype_of(v)) << " " << var(v) << " = p" << i << "[" << at << "]"
      << (dtype_of(v) == DType::b8 ? " != 0" : "") << ";\n";
  }
  for (size_t j = 0; j < k.nodes.size(); ++j) {
    const graph::Node& n = g.nodes()[k.nodes[j]];
    uint32_t v = n.outputs[0].index;
    o << pad << "const " << c_type(dtype_of(v)) << " " << var(v) << " = static_cast<"
      << c_type(dtype_of(v)) << ">(" << node_expr(n, k.scalar_base[j]) << ");  // " << n.op->name
      << "\n";
  }
  for (size_t i = 0; i < pointwise_outputs(k); ++i)
    o << pad << "q" << i << "[i] = " << var(k.outputs[i]) << ";\n";
}

// Input pointers advanced to outer index `o` (the strides of the dims before the last).
void emit_row_offsets(std::ostream& o, const Kernel& k, const std::string& pad) {
  const size_t rank = k.dim_groups.size();
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    o << pad << "const "
      << "auto* p" << i << " = in" << i << ";\n";
    if (k.inputs[i].inner == InnerStride::any)
      o << pad << "const int64_t st" << i << " = strides[" << i * rank + rank - 1 << "];\n";
  }
  if (rank > 1) {
    o << pad << "int64_t rem = o;\n";
    for (size_t d = rank - 1; d-- > 0;) {
      o << pad << "{ const int64_t ix = rem % sizes[" << d << "]; rem /= sizes[" << d << "];";
      for (size_t i = 0; i < k.inputs.size(); ++i)
        o << " p" << i << " += ix * strides[" << i * rank + d << "];";
      o << " }\n";
    }
  }
}

// Output pointers advanced to outer index `o`: contiguous rows, or for an output written into a
// cat's slice (cat_fusion.h) its strides row, after the inputs' rows (unit stride within a row).
void emit_output_rows(std::ostream& o, const Kernel& k, const std::string& pad) {
  const size_t rank = k.dim_groups.size();
  for (size_t j = 0; j < k.outputs.size(); ++j) {
    if (j >= k.out_cat.size() || k.out_cat[j].cat < 0) {
      o << pad << "auto* q" << j << " = out" << j << " + o * inner;\n";
      continue;
    }
    o << pad << "auto* q" << j << " = out" << j << ";\n";
    if (rank < 2) continue;
    o << pad << "{ int64_t rem = o;";
    for (size_t d = rank - 1; d-- > 0;)
      o << " q" << j << " += rem % sizes[" << d << "] * strides["
        << (k.inputs.size() + j) * rank + d << "]; rem /= sizes[" << d << "];";
    o << " }\n";
  }
}

// Runs `task` for 0..count-1: over OpenMP threads when the kernel has kParallelGrain elements,
// else inline. (An `omp parallel if (false)` region still creates and joins a team: thousands of
// instructions, most of the work of a kernel over a few elements.)
void emit_task_loop(std::ostream& o, const char* count) {
  o << "  if (outer * inner >= " << kParallelGrain << ") {\n";
  o << "#pragma omp parallel for schedule(static)\n";
  o << "    for (int64_t t = 0; t < " << count << "; ++t) task(t);\n";
  o << "  } else {\n";
  o << "    for (int64_t t = 0; t < " << count << "; ++t) task(t);\n";
  o << "  }\n";
}

void emit_pointwise_loops(std::ostream& o, const graph::Graph& g, const Kernel& k) {
  o << "  const int64_t chunks = (inner + " << kInnerChunk << " - 1) / " << kInnerChunk << ";\n";
  o << "  const int64_t tasks = outer * chunks;\n";
  o << "  auto task = [&](int64_t t) {\n";
  o << "    const int64_t o = t / chunks;\n";
  o << "    const int64_t i0 = (t % chunks) * " << kInnerChunk << ";\n";
  o << "    const int64_t i1 = inner - i0 < " << kInnerChunk << " ? inner : i0 + " << kInnerChunk
    << ";\n";
  emit_row_offsets(o, k, "    ");
  emit_output_rows(o, k, "    ");
  o << "    for (int64_t i = i0; i < i1; ++i) {\n";
  emit_element(o, g, k, "      ");
  o << "    }\n  };\n";
  emit_task_loop(o, "tasks");
}

// One row per task: the pointwise chain along the row, folded into the reduction; softmax and
// log_softmax then make two more passes over their output row (max, then exp-sum, then scale),
// as the eager kernels do.
void emit_reduction_loops(std::ostream& o, const graph::Graph& g, const Kernel& k) {
  const graph::Node& r = g.nodes()[k.reduction_node];
  const std::string x = var(std::get<graph::ValueId>(r.args[0]).index);
  const char* t = c_type(g.value(r.outputs[0]).meta.dtype);
  const size_t ro = k.outputs.size() - 1;  // the reduction's output comes last
  const bool rowwise = k.reduction == Reduction::softmax || k.reduction == Reduction::log_softmax;
  o << "  auto task = [&](int64_t o) {\n";
  emit_row_offsets(o, k, "    ");
  for (size_t i = 0; i < ro; ++i) o << "    auto* q" << i << " = out" << i << " + o * inner;\n";
  o << "    auto* r = out" << ro << " + o" << (rowwise ? " * inner" : "") << ";\n";
  const bool sum = k.reduction == Reduction::sum || k.reduction == Reduction::mean;
  if (sum)
    o << "    double acc = 0;  // as the eager sum: f32 rows add up in double\n";
  else
    o << "    " << t << " acc = -INFINITY;\n    int nan = 0;\n";
  // Both reductions may reassociate (omp simd) so the row loop vectorizes: a sum's order is not
  // specified, and a maximum is the same in any order once NaN is tracked on the side (any NaN
  // makes the result NaN, as in the eager kernels).
  o << (sum ? "#pragma omp simd reduction(+ : acc)\n"
            : "#pragma omp simd reduction(max : acc) reduction(| : nan)\n");
  o << "    for (int64_t i = 0; i < inner; ++i) {\n";
  emit_element(o, g, k, "      ");
  if (sum)
    o << "      acc += " << x << ";\n";
  else
    o << "      acc = " << x << " > acc ? " << x << " : acc;\n      nan |= " << x << " != " << x
      << ";\n";
  if (rowwise) o << "      r[i] = " << x << ";\n";
  o << "    }\n";
  if (!sum) o << "    if (nan) acc = NAN;\n";
  switch (k.reduction) {
    case Reduction::sum:
      o << "    r[0] = static_cast<" << t << ">(acc);\n";
      break;
    case Reduction::mean:
      o << "    r[0] = static_cast<" << t << ">(acc / inner);\n";
      break;
    case Reduction::amax:
      o << "    r[0] = acc;\n";
      break;
    case Reduction::softmax:
      o << "    " << t << " sum = 0;\n";
      o << "#pragma omp simd reduction(+ : sum)\n";
      o << "    for (int64_t i = 0; i < inner; ++i) { r[i] = ag_exp(r[i] - acc); sum += r[i]; "
           "}\n";
      o << "    const " << t << " scale = 1 / sum;\n";
      o << "    for (int64_t i = 0; i < inner; ++i) r[i] *= scale;\n";
      break;
    case Reduction::log_softmax:
      o << "    " << t << " sum = 0;\n";
      o << "#pragma omp simd reduction(+ : sum)\n";
      o << "    for (int64_t i = 0; i < inner; ++i) sum += ag_exp(r[i] - acc);\n";
      o << "    const " << t << " shift = acc + std::log(sum);\n";
      o << "    for (int64_t i = 0; i < inner; ++i) r[i] -= shift;\n";
      break;
    case Reduction::none:
      break;
  }
  o << "  };\n";
  emit_task_loop(o, "outer");
}

void emit_kernel(std::ostream& o, const graph::Graph& g, const Kernel& k) {
  const size_t rank = k.dim_groups.size();
  auto dtype_of = [&](uint32_t v) { return g.value(graph::ValueId{v}).meta.dtype; };
  auto storage_type = [&](uint32_t v) {
    return dtype_of(v) == DType::b8 ? std::string("unsigned char")
                                    : std::string(c_type(dtype_of(v)));
  };
  o << "extern \"C\" void " << k.name
    << "(const char* const* in, char* const* out, const int64_t* sizes, const int64_t* strides, "
       "const double* scalars) {\n";
  // An output planned to take an input's buffer (memory_plan.h) aliases it: neither that output's
  // pointer nor any input pointer into the same buffer (the input itself, and a folded identity
  // expand of it, whose `read_from` is that input) is __restrict.
  std::vector<bool> in_shared(k.inputs.size(), false);
  auto restrict_out = [&](size_t j) { return j >= k.reuse.size() || k.reuse[j] < 0; };
  for (size_t j = 0; j < k.outputs.size(); ++j)
    if (!restrict_out(j))
      for (size_t i = 0; i < k.inputs.size(); ++i)
        if (k.inputs[i].read_from == k.inputs[k.reuse[j]].read_from) in_shared[i] = true;
  for (size_t i = 0; i < k.inputs.size(); ++i)
    o << "  const " << storage_type(k.inputs[i].value) << "*"
      << (in_shared[i] ? " " : " __restrict ") << "in" << i << " = (const "
      << storage_type(k.inputs[i].value) << "*)in[" << i << "];\n";
  for (size_t i = 0; i < k.outputs.size(); ++i)
    o << "  " << storage_type(k.outputs[i]) << "*" << (restrict_out(i) ? " __restrict " : " ")
      << "out" << i << " = (" << storage_type(k.outputs[i]) << "*)out[" << i << "];\n";
  for (size_t j = 0; j < k.nodes.size(); ++j) {
    const graph::Node& n = g.nodes()[k.nodes[j]];
    size_t count =
        (j + 1 < k.nodes.size() ? k.scalar_base[j + 1] : k.scalars.size()) - k.scalar_base[j];
    for (size_t s = 0; s < count; ++s) {
      size_t idx = k.scalar_base[j] + s;
      o << "  const " << c_type(compute_dtype(g, n)) << " sc" << idx << " = ("
        << c_type(compute_dtype(g, n)) << ")scalars[" << idx << "];\n";
    }
  }
  o << "  const int64_t inner = sizes[" << rank - 1 << "];\n";
  o << "  const int64_t outer = ";
  for (size_t d = 0; d + 1 < rank; ++d) o << "sizes[" << d << "] * ";
  o << "1;\n";
  if (k.reduction == Reduction::none)
    emit_pointwise_loops(o, g, k);
  else
    emit_reduction_loops(o, g, k);
  o << "}\n";
}

// `code` with the kernel's own name and its value variables (v17, ...) renamed in order of first
// appearance: equal for two kernels that compute the same thing on different values.
std::string canonical_code(const std::string& code, const std::string& name) {
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::unordered_map<std::string, std::string> renamed;
  std::string out;
  out.reserve(code.size());
  for (size_t i = 0; i < code.size();) {
    if (is_word(code[i]) && (i == 0 || !is_word(code[i - 1]))) {
      size_t end = i;
      while (end < code.size() && is_word(code[end])) ++end;
      std::string word = code.substr(i, end - i);
      const bool value = word.size() > 1 && word[0] == 'v' &&
                         std::all_of(word.begin() + 1, word.end(), [](char c) {
                           return std::isdigit(static_cast<unsigned char>(c));
                         });
      if (word == name)
        out += "KERNEL";
      else if (value)
        out += renamed.try_emplace(word, "v" + std::to_string(renamed.size())).first->second;
      else
        out += word;
      i = end;
    } else {
      out += code[i++];
    }
  }
  return out;
}

}  // namespace

std::string generate_source(const graph::Graph& g, const Schedule& s) {
  std::ostringstream o;
  o << "// Generated by the aotgrad cpp backend.\n";
  bool math = false;
  for (const Kernel& k : s.kernels) {
    math |= k.reduction == Reduction::softmax || k.reduction == Reduction::log_softmax;
    for (uint32_t i : k.nodes) {
      const std::string_view e = g.nodes()[i].op->fusion_expr;
      math |= with_own_math(std::string(e)) != e;
    }
  }
  // No __FAST_MATH__: under it glibc declares libmvec's SIMD variants of sin, log, pow, the f64
  // exp, ..., and a vectorized loop would run them in its body and libm in its remainder, which
  // differ in the last bits: one op would give an element a result that depends on where it sits
  // (CppMath.EveryMathOpGivesTheSameBitsInTheVectorBodyAndTheRemainder). Those loops stay scalar;
  // f32 exp, erf and tanh (kMathHelpers) vectorize as they are plain arithmetic.
  o << "#include <cmath>\n#include <cstdint>\n";
  if (math) o << kMathHelpers;
  // Kernels whose code is the same up to names (each block of a model stacked N times gives N
  // copies) are compiled once: the later ones are aliases of the first.
  std::unordered_map<std::string, std::string> first_of;
  for (const Kernel& k : s.kernels) {
    std::ostringstream code;
    emit_kernel(code, g, k);
    auto [it, fresh] = first_of.try_emplace(canonical_code(code.str(), k.name), k.name);
    o << "\n";
    if (fresh)
      o << code.str();
    else
      o << "extern \"C\" void " << k.name << "(const char* const*, char* const*, const int64_t*, "
        << "const int64_t*, const double*) __attribute__((alias(\"" << it->second << "\")));\n";
  }
  return o.str();
}

}  // namespace aotgrad::backends::cpp
