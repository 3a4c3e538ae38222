// GraphStateInputs: the runtime half of functionalized RNG (trace/random.cpp records the graph
// half). Needs: a main graph whose inputs after the plan's carry state descriptors. Guarantees:
// per call, those inputs get the calling thread's generator state, and the generator ends the
// call where eager's would.
#include <algorithm>
#include <string>

#include "aot/runtime_wrappers.h"
#include "aotgrad/random.h"
#include "graph/graph.h"

namespace aotgrad::aot {

std::unique_ptr<const RuntimeWrapper> graph_state_inputs(const graph::Graph& main,
                                                         size_t num_plan_inputs) {
  const std::vector<Descriptor>& descs = main.input_descs();
  if (descs.size() <= num_plan_inputs) return nullptr;
  std::vector<DescriptorKind> kinds;
  uint64_t rng_blocks = 0;
  for (size_t i = num_plan_inputs; i < descs.size(); ++i) {
    const Descriptor& d = descs[i];
    if (d.kind == DescriptorKind::fw_rng_offset) {
      if (d.index < 0)
        throw std::invalid_argument("graph input " + std::to_string(i) + " (" + d.to_string() +
                                    ") draws a negative number of blocks");
      rng_blocks = static_cast<uint64_t>(d.index);
    } else if (d.kind != DescriptorKind::fw_rng_seed && d.kind != DescriptorKind::fw_token) {
      throw std::invalid_argument("graph input " + std::to_string(i) + " (" +
                                  (d.empty() ? std::string("no descriptor") : d.to_string()) +
                                  ") is not one of the call's inputs, RNG state or a token");
    }
    kinds.push_back(d.kind);
  }
  size_t token_outputs = 0;
  for (const Descriptor& d : main.output_descs())
    token_outputs += d.kind == DescriptorKind::fw_token;
  return std::make_unique<GraphStateInputs>(std::move(kinds), rng_blocks, token_outputs);
}

void GraphStateInputs::before(CallFrame& f) const {
  Generator& gen = default_generator();
  const uint64_t seed = gen.seed();
  const uint64_t offset = gen.advance(4 * rng_blocks_);
  for (DescriptorKind k : kinds_) {
    if (k == DescriptorKind::fw_token) {
      f.graph_inputs.push_back(make_tensor({0}, DType::f32));  // a token carries no data
      continue;
    }
    // The graph reads the bits as i64; kernels cast them back to uint64.
    const uint64_t v = k == DescriptorKind::fw_rng_seed ? seed : offset;
    f.graph_inputs.push_back(scalar_tensor(Scalar(static_cast<int64_t>(v)), DType::i64));
  }
}

void GraphStateInputs::after(CallFrame& f) const {
  // The tokens are the last outputs before the saved values, which the body already stripped.
  f.outs.resize(f.outs.size() - std::min(token_outputs_, f.outs.size()));
}

}  // namespace aotgrad::aot
