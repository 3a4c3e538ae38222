// Scheduling for the cpp backend: which nodes fuse into which generated kernel.
//
// Needs: a verified, functional graph (in-place ops only write graph inputs). Guarantees: the
// steps, run in order, compute every graph output as the graph's node order would. A kernel is
// a group of pointwise nodes (rows with a fusion_expr, f32/f64 with b8 masks, contiguous result)
// of one output shape, optionally ended by a last-dim reduction of that shape (sum, mean, amax,
// softmax, log_softmax), which closes it; values used only inside the group get no buffer. An
// `expand` whose every user is such a pointwise node gets no step: the kernels read its source
// with broadcast strides (the same elements the view shows). A node
// joins the open group of its shape; a group is emitted when something outside it needs one of its
// values, when an in-place node runs, or at the end. A matrix product whose result only feeds an
// activation and/or a residual add is one GEMM step with them as oneDNN post-ops (gemm_fusion.h).
// A cat whose inputs are kernel results gets them written straight into its result (cat_fusion.h).
// A recomputed attention paired with its backward runs as the backward's step (attention_pairs.h).
// Every other node is an extern step: its
// op-table kernel is called exactly as the interpreter calls it, so every graph compiles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpp/attention_pairs.h"
#include "backends/cpp/cat_fusion.h"
#include "backends/cpp/gemm_fusion.h"
#include "graph/graph.h"

namespace aotgrad::backends::cpp {

// Per-dim stride of a kernel input in the collapsed loop nest, as the code is specialized:
// broadcast (0), unit (1), or passed at run time.
enum class InnerStride : uint8_t { zero, unit, any };

struct KernelInput {
  uint32_t value = 0;
  InnerStride inner = InnerStride::any;
  // The value whose buffer the kernel reads: `value` itself, or for an `expand` folded into its
  // users (no step of its own: broadcasting in the loop is the same view) the expand's source.
  uint32_t read_from = 0;
  // The folded expand node to run first when the kernel falls back to its nodes, else -1.
  int32_t folded_node = -1;
};

// A reduction along the last dim that ends a kernel (its input computed by the kernel's pointwise
// nodes, row by row, without a buffer). A full `sum` of a 1-D value of at most kFullSumLimit
// elements is the same one-row reduction.
enum class Reduction : uint8_t { none, sum, mean, amax, softmax, log_softmax };

struct Kernel {
  std::string name;                   // "kernel3"
  IntList shape;                      // the output shape of every node in the group
  std::vector<IntList> dim_groups;    // collapsed loop dims: each a run of adjacent shape dims
  std::vector<uint32_t> nodes;        // node indices, in graph order
  std::vector<uint32_t> scalar_base;  // per node: index of its first scalar argument in `scalars`
  std::vector<KernelInput> inputs;    // values read from outside the group (unique)
  std::vector<uint32_t> outputs;      // values of the group that get a buffer
  std::vector<double> scalars;        // the nodes' scalar arguments, passed at run time
  Reduction reduction = Reduction::none;
  int32_t reduction_node = -1;  // node index of the reduction (its input: the last dim)
  // Per output: the input whose buffer it may take, or -1 (set by plan_memory, memory_plan.h).
  std::vector<int32_t> reuse;
  // Per output (or empty: none): the cat slice it is written into instead of its own buffer
  // (cat_fusion.h); its strides are per dim group, passed at run time after the inputs' rows.
  std::vector<CatTarget> out_cat;
  bool writes_into_cat() const {
    return std::any_of(out_cat.begin(), out_cat.end(),
                       [](const CatTarget& t) { return t.cat >= 0; });
  }
};

struct Step {
  bool is_kernel = false;
  uint32_t index = 0;    // node index (extern), kernel index, or GEMM fusion index
  bool is_gemm = false;  // a product with its epilogue (gemm_fusion.h), run at its last node
  bool is_cat = false;   // a cat whose kernel parts are already in place (index into cats)
  // An extern step of an attention backward that also computes its paired forward's output
  // (index into attention_pairs; attention_pairs.h); the forward node has no step.
  int32_t attention_pair = -1;
};

struct Schedule {
  std::vector<Kernel> kernels;
  std::vector<GemmFusion> gemms;
  std::vector<CatFusion> cats;
  std::vector<AttentionPair> attention_pairs;
  std::vector<Step> steps;
};

// The tokens of a fusion expression: identifiers (a, b, c, s0, std, exp, ...) and everything else
// one character at a time, so that codegen can rename operands and schedule can check them.
std::vector<std::string> expr_tokens(std::string_view expr);

// `strides` of a tensor of `sizes` seen as broadcast to `shape`: 0 where it is broadcast (a size 1
// against a larger one, or a missing leading dim), and where `shape` has size 1.
IntList broadcast_strides(const IntList& sizes, const IntList& strides, const IntList& shape);

// Elements up to which a full sum (`aten.sum.default` of a 1-D value) is fused: it runs on one
// thread, as one row.
inline constexpr int64_t kFullSumLimit = 32768;

// The reduction node `n` is, when the cpp backend can fuse it (f32/f64, over the last dim only,
// that dim longer than 1, contiguous result; or a small 1-D full sum); Reduction::none otherwise.
Reduction fusable_reduction(const graph::Graph& g, const graph::Node& n);

// Whether node `n` can be part of a generated kernel (and why not, for the golden tests).
bool is_fusable(const graph::Graph& g, const graph::Node& n);

// `gemm_epilogues` false: no GEMM steps (every product an extern call), to measure them;
// `cat_fusion` false: every cat an extern call (cat_fusion.h); `conv_epilogues` true: convolutions
// take their post-ops too (CppOptions::conv_epilogues). `attention_pairs`: pairs found by
// pair_attention on `g` (attention_pairs.h), each run as its backward's step.
Schedule schedule_graph(const graph::Graph& g, bool gemm_epilogues = true, bool cat_fusion = true,
                        bool conv_epilogues = false,
                        std::vector<AttentionPair> attention_pairs = {});

}  // namespace aotgrad::backends::cpp
