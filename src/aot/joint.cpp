#include "aot/joint.h"

#include <stdexcept>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "trace/tracer.h"

namespace aotgrad::aot {
namespace {

bool needs(const std::vector<bool>& rg, graph::ValueId v) {
  return v.index < rg.size() && rg[v.index];
}

}  // namespace

JointGraph build_joint(const graph::Graph& forward, const std::vector<bool>& rg) {
  JointGraph j;
  graph::Graph& g = j.graph;
  trace::Tracer tracer(g);
  // Fake tensors for every forward value, in the joint graph (same ids: values are copied first).
  std::vector<Tensor> fake(forward.values().size());
  j.num_primals = forward.inputs().size();
  for (size_t i = 0; i < forward.inputs().size(); ++i) {
    graph::ValueId v = forward.inputs()[i];
    const graph::Value& val = forward.value(v);
    std::string desc = forward.input_descs()[i].empty() ? "primal(" + std::to_string(i) + ")"
                                                        : forward.input_descs()[i];
    graph::ValueId nv = g.add_input("primals_" + std::to_string(i + 1), val.meta, desc);
    fake[v.index] = tracer.bind(nv, needs(rg, v));
  }
  // Replay the forward nodes into the joint graph (value names preserved where possible).
  for (const graph::Node& n : forward.nodes()) {
    std::vector<graph::NodeArg> args = n.args;
    for (graph::NodeArg& a : args) {
      if (auto* v = std::get_if<graph::ValueId>(&a)) *v = graph::ValueId{fake[v->index].impl()->trace.value};
      if (auto* l = std::get_if<graph::ValueList>(&a))
        for (graph::ValueId& e : *l) e = graph::ValueId{fake[e.index].impl()->trace.value};
    }
    std::vector<ops::TensorMeta> metas;
    std::vector<std::string> names;
    for (graph::ValueId o : n.outputs) {
      metas.push_back(forward.value(o).meta);
      names.push_back(forward.value(o).name);
    }
    std::vector<graph::ValueId> outs = g.add_node(*n.op, std::move(args), metas, names);
    for (size_t k = 0; k < outs.size(); ++k) fake[n.outputs[k].index] = tracer.bind(outs[k], needs(rg, n.outputs[k]));
  }
  auto joint_value = [&](graph::ValueId fw) { return graph::ValueId{fake[fw.index].impl()->trace.value}; };

  // Tangents for the forward outputs that require grad.
  std::vector<Tensor> grads(forward.values().size());
  auto accumulate = [&](graph::ValueId v, const Tensor& gr) {
    if (!gr.defined()) return;
    Tensor& slot = grads[v.index];
    slot = slot.defined() ? add(slot, gr) : gr;
  };
  j.num_fw_outputs = forward.outputs().size();
  std::vector<Tensor> tangents;
  for (size_t i = 0; i < forward.outputs().size(); ++i) {
    graph::ValueId v = forward.outputs()[i];
    if (!needs(rg, v)) continue;
    ops::TensorMeta m = ops::TensorMeta::contiguous(forward.value(v).meta.sizes, forward.value(v).meta.dtype);
    graph::ValueId t = g.add_input("tangents_" + std::to_string(j.tangent_of_output.size() + 1), m,
                                   "tangent(output " + std::to_string(i) + ")");
    j.tangent_of_output.push_back(i);
    tangents.push_back(tracer.bind(t, false));
  }
  {
    ops::InterpreterGuard guard(tracer);
    NoGradGuard no_grad;  // the backward itself is not differentiated (no double backward)
    for (size_t k = 0; k < j.tangent_of_output.size(); ++k)
      accumulate(forward.outputs()[j.tangent_of_output[k]], tangents[k]);
    for (size_t ni = forward.nodes().size(); ni-- > 0;) {
      const graph::Node& n = forward.nodes()[ni];
      if (!n.op->vjp) continue;
      bool any_grad = false;
      for (graph::ValueId o : n.outputs) any_grad = any_grad || grads[o.index].defined();
      if (!any_grad) continue;
      ops::OpArgs args;
      std::vector<bool> needs_grad;
      for (const graph::NodeArg& a : n.args) {
        std::visit(
            [&](const auto& x) {
              using T = std::decay_t<decltype(x)>;
              if constexpr (std::is_same_v<T, graph::ValueId>) {
                args.emplace_back(fake[x.index]);
                needs_grad.push_back(needs(rg, x));
              } else if constexpr (std::is_same_v<T, graph::ValueList>) {
                ops::TensorList l;
                for (graph::ValueId e : x) {
                  l.push_back(fake[e.index]);
                  needs_grad.push_back(needs(rg, e));
                }
                args.emplace_back(std::move(l));
              } else {
                args.emplace_back(x);
              }
            },
            a);
      }
      bool any_needed = false;
      for (bool b : needs_grad) any_needed = any_needed || b;
      if (!any_needed) continue;
      std::vector<Tensor> outs, out_grads;
      for (graph::ValueId o : n.outputs) {
        outs.push_back(fake[o.index]);
        Tensor gr = grads[o.index];
        // As in the eager engine: a multi-output op gets zeros for outputs without a gradient.
        if (!gr.defined() && n.outputs.size() > 1)
          gr = zeros(forward.value(o).meta.sizes, forward.value(o).meta.dtype);
        out_grads.push_back(gr);
      }
      ops::VjpContext ctx{*n.op, args, outs, out_grads, needs_grad};
      std::vector<Tensor> in_grads = n.op->vjp(ctx);
      size_t k = 0;
      for (const graph::NodeArg& a : n.args)
        for (graph::ValueId v : graph::arg_values(a)) {
          if (k < in_grads.size() && needs(rg, v)) accumulate(v, in_grads[k]);
          ++k;
        }
    }
  }
  // Forward outputs keep capture's descriptors (mutated_input(k), output(k),
  // intermediate_base(k)), so the training forward graph reads like the inference graph.
  for (size_t i = 0; i < forward.outputs().size(); ++i) {
    const std::string& desc = forward.output_descs()[i];
    g.add_output(joint_value(forward.outputs()[i]),
                 desc.empty() ? "output(" + std::to_string(i) + ")" : desc);
  }
  for (size_t i = 0; i < forward.inputs().size(); ++i) {
    graph::ValueId v = forward.inputs()[i];
    if (!needs(rg, v) || !grads[v.index].defined()) continue;
    graph::ValueId gv = tracer.value_of(grads[v.index], "gradient of input " + std::to_string(i));
    g.add_output(gv, "grad(input " + std::to_string(i) + ")");
    j.grad_of_primal.push_back(i);
  }
  return j;
}

}  // namespace aotgrad::aot
