// build_joint (aot/joint.h). Reading guide: JointBuilder copies the forward graph into the joint
// graph (copy_forward), adds a tangent per forward output that requires grad (add_tangents), then
// walks the forward nodes in reverse running each one's VJP rule under the Trace interpreter
// (run_vjps), and returns (forward outputs..., gradients...) (add_outputs). `fake_` maps every
// forward value to the fake tensor standing for it in the joint graph; `grads_` accumulates the
// gradient of each forward value. A custom autograd Function's node (autograd/custom_function.h)
// is not copied: its results are its `outputs` argument, and its VJP traces the user's backward.
#include "aot/joint.h"

#include <stdexcept>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "autograd/custom_function.h"
#include "trace/functionalize.h"
#include "trace/tracer.h"

namespace aotgrad::aot {
namespace {

class JointBuilder {
 public:
  JointBuilder(const graph::Graph& forward, const std::vector<bool>& rg,
               const std::vector<bool>& unreached)
      : fw_(forward),
        rg_(rg),
        unreached_(unreached),
        tracer_(j_.graph),
        fake_(forward.values().size()),
        grads_(forward.values().size()) {
    j_.vjp_ran.assign(forward.values().size(), false);
  }

  JointGraph build() {
    copy_forward();
    add_tangents();
    run_vjps();
    add_outputs();
    return std::move(j_);
  }

 private:
  bool needs(graph::ValueId v) const { return v.index < rg_.size() && rg_[v.index]; }
  graph::ValueId joint_value(graph::ValueId fw) const {
    return graph::ValueId{fake_[fw.index].impl()->trace.value};
  }
  Descriptor primal_desc(size_t i) const {
    const Descriptor& d = fw_.input_descs()[i];
    return d.empty() ? Descriptor::input(static_cast<int64_t>(i)) : d;
  }
  Descriptor output_desc(size_t i) const {
    const Descriptor& d = fw_.output_descs()[i];
    return d.empty() ? Descriptor::output(static_cast<int64_t>(i)) : d;
  }

  // Primals, then every forward node with its values' names (fakes bound to the copies).
  void copy_forward() {
    graph::Graph& g = j_.graph;
    j_.num_primals = fw_.inputs().size();
    for (size_t i = 0; i < fw_.inputs().size(); ++i) {
      graph::ValueId v = fw_.inputs()[i];
      graph::ValueId nv =
          g.add_input("primals_" + std::to_string(i + 1), fw_.value(v).meta, primal_desc(i));
      fake_[v.index] = tracer_.bind(nv, needs(v));
    }
    for (const graph::Node& n : fw_.nodes()) {
      if (autograd::is_autograd_function(*n.op)) {
        const auto& outs = std::get<graph::ValueList>(n.args[autograd::kFunctionOutputs]);
        for (size_t k = 0; k < n.outputs.size(); ++k)
          fake_[n.outputs[k].index] = tracer_.bind(joint_value(outs[k]), needs(n.outputs[k]));
        continue;
      }
      std::vector<graph::NodeArg> args = n.args;
      graph::for_each_value(args, [&](graph::ValueId& v) { v = joint_value(v); });
      std::vector<ops::TensorMeta> metas;
      std::vector<std::string> names;
      for (graph::ValueId o : n.outputs) {
        metas.push_back(fw_.value(o).meta);
        names.push_back(fw_.value(o).name);
      }
      std::vector<graph::ValueId> outs = g.add_node(*n.op, std::move(args), metas, names);
      for (size_t k = 0; k < outs.size(); ++k)
        fake_[n.outputs[k].index] = tracer_.bind(outs[k], needs(n.outputs[k]));
    }
  }

  // A tangent input for each forward output that requires grad: tangent(<its descriptor>).
  void add_tangents() {
    j_.num_fw_outputs = fw_.outputs().size();
    for (size_t i = 0; i < fw_.outputs().size(); ++i) {
      graph::ValueId v = fw_.outputs()[i];
      if (!needs(v)) continue;
      const ops::TensorMeta& m = fw_.value(v).meta;
      graph::ValueId t =
          j_.graph.add_input("tangents_" + std::to_string(j_.tangent_of_output.size() + 1),
                             ops::TensorMeta::contiguous(m.sizes, m.dtype),
                             Descriptor::wrapping(DescriptorKind::tangent, output_desc(i)));
      j_.tangent_of_output.push_back(i);
      tangents_.push_back(tracer_.bind(t, false));
    }
  }

  void accumulate(graph::ValueId v, const Tensor& gr) {
    if (!gr.defined()) return;
    Tensor& slot = grads_[v.index];
    slot = slot.defined() ? add(slot, gr) : gr;
  }

  // The VJP rule of forward node `n` on the traced gradients of its outputs; accumulates the
  // gradients of its inputs (nothing when no output has a gradient or no input needs one).
  void vjp_of(const graph::Node& n) {
    bool any_grad = false;
    for (graph::ValueId o : n.outputs) any_grad = any_grad || grads_[o.index].defined();
    if (!any_grad) return;
    ops::OpArgs args;
    std::vector<bool> needs_grad;
    bool any_needed = false;
    for (const graph::NodeArg& a : n.args) {
      if (auto* v = std::get_if<graph::ValueId>(&a)) {
        args.emplace_back(fake_[v->index]);
        needs_grad.push_back(needs(*v));
      } else if (auto* l = std::get_if<graph::ValueList>(&a)) {
        ops::TensorList list;
        for (graph::ValueId e : *l) {
          bool none = e == graph::kNoValue;
          list.push_back(none ? Tensor() : fake_[e.index]);
          needs_grad.push_back(!none && needs(e));
        }
        args.emplace_back(std::move(list));
      } else {
        args.push_back(std::visit(
            [](const auto& x) -> ops::Arg {
              using T = std::decay_t<decltype(x)>;
              if constexpr (std::is_same_v<T, graph::ValueId> ||
                            std::is_same_v<T, graph::ValueList>)
                return std::monostate{};  // handled above
              else
                return x;
            },
            a));
      }
    }
    for (bool b : needs_grad) any_needed = any_needed || b;
    if (!any_needed) return;
    std::vector<Tensor> outs, out_grads;
    for (graph::ValueId o : n.outputs) {
      outs.push_back(fake_[o.index]);
      Tensor gr = grads_[o.index];
      // As in the eager engine: a multi-output op gets zeros for outputs without a gradient (a
      // custom Function decides itself, by its materialize_grads flag).
      if (!gr.defined() && n.outputs.size() > 1 && !autograd::is_autograd_function(*n.op))
        gr = zeros(fw_.value(o).meta.sizes, fw_.value(o).meta.dtype);
      out_grads.push_back(gr);
    }
    for (graph::ValueId o : n.outputs) j_.vjp_ran[o.index] = true;
    ops::VjpContext ctx{*n.op, args, outs, out_grads, needs_grad};
    std::vector<Tensor> in_grads;
    try {
      in_grads = n.op->vjp(ctx);
    } catch (const trace::UnsupportedError&) {
      throw;
    } catch (const std::exception& e) {
      // Eager's engine raises this when its backward reaches the node, not in the forward: the
      // compiled backward raises it (Artifact::backward_error); no gradient flows on from here.
      if (j_.vjp_error.empty())
        j_.vjp_error =
            std::string(e.what()) + " (in the backward of " + std::string(n.op->name) + ")";
      return;
    }
    size_t k = 0;
    for (const graph::NodeArg& a : n.args)
      for (graph::ValueId v : graph::arg_values(a, /*keep_none=*/true)) {
        if (k < in_grads.size() && v != graph::kNoValue && needs(v)) accumulate(v, in_grads[k]);
        ++k;
      }
  }

  // Forward nodes in reverse; every node a VJP rule records (the accumulation of its results
  // included) gets the forward node's first value as its origin.
  void run_vjps() {
    ops::InterpreterGuard guard(tracer_);
    NoGradGuard no_grad;  // the backward itself is not differentiated (no double backward)
    for (size_t k = 0; k < j_.tangent_of_output.size(); ++k) {
      size_t o = j_.tangent_of_output[k];
      if (o < unreached_.size() && unreached_[o]) continue;
      accumulate(fw_.outputs()[o], tangents_[k]);
    }
    for (size_t ni = fw_.nodes().size(); ni-- > 0;) {
      const graph::Node& n = fw_.nodes()[ni];
      if (!n.op->vjp) continue;
      size_t first = j_.graph.nodes().size();
      vjp_of(n);
      std::string origin = n.outputs.empty() ? "" : fw_.value(n.outputs[0]).name;
      for (size_t i = first; i < j_.graph.nodes().size(); ++i)
        j_.graph.mutable_nodes()[i].origin = origin;
    }
  }

  // Forward outputs keep the forward graph's descriptors; each gradient is grad(<primal's>).
  void add_outputs() {
    for (size_t i = 0; i < fw_.outputs().size(); ++i)
      j_.graph.add_output(joint_value(fw_.outputs()[i]), output_desc(i));
    for (size_t i = 0; i < fw_.inputs().size(); ++i) {
      graph::ValueId v = fw_.inputs()[i];
      if (!needs(v) || !grads_[v.index].defined()) continue;
      graph::ValueId gv =
          tracer_.value_of(grads_[v.index], "gradient of input " + std::to_string(i));
      j_.graph.add_output(gv, Descriptor::wrapping(DescriptorKind::grad, primal_desc(i)));
      j_.grad_of_primal.push_back(i);
    }
  }

  const graph::Graph& fw_;
  const std::vector<bool>& rg_;
  const std::vector<bool>& unreached_;
  JointGraph j_;
  trace::Tracer tracer_;
  std::vector<Tensor> fake_;
  std::vector<Tensor> grads_;
  std::vector<Tensor> tangents_;
};

}  // namespace

JointGraph build_joint(const graph::Graph& forward, const std::vector<bool>& rg,
                       const std::vector<bool>& unreached) {
  return JointBuilder(forward, rg, unreached).build();
}

}  // namespace aotgrad::aot
