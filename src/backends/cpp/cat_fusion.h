// Cat without a copy for the cpp backend: an `aten.cat.default` whose inputs are (through
// reshaping views) results of generated kernels gets its result allocated by the first such
// kernel, and each kernel writes its result straight into its slice; the cat step then only
// copies the inputs that no kernel wrote (other producers, or a kernel that fell back to its
// unfused nodes at run time).
//
// Needs: a Schedule whose kernels are connected (inputs and outputs known) but whose loops are not
// yet planned. Guarantees: a part is fused only when the kernel output is pointwise (no
// reduction), has the cat's dtype, is read by nothing but its chain of `view`/`_unsafe_view` nodes
// (each read by the next only, none a graph output) that ends at the cat, those views and the cat
// are extern steps, and the slice, seen through the views in the kernel's shape, has unit stride in
// the last dim the kernel loops over. The cat's result is dense row-major f32/f64. The fused
// outputs get Kernel::out_cat; the views' steps are dropped and the cat's step becomes a cat step.
//
// A part may also be a gradient of an `aotgrad.masked_attention_backward` (alone or as an
// attention pair's step) moved back to the heads' layout: the gradient, read only by a
// `transpose`, read only by a kernel that is that one `clone`, whose result reaches the cat as
// above. That is how the backward of a fused qkv projection's split and head transposes reads.
// The attention step then writes the gradient straight into its slice of the cat's result (rows
// unit-stride, kernels::masked_attention_backward's `into`), and the transpose's and the clone's
// steps go; the clone's kernel is removed from the schedule.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpp/value_uses.h"
#include "graph/graph.h"

namespace aotgrad::backends::cpp {

struct Schedule;

struct CatPart {
  uint32_t value = 0;           // the cat's input
  int32_t kernel = -1;          // the kernel writing it into its slice; -1: see `attention`, else
                                // copied at the cat step
  uint32_t kernel_output = 0;   // the kernel's value (the start of `chain`)
  std::vector<uint32_t> chain;  // the view nodes from kernel_output to `value`, in graph order
  int64_t start = 0, size = 0;  // the slice along the cat dim
  // Or the attention backward node writing it (its result `attention_result`, with `strides` per
  // dim of that result, at element `offset` of the cat's result); `chain` then ends with the
  // transpose. -1: none.
  int32_t attention = -1;
  int32_t attention_result = 0;
  int64_t offset = 0;
  IntList strides;
  bool in_place() const { return kernel >= 0 || attention >= 0; }
};

struct CatFusion {
  uint32_t node = 0;    // the cat node
  uint32_t output = 0;  // its value
  int64_t dim = 0;      // non-negative
  std::vector<CatPart> parts;
};

// Where a kernel output goes instead of a buffer of its own: cat `cat`'s result, at element
// `offset`, with `strides` (per k.shape dim before loop planning, per dim group after).
struct CatTarget {
  int32_t cat = -1;
  int64_t offset = 0;
  IntList strides;
};

// Finds the cats to fuse and rewrites `s` (steps, Kernel::out_cat, Schedule::cats) accordingly.
void fuse_cats(const graph::Graph& g, const ValueUses& uses, Schedule& s);

}  // namespace aotgrad::backends::cpp
