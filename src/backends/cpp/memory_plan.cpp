#include "backends/cpp/memory_plan.h"

#include <algorithm>

namespace aotgrad::backends::cpp {
namespace {

std::vector<StepValues> step_values(const graph::Graph& g, const Schedule& s) {
  std::vector<StepValues> uses;
  for (const Step& st : s.steps) {
    StepValues u;
    if (st.is_gemm) {
      const GemmFusion& f = s.gemms[st.index];
      for (int64_t v : {f.bias, int64_t{f.a}, int64_t{f.b}, f.residual})
        if (v >= 0) u.reads.push_back(static_cast<uint32_t>(v));
      u.writes = {f.output};
    } else if (st.is_cat) {
      // Reads the kernel outputs it may have to copy when their kernel fell back at run time
      // (an attention backward's part is always in place).
      for (const CatPart& part : s.cats[st.index].parts)
        if (part.attention < 0)
          u.reads.push_back(part.kernel >= 0 ? part.kernel_output : part.value);
      u.writes = {s.cats[st.index].output};
    } else if (st.is_kernel) {
      const Kernel& k = s.kernels[st.index];
      for (const KernelInput& in : k.inputs) u.reads.push_back(in.read_from);
      u.writes = k.outputs;
    } else {
      const graph::Node& n = g.nodes()[st.index];
      u.reads = node_reads(n);
      for (graph::ValueId o : n.outputs) u.writes.push_back(o.index);
      if (st.attention_pair >= 0)  // the paired forward's output too (attention_pairs.h)
        for (graph::ValueId o : g.nodes()[s.attention_pairs[st.attention_pair].forward].outputs)
          u.writes.push_back(o.index);
    }
    uses.push_back(std::move(u));
  }
  return uses;
}

// Output `out` of kernel `k` (step `step`) may be written over input `in`.
bool may_reuse(const graph::Graph& g, const Kernel& k, const Liveness& live, size_t step,
               const KernelInput& in, uint32_t out) {
  const graph::Value& iv = g.value(graph::ValueId{in.value});
  const ops::TensorMeta& om = g.value(graph::ValueId{out}).meta;
  return in.read_from == in.value && iv.producer >= 0 &&
         live.last_use[in.value] == static_cast<int64_t>(step) && in.inner == InnerStride::unit &&
         iv.meta.dtype == om.dtype && iv.meta.sizes == om.sizes && om.sizes == k.shape;
}

}  // namespace

Liveness plan_memory(const graph::Graph& g, Schedule& s, bool reuse_buffers) {
  Liveness live = compute_liveness(g, step_values(g, s));
  for (size_t step = 0; step < s.steps.size(); ++step) {
    if (!s.steps[step].is_kernel) continue;
    Kernel& k = s.kernels[s.steps[step].index];
    k.reuse.assign(k.outputs.size(), -1);
    if (!reuse_buffers || k.reduction != Reduction::none) continue;
    std::vector<bool> taken(k.inputs.size(), false);
    for (size_t j = 0; j < k.outputs.size(); ++j)
      for (size_t i = 0; i < k.inputs.size() && !(j < k.out_cat.size() && k.out_cat[j].cat >= 0);
           ++i)
        if (!taken[i] && may_reuse(g, k, live, step, k.inputs[i], k.outputs[j])) {
          k.reuse[j] = static_cast<int32_t>(i);
          taken[i] = true;
          break;
        }
  }
  return live;
}

}  // namespace aotgrad::backends::cpp
