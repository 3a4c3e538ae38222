#include "backends/cpp/cpp_backend.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "aot/log.h"
#include "backends/cpp/build.h"
#include "backends/cpp/codegen.h"
#include "backends/cpp/schedule.h"
#include "backends/node_call.h"
#include "tensor/current_op.h"

namespace aotgrad::backends {
namespace {

using cpp::InnerStride;
using KernelFn = void (*)(const char* const*, char* const*, const int64_t*, const int64_t*,
                          const double*);

struct KernelCall {
  std::string name;
  KernelFn fn = nullptr;
  IntList shape;
  std::vector<IntList> dim_groups;
  std::vector<uint32_t> inputs;
  std::vector<InnerStride> inner;
  std::vector<uint32_t> outputs;
  std::vector<ops::TensorMeta> output_metas;  // contiguous: k.shape, or a reduction's result
  std::vector<double> scalars;
  std::vector<uint32_t> nodes;  // the group's nodes: the fallback when an input's layout differs
};

struct Program {
  struct Step {
    bool is_kernel = false;
    uint32_t index = 0;                // into externs (node index) or kernels
    std::vector<uint32_t> free_after;  // values whose last use is this step
  };
  size_t num_values = 0;
  std::vector<uint32_t> inputs, outputs;
  std::vector<uint32_t> free_at_start;  // inputs never used
  std::vector<NodeCall> externs;        // one per node
  std::vector<KernelCall> kernels;
  std::vector<Step> steps;
  std::shared_ptr<cpp::SharedObject> library;  // keeps the kernels loaded
};

// Runs a generated kernel; false (nothing written) when an input's actual layout does not fit
// the loop nest the code was specialized for (a graph input with other strides than traced).
bool run_kernel(const KernelCall& k, std::vector<Tensor>& slots) {
  const size_t rank = k.dim_groups.size();
  IntList sizes(rank, 1), strides(rank * k.inputs.size(), 0);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t dim : k.dim_groups[d]) sizes[d] *= k.shape[dim];
  std::vector<const char*> in(k.inputs.size());
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const Tensor& t = slots[k.inputs[i]];
    IntList bs = cpp::broadcast_strides(t.sizes(), t.strides(), k.shape);
    for (size_t d = 0; d < rank; ++d) {
      const IntList& dims = k.dim_groups[d];
      for (size_t j = 1; j < dims.size(); ++j)
        if (bs[dims[j - 1]] != bs[dims[j]] * k.shape[dims[j]]) return false;
      strides[i * rank + d] = dims.empty() ? 0 : bs[dims.back()];
    }
    int64_t last = strides[i * rank + rank - 1];
    if ((k.inner[i] == InnerStride::zero && last != 0) ||
        (k.inner[i] == InnerStride::unit && last != 1))
      return false;
    in[i] = t.impl()->data_bytes();
  }
  CurrentOpScope scope(k.name);
  std::vector<Tensor> outs;
  std::vector<char*> out;
  for (const ops::TensorMeta& m : k.output_metas) {
    outs.push_back(make_tensor(m.sizes, m.dtype));
    out.push_back(outs.back().impl()->data_bytes());
  }
  k.fn(in.data(), out.data(), sizes.data(), strides.data(), k.scalars.data());
  for (size_t i = 0; i < outs.size(); ++i) slots[k.outputs[i]] = std::move(outs[i]);
  return true;
}

void run_group_unfused(const Program& p, const KernelCall& k, std::vector<Tensor>& slots) {
  for (uint32_t n : k.nodes) run_node_call(p.externs[n], slots);
  for (uint32_t n : k.nodes)
    for (uint32_t v : p.externs[n].outputs)
      if (std::find(k.outputs.begin(), k.outputs.end(), v) == k.outputs.end()) slots[v] = Tensor();
}

// The values each step reads and writes, for liveness.
std::vector<uint32_t> step_reads(const Program& p, const Program::Step& s) {
  if (s.is_kernel) return p.kernels[s.index].inputs;
  std::vector<uint32_t> r;
  for (auto [arg, v] : p.externs[s.index].tensor_slots) r.push_back(v);
  for (auto [arg, e, v] : p.externs[s.index].list_slots) r.push_back(v);
  return r;
}
const std::vector<uint32_t>& step_writes(const Program& p, const Program::Step& s) {
  return s.is_kernel ? p.kernels[s.index].outputs : p.externs[s.index].outputs;
}

void plan_frees(const graph::Graph& g, Program& p) {
  const int64_t end = static_cast<int64_t>(p.steps.size());
  std::vector<int64_t> last_use(g.values().size(), -1);
  for (size_t i = 0; i < p.steps.size(); ++i)
    for (uint32_t v : step_reads(p, p.steps[i])) last_use[v] = static_cast<int64_t>(i);
  for (graph::ValueId v : g.outputs()) last_use[v.index] = end;
  for (graph::ValueId v : g.inputs())
    if (last_use[v.index] < 0) p.free_at_start.push_back(v.index);
  for (size_t i = 0; i < p.steps.size(); ++i)
    for (uint32_t v : step_writes(p, p.steps[i])) {
      int64_t last = last_use[v];
      if (last < end) p.steps[last < 0 ? i : last].free_after.push_back(v);
    }
}

std::shared_ptr<Program> build(const graph::Graph& g) {
  auto p = std::make_shared<Program>();
  p->num_values = g.values().size();
  for (graph::ValueId v : g.inputs()) p->inputs.push_back(v.index);
  for (graph::ValueId v : g.outputs()) p->outputs.push_back(v.index);
  for (const graph::Node& n : g.nodes()) p->externs.push_back(make_node_call(g, n, "cpp"));
  cpp::Schedule sched = cpp::schedule_graph(g);
  if (!sched.kernels.empty()) {
    std::string source = cpp::generate_source(g, sched);
    aot::dump_text("cpp_" + g.name(), 0, "code", source);
    p->library = std::make_shared<cpp::SharedObject>(cpp::build_shared_object(source));
  }
  for (const cpp::Kernel& k : sched.kernels) {
    KernelCall c;
    c.name = k.name;
    c.fn = reinterpret_cast<KernelFn>(p->library->symbol(k.name));
    c.shape = k.shape;
    c.dim_groups = k.dim_groups;
    for (const cpp::KernelInput& in : k.inputs) {
      c.inputs.push_back(in.value);
      c.inner.push_back(in.inner);
    }
    c.outputs = k.outputs;
    for (uint32_t v : k.outputs) c.output_metas.push_back(g.value(graph::ValueId{v}).meta);
    c.scalars = k.scalars;
    c.nodes = k.nodes;
    if (k.reduction_node >= 0) c.nodes.push_back(static_cast<uint32_t>(k.reduction_node));
    p->kernels.push_back(std::move(c));
  }
  for (const cpp::Step& s : sched.steps) p->steps.push_back({s.is_kernel, s.index, {}});
  plan_frees(g, *p);
  return p;
}

}  // namespace

CompiledGraph compile_cpp(const graph::Graph& g) {
  std::shared_ptr<const Program> prog = build(g);
  auto signature = std::make_shared<const graph::Graph>(g);
  // Reentrant: the program is read-only; the value slots belong to the call.
  return [prog, signature](std::vector<Tensor>&& inputs) {
    check_inputs(*signature, inputs);
    std::vector<Tensor> slots(prog->num_values);
    for (size_t i = 0; i < prog->inputs.size(); ++i) slots[prog->inputs[i]] = std::move(inputs[i]);
    inputs.clear();
    for (uint32_t v : prog->free_at_start) slots[v] = Tensor();
    for (const Program::Step& s : prog->steps) {
      if (!s.is_kernel) {
        run_node_call(prog->externs[s.index], slots);
      } else if (!run_kernel(prog->kernels[s.index], slots)) {
        run_group_unfused(*prog, prog->kernels[s.index], slots);
      }
      for (uint32_t v : s.free_after) slots[v] = Tensor();
    }
    std::vector<Tensor> result;
    result.reserve(prog->outputs.size());
    for (uint32_t v : prog->outputs) result.push_back(slots[v]);
    return result;
  };
}

}  // namespace aotgrad::backends
