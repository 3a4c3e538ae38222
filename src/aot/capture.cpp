#include "aot/capture.h"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include "aotgrad/autograd.h"
#include "autograd/view_creation.h"
#include "trace/tracer.h"

namespace aotgrad::aot {
namespace {

std::string describe_inputs(const std::vector<Tensor>& inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i)
    s += (i ? ", " : "") + std::string(dtype_name(inputs[i].dtype())) +
         shape_to_string(inputs[i].sizes());
  return s;
}

// The descriptor of each graph input: the user input's own, or a synthetic base of its members'.
std::vector<Descriptor> graph_input_descs(const InputPlan& plan,
                                          const std::vector<Descriptor>& user_descs) {
  std::vector<Descriptor> out;
  for (const InputPlan::GraphInput& gi : plan.graph_inputs) {
    if (!gi.is_base) {
      out.push_back(user_descs[gi.index]);
      continue;
    }
    const SyntheticBase& b = plan.bases[gi.index];
    std::vector<Descriptor> members;
    for (size_t m : b.members) members.push_back(user_descs[m]);
    out.push_back(Descriptor::base(b.common_base, std::move(members)));
  }
  return out;
}

// The fake tensors the user function sees, one per user input, following the plan.
std::vector<Tensor> make_user_fakes(trace::Tracer& tracer, const std::vector<Tensor>& inputs,
                                    const InputPlan& plan, const std::vector<Tensor>& graph_inputs,
                                    const std::vector<Descriptor>& descs) {
  std::vector<Tensor> graph_fakes;
  for (size_t g = 0; g < plan.graph_inputs.size(); ++g)
    graph_fakes.push_back(tracer.add_input(graph_inputs[g], "arg" + std::to_string(g), descs[g]));
  std::vector<size_t> graph_input_of_base(plan.bases.size());
  for (size_t g = 0; g < plan.graph_inputs.size(); ++g)
    if (plan.graph_inputs[g].is_base) graph_input_of_base[plan.graph_inputs[g].index] = g;
  std::vector<Tensor> fakes(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputPlan::Entry& e = plan.inputs[i];
    if (e.kind == InputPlan::Kind::plain)
      fakes[i] = graph_fakes[e.index];
    else if (e.kind == InputPlan::Kind::duplicate)
      fakes[i] = fakes[e.index];
    else
      fakes[i] = tracer.add_strided_view(graph_fakes[graph_input_of_base[e.index]],
                                         inputs[i].sizes(), inputs[i].strides(),
                                         inputs[i].storage_offset(), inputs[i].requires_grad(),
                                         autograd::special_creation_of(inputs[i]));
    tracer.note_caller_view(fakes[i], inputs[i].is_view());
    if (e.kind == InputPlan::Kind::plain)
      if (std::optional<autograd::SpecialCreation> c = autograd::special_creation_of(inputs[i]))
        tracer.note_caller_creation(fakes[i], *c);
  }
  for (size_t i = 0; i < plan.same_base_as.size(); ++i)
    if (inputs[i].is_view() && plan.inputs[i].kind != InputPlan::Kind::duplicate)
      tracer.note_caller_base(fakes[i], plan.same_base_as[i]);
  // Inputs that share the caller's storage through different graph inputs (disjoint views):
  // grouped by the first such input.
  auto storage_of = [&](size_t i) {
    const trace::TensorState* ts = tracer.state_of(fakes[i]);
    return ts ? ts->storage : SIZE_MAX;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t j = 0; j < inputs.size(); ++j)
      if (j != i && inputs[j].storage() == inputs[i].storage() && storage_of(j) != storage_of(i)) {
        size_t first = 0;
        while (inputs[first].storage() != inputs[i].storage()) ++first;
        tracer.note_shared_storage(fakes[i], first);
        break;
      }
  return fakes;
}

struct OutputPlan {
  std::vector<graph::ValueId> user_values;  // non-aliased user outputs, in graph order
  std::vector<size_t> user_index;           // the user output each of them is
  std::vector<graph::ValueId> bases;        // intermediate bases
  std::vector<size_t> base_first_user;      // the first user output aliasing each base
};

// The same view step: op, arguments (the viewed tensor's slot empty in both) and grad mode.
bool same_step(const trace::ViewStep& a, const trace::ViewStep& b) {
  if (a.op != b.op || a.grad_mode != b.grad_mode || a.piece_of != b.piece_of ||
      a.piece != b.piece || a.args.size() != b.args.size())
    return false;
  for (size_t i = 0; i < a.args.size(); ++i) {
    if (a.args[i].index() != b.args[i].index()) return false;
    bool same = std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          const T& y = std::get<T>(b.args[i]);
          if constexpr (std::is_same_v<T, Tensor>)
            return x.defined() == y.defined() && (!x.defined() || x.is_same(y));
          else if constexpr (std::is_same_v<T, ops::TensorList>)
            return x.empty() && y.empty();
          else
            return x == y;
        },
        a.args[i]);
    if (!same) return false;
  }
  return true;
}

// Whether `chain` continues `prefix` step for step, with at least one step more.
bool extends(const std::vector<trace::ViewStep>& chain,
             const std::vector<trace::ViewStep>& prefix) {
  return chain.size() > prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), chain.begin(), same_step);
}

// An output made after its input's geometry changed in place under no_grad, by view ops on that
// input (its chain extends the input's final chain, step for step): OutputAliasInfo::
// own_views_of_input. A view of another alias of the storage never matches (AotProgramFuzz, seed
// 1221546: a view of a tensor passed three times is no view of a fourth input that views it).
void find_own_views(const trace::Tracer& tracer, const std::vector<Tensor>& user_fakes,
                    const Tensor& out, const trace::TensorState& ts, OutputAliasInfo& info) {
  for (size_t u = 0; u < user_fakes.size(); ++u) {
    const trace::TensorState* in = tracer.state_of(user_fakes[u]);
    if (!in || in->storage != ts.storage || user_fakes[u].is_same(out)) continue;
    trace::Tracer::MetadataTouch touch = tracer.metadata_touch(user_fakes[u]);
    if (!touch.touched || touch.under_grad) continue;
    if (!extends(ts.chain, in->chain)) continue;
    info.own_views_of_input = static_cast<int>(u);
    info.own_views_from = static_cast<int>(in->chain.size());
    return;
  }
  // Or made from a view of the input made before the change (its longest such ancestor), whose
  // history eager regenerated when it was used after the change: an as_strided of its base.
  for (size_t u = 0; u < user_fakes.size(); ++u) {
    const trace::TensorState* in = tracer.state_of(user_fakes[u]);
    if (!in || in->storage != ts.storage || user_fakes[u].is_same(out)) continue;
    trace::Tracer::MetadataTouch touch = tracer.metadata_touch(user_fakes[u]);
    if (!touch.touched || touch.under_grad) continue;
    const trace::TensorState* ancestor = nullptr;
    const std::vector<trace::TensorState>& states = tracer.tensor_states();
    for (const trace::TensorState& a : states) {
      // Only a tensor's current state: its geometry is the tensor's now. A state left behind by
      // a later in-place geometry op on that tensor describes the geometry before it, which the
      // tensor no longer has (AotProgramFuzz, seed 3023376: `v = a1.t()`, then `a1.unsqueeze_(0)`;
      // v's output started from a1's new sizes).
      const size_t index = static_cast<size_t>(&a - states.data());
      if (&a == &ts || a.storage != ts.storage || a.chain.empty() || !a.keep || a.hidden ||
          a.keep->trace.alias != index || !tracer.made_before_metadata_mutation(a) ||
          (ancestor && ancestor->chain.size() >= a.chain.size()) || !extends(ts.chain, a.chain))
        continue;
      bool plain = true;
      for (const trace::ViewStep& step : a.chain)
        plain = plain && step.grad_mode && !step.piece_of && step.detached == SIZE_MAX;
      if (plain) ancestor = &a;
    }
    if (!ancestor) continue;
    info.own_views_of_input = static_cast<int>(u);
    info.own_views_from = static_cast<int>(ancestor->chain.size());
    info.own_views_start_made_before = true;
    info.start_sizes = ancestor->keep->sizes;
    info.start_strides = ancestor->keep->strides;
    info.start_storage_offset = ancestor->keep->storage_offset;
    return;
  }
}

// An output that views a synthetic base through a member the caller made specially (under
// no_grad, or a piece of a multi-output view): eager's view of that member inherits its creation
// (a piece's view may not be written in place), which a replay from the base would not give it
// (a second reading of c76b44a). Replayed from the caller's tensor instead, past the member's
// steps (the longest such member). Not where a geometry op touched the storage: the caller's
// tensor takes its new geometry only after the outputs are regenerated (MetadataMutations), so
// steps made past the change would be replayed on the old one (AotProgramFuzz generator 3, seeds
// 38746 and 54686).
void find_special_member(const trace::Tracer& tracer, const std::vector<Tensor>& user_fakes,
                         const trace::TensorState& ts, OutputAliasInfo& info) {
  size_t best = 0;
  for (size_t u = 0; u < user_fakes.size(); ++u) {
    const Tensor& f = user_fakes[u];
    const AutogradMeta* m = f.impl()->autograd.get();
    const trace::TensorState* in = tracer.state_of(f);
    if (!f.is_view() || !m || m->view_creation == ViewCreation::normal || !in ||
        in->storage != ts.storage || tracer.metadata_touch(f).storage_touched ||
        in->chain.empty() || in->chain.size() <= best || !extends(ts.chain, in->chain))
      continue;
    best = in->chain.size();
    info.from_input = static_cast<int>(u);
    info.from_input_step = static_cast<int>(best);
  }
}

// Classifies every user output (ViewAndMutationMeta::output_info) and collects the values the
// forward graph must return for them.
OutputPlan classify_outputs(trace::Tracer& tracer, const std::vector<Tensor>& user_fakes,
                            const std::vector<Tensor>& outs, ViewAndMutationMeta& meta) {
  OutputPlan plan;
  std::vector<graph::ValueId> values;
  std::vector<const trace::TensorState*> states;
  for (size_t o = 0; o < outs.size(); ++o) {
    values.push_back(tracer.value_of(outs[o], "output " + std::to_string(o)));
    states.push_back(tracer.state_of(outs[o]));
  }
  std::map<size_t, int> base_of_storage;
  std::map<size_t, int> base_of_detached;  // by detach() call: the base holding its history
  for (size_t o = 0; o < outs.size(); ++o) {
    OutputAliasInfo info;
    info.requires_grad = tracer.requires_grad(values[o]);
    const trace::TensorState* ts = states[o];
    const trace::StorageState* s = ts ? &tracer.storages()[ts->storage] : nullptr;
    size_t chain_offset = 0;  // where view_chain starts in the output's chain
    auto as_value = [&](OutputType type) {
      info.type = type;
      info.graph_output = static_cast<int>(plan.user_values.size());
      plan.user_values.push_back(values[o]);
      plan.user_index.push_back(o);
    };
    if (!ts) {
      as_value(OutputType::non_alias);
    } else if (s->input_index >= 0) {
      int same = -1;
      for (size_t u = 0; u < user_fakes.size() && same < 0; ++u)
        if (user_fakes[u].is_same(outs[o])) same = static_cast<int>(u);
      if (same >= 0) {
        info.type = OutputType::is_input;
        info.base = same;
      } else {
        info.type = OutputType::alias_of_input;
        info.base = s->input_index;
        info.view_chain = to_replay_chain(ts->chain);
        info.made_after_metadata_mutation = tracer.made_after_metadata_mutation(*ts);
        if (info.made_after_metadata_mutation)
          find_own_views(tracer, user_fakes, outs[o], *ts, info);
        else
          find_special_member(tracer, user_fakes, *ts, info);
      }
    } else {
      // A root-like output is its storage's own tensor in eager terms: the root, or the root after
      // t_() / as_strided_() (a new geometry, still no _base). Eager returns it as a plain tensor,
      // and views made from its current geometry as views of it.
      auto root_like = [&](size_t p) { return states[p]->chain.empty() || !outs[p].is_view(); };
      static const ops::OpDef& as_strided = ops::lookup("aten.as_strided.default");
      size_t aliases = 0;
      int root_output = -1;
      std::vector<trace::ViewStep> from_root;
      size_t from_root_offset = 0;
      for (size_t p = 0; p < outs.size(); ++p) {
        if (!states[p] || states[p]->storage != ts->storage) continue;
        ++aliases;
        if (root_output >= 0 || p == o || !root_like(p)) continue;
        const std::vector<trace::ViewStep>& pc = states[p]->chain;
        const std::vector<trace::ViewStep>& oc = ts->chain;
        // Its steps matched with their arguments, as find_own_views' (seed 1221546). A chain a
        // write rebased onto an as_strided of the root (sync) starts with that as_strided, whose
        // arguments are absolute: it is replayed on p whole (matched by op alone, it was taken
        // for p's own as_strided and dropped).
        const bool base_is_p = outs[o]._base().is_same(outs[p]);
        size_t offset = pc.size();
        bool derived = pc.empty() || (base_is_p && extends(oc, pc));
        if (!derived && base_is_p && !oc.empty() && oc.front().op == &as_strided) {
          derived = true;
          offset = 0;
        }
        if (!derived) continue;
        root_output = static_cast<int>(p);
        from_root_offset = offset;
        from_root.assign(oc.begin() + static_cast<std::ptrdiff_t>(offset), oc.end());
      }
      // A piece of split / unbind, or a view made under no_grad of a tensor that requires grad,
      // is regenerated from its base even when alone: eager gives it autograd metadata of its own
      // (trace::replay_view, autograd/view_creation.h).
      bool plain_view = true;
      for (const trace::ViewStep& step : ts->chain)
        plain_view =
            plain_view && !step.piece_of && (step.grad_mode || !tracer.requires_grad(s->root));
      // A detach() result, or that tensor after an in-place geometry op, has no _base in eager
      // (ViewStep::plain); its fake's is the storage's root (AotProgramFuzz, seed 104880).
      const bool detached_tensor =
          !ts->chain.empty() && (ts->chain.back().detached != SIZE_MAX || ts->chain.back().plain);
      if (root_like(o)) {
        as_value(OutputType::non_alias);
      } else if (aliases == 1 && plain_view) {
        as_value(detached_tensor ? OutputType::non_alias : OutputType::unsafe_view_alias);
      } else if (root_output >= 0) {
        info.type = OutputType::alias_of_intermediate_base_is_user_output;
        info.base = root_output;
        info.view_chain = to_replay_chain(from_root);
        chain_offset = from_root_offset;
      } else {
        auto [it, fresh] =
            base_of_storage.emplace(ts->storage, static_cast<int>(plan.bases.size()));
        if (fresh) {
          plan.bases.push_back(s->root);
          plan.base_first_user.push_back(o);
        }
        info.type = fresh ? OutputType::alias_of_intermediate_save_as_output
                          : OutputType::alias_of_intermediate;
        info.base = it->second;
        info.view_chain = to_replay_chain(ts->chain);
      }
    }
    std::optional<trace::Tracer::DetachedHistory> h;
    if (!info.view_chain.empty()) h = tracer.detached_history(*ts);
    // Past a view made under no_grad (of a root that requires grad; a view of one read with
    // grad on, Tracer::bind_no_grad_views) eager's history ends: no gradient of this output
    // reaches its base, so the base gets no tangent from it (outputs_no_gradient_reaches). A
    // detach()ed alias a write gave a history starts a history of its own: only the steps after
    // it count (a write through detach() of a no_grad view, AotProgramFuzz seed 707555).
    if (!info.view_chain.empty() && ts)
      for (size_t i = h ? h->step + 1 : 0; i < ts->chain.size(); ++i)
        if (const trace::ViewStep& step = ts->chain[i];
            !step.grad_mode && step.op->vjp && (h || tracer.requires_grad(s->root)))
          info.requires_grad = false;
    if (!info.view_chain.empty() && autograd::written_since_special_view_creation(outs[o]))
      info.view_chain.back().written_after = true;
    if (!info.view_chain.empty())
      if (h && h->step >= chain_offset) {
        auto [it, fresh] = base_of_detached.emplace(h->id, static_cast<int>(plan.bases.size()));
        if (fresh) {
          plan.bases.push_back(h->value);
          plan.base_first_user.push_back(o);
        }
        info.history_base = it->second;
        info.history_step = static_cast<int>(h->step - chain_offset);
        info.own_views_of_input = info.own_views_from = -1;  // replayed with that history
        info.from_input = -1;
      }
    if (info.type != OutputType::non_alias && info.type != OutputType::is_input)
      for (size_t p = 0; p < o && info.same_as < 0; ++p)
        if (outs[p].is_same(outs[o])) info.same_as = static_cast<int>(p);
    meta.output_info.push_back(std::move(info));
  }
  return plan;
}

// requires_grad_() inside the function (Tracer::set_requires_grad). An input's new flag is set
// on the caller's tensor by the runtime; a tensor made a leaf inside the function is returned as
// a fresh leaf (requires_grad_set_inside). That is exact unless autograd also recorded ops on the
// leaf: eager's backward would then fill the returned tensor's .grad(), which the compiled
// backward cannot reach, so that case is refused.
void record_requires_grad_changes(const trace::Tracer& tracer, const InputPlan& plan,
                                  const std::vector<Tensor>& user_fakes,
                                  const std::vector<Tensor>& outs, const std::string& fn_name,
                                  ViewAndMutationMeta& meta) {
  auto overlapping = [&](size_t input) {
    return trace::UnsupportedError(
        fn_name + ": the function called requires_grad_() on input " + std::to_string(input) +
        ", which overlaps another input in memory; aot_function passes those as one synthetic "
        "base and cannot change the caller's tensor. Call requires_grad_() before the call.");
  };
  for (const trace::Tracer::RequiresGradChange& c : tracer.input_requires_grad_changes()) {
    bool found = false;
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      if (plan.inputs[i].kind == InputPlan::Kind::plain && plan.inputs[i].index == c.graph_input) {
        meta.input_requires_grad_changes.push_back({i, c.requires_grad});
        found = true;
      }
    if (!found) throw overlapping(c.graph_input);
  }
  for (const trace::Tracer::InteriorLeaf& leaf : tracer.interior_leaves()) {
    if (!leaf.requires_grad) continue;
    for (size_t i = 0; i < user_fakes.size(); ++i)
      if (user_fakes[i].impl() == leaf.tensor) throw overlapping(i);
    for (size_t o = 0; o < outs.size(); ++o) {
      if (outs[o].impl() == leaf.tensor) meta.output_info[o].requires_grad_set_inside = true;
      if (leaf.used_with_grad && outs[o].storage().get() == leaf.storage)
        throw trace::UnsupportedError(
            fn_name + ": output " + std::to_string(o) +
            " shares memory with a tensor the "
            "function made a leaf that requires grad (requires_grad_()) and then computed with; "
            "eager's backward would fill that tensor's .grad(), which the compiled backward "
            "cannot reach. Make it an input of the function that requires grad instead.");
    }
  }
}

// Every backward error a backward through the trace could raise, each at the forward node whose
// VJP would raise it: a saved value overwritten in place (Tracer::backward_errors), then, in
// backward's order, the nodes an autograd::grad without retain_graph inside the function freed
// (Tracer::freed_nodes). lower_training keeps those whose VJP the joint graph runs.
std::vector<BackwardError> backward_error_candidates(const trace::Tracer& tracer,
                                                     const graph::Graph& g) {
  std::vector<BackwardError> errors;
  for (const trace::Tracer::BackwardError& e : tracer.backward_errors())
    errors.push_back({g.nodes()[e.node].outputs.at(0), e.message});
  const std::vector<bool>& freed = tracer.freed_nodes();
  for (size_t ni = std::min(g.nodes().size(), freed.size()); ni-- > 0;)
    if (freed[ni] && g.nodes()[ni].op->vjp && !g.nodes()[ni].outputs.empty())
      errors.push_back({g.nodes()[ni].outputs[0],
                        "Trying to backward through the graph a second time (at " +
                            std::string(g.nodes()[ni].op->name) +
                            "): an autograd::grad inside the compiled function freed its saved "
                            "values. Pass retain_graph=true to that grad() if you need to backward "
                            "through it again."});
  return errors;
}

// Inputs whose fake ended the trace with another geometry than the caller's tensor (t_,
// as_strided_, ...). Changes that cancel out (t_ twice) are not mutations, as in PyTorch.
void record_metadata_mutations(const trace::Tracer& tracer, const std::vector<Tensor>& inputs,
                               const InputPlan& plan, const std::vector<Tensor>& user_fakes,
                               ViewAndMutationMeta& meta) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputPlan::Entry& e = plan.inputs[i];
    const Tensor& f = user_fakes[i];
    if (e.kind == InputPlan::Kind::duplicate) continue;  // the same tensor as input e.index
    trace::Tracer::MetadataTouch touch = tracer.metadata_touch(f);
    if (!touch.storage_touched) continue;
    bool changed = f.sizes() != inputs[i].sizes() || f.strides() != inputs[i].strides() ||
                   f.storage_offset() != inputs[i].storage_offset();
    MetadataMutation m{i, changed, f.sizes(), f.strides(), f.storage_offset(), touch.under_grad};
    std::optional<trace::Tracer::Geometry> at = tracer.geometry_at_last_visible_write(f);
    const Tensor& caller = inputs[i];
    const bool plain_tensor = e.kind == InputPlan::Kind::plain && !caller.is_view();
    auto add_runs = [&m](const std::vector<trace::Tracer::GeometryRun>& runs) {
      for (const trace::Tracer::GeometryRun& run : runs)
        m.runs.push_back(
            {run.after.sizes, run.after.strides, run.after.storage_offset, run.grad_on});
    };
    std::vector<trace::Tracer::GeometryRun> runs = tracer.metadata_runs(f);
    if (runs.size() > 1 && !at) add_runs(runs);
    // Changes in both modes and a write with grad on among them: eager's node is the write's,
    // at the geometry the input had then, plus the runs after it made with grad on; a change
    // under no_grad after the write is not recorded. The runtime writes the value in that
    // geometry and replays the runs after it, each in its mode. When every change after the
    // write was made with grad on, replaying the final geometry at once with grad on maps the
    // gradient as eager's nodes do.
    std::vector<trace::Tracer::GeometryRun> after_write =
        at && touch.under_grad ? tracer.metadata_runs_after_last_visible_write(f)
                               : std::vector<trace::Tracer::GeometryRun>{};
    const bool unrecorded_after_write =
        std::any_of(after_write.begin(), after_write.end(),
                    [](const trace::Tracer::GeometryRun& r) { return !r.grad_on; });
    if (unrecorded_after_write) {
      if (!plain_tensor)
        throw trace::UnsupportedError(
            "input " + std::to_string(i) +
            " is a view (or shares its storage with another input) whose geometry was changed in "
            "place both with grad on and under no_grad, with a write with grad on between; "
            "aot_function cannot replay that history on it. Change the geometry before the call "
            "or pass a tensor that is not a view.");
      // The write's backward passes the previous history a gradient in the write's sizes:
      // eager's history had them when the changes before the write that changed sizes were
      // recorded. Otherwise eager fits (or refuses) it in sizes the runtime's history lacks.
      IntList recorded_sizes = caller.sizes();
      for (const trace::Tracer::GeometryRun& run :
           tracer.metadata_runs_before_last_visible_write(f))
        if (run.grad_on) recorded_sizes = run.after.sizes;
      if (recorded_sizes != at->sizes)
        throw trace::UnsupportedError(
            "input " + std::to_string(i) + " was written with grad on in sizes " +
            shape_to_string(at->sizes) + " that a change under no_grad gave it (its history has " +
            shape_to_string(recorded_sizes) +
            "), between changes of its geometry with grad on and under no_grad; aot_function "
            "cannot replay that history. Change the geometry before the call.");
      add_runs(after_write);
    }
    if (unrecorded_after_write ||
        (at && plain_tensor && !touch.under_grad &&
         (at->sizes != caller.sizes() || at->strides != caller.strides() ||
          at->storage_offset != caller.storage_offset()))) {
      m.written_in_other_geometry = true;
      m.written_sizes = at->sizes;
      m.written_strides = at->strides;
      m.written_storage_offset = at->storage_offset;
    }
    meta.metadata_mutations.push_back(std::move(m));
    if (changed && e.kind == InputPlan::Kind::plain)
      meta.input_info[e.index].mutates_metadata = true;
  }
}

// Runs the user's function on fakes under `tracer`; its outputs, a returned literal made a
// constant (its fake in its place).
std::vector<Tensor> run_traced(trace::Tracer& tracer, const FlatFn& fn,
                               const std::vector<Tensor>& inputs, const InputPlan& plan,
                               const std::vector<Tensor>& graph_inputs,
                               const std::vector<Descriptor>& graph_descs, const AotConfig& config,
                               std::vector<Tensor>& user_fakes) {
  try {
    ops::InterpreterGuard guard(tracer);
    user_fakes = make_user_fakes(tracer, inputs, plan, graph_inputs, graph_descs);
    std::vector<Tensor> outs = fn(user_fakes);
    for (size_t o = 0; o < outs.size(); ++o) {
      tracer.value_of(outs[o], "output " + std::to_string(o));
      outs[o] = tracer.traced_form(outs[o]);
    }
    return outs;
  } catch (const trace::UnsupportedError&) {
    throw;
  } catch (const std::runtime_error&) {
    throw;  // eager's own errors (in-place on a leaf, ...) keep their type and message
  } catch (const std::exception& e) {
    throw std::invalid_argument(config.name + ": tracing failed for inputs (" +
                                describe_inputs(inputs) + "): " + e.what());
  }
}

// Which values autograd tracks, by value index. A leaf made inside the function that nothing
// computed with is returned without history (the runtime makes it a leaf again), so its value
// needs no tangent.
std::vector<bool> values_requiring_grad(const trace::Tracer& tracer, size_t num_values) {
  std::vector<bool> rg(num_values);
  for (uint32_t v = 0; v < num_values; ++v) rg[v] = tracer.requires_grad(graph::ValueId{v});
  for (const trace::Tracer::InteriorLeaf& leaf : tracer.interior_leaves())
    if (!leaf.used_with_grad) rg[leaf.value.index] = false;
  return rg;
}

// ViewAndMutationMeta::input_info and mutated_inputs from the trace's storages; returns the
// graph value holding each mutated input's new value.
std::vector<graph::ValueId> record_input_mutations(const trace::Tracer& tracer,
                                                   const std::vector<Tensor>& graph_inputs,
                                                   const InputPlan& plan,
                                                   ViewAndMutationMeta& meta) {
  std::vector<graph::ValueId> mutated_values;
  for (const Tensor& t : graph_inputs) {
    InputAliasInfo info;
    info.requires_grad = t.requires_grad();
    info.is_leaf = t.is_leaf();
    meta.input_info.push_back(info);
  }
  for (const trace::StorageState& s : tracer.storages()) {
    // Inputs the tracer adds past the user's (a module's state, ...) have no entry; none is
    // written (a written one would be a mutated graph input, which the loop below indexes).
    if (s.input_index < 0 || static_cast<size_t>(s.input_index) >= meta.input_info.size()) {
      if (s.mutated && s.input_index >= 0)
        throw std::logic_error("capture: a written input beyond the graph's inputs");
      continue;
    }
    InputAliasInfo& info = meta.input_info[s.input_index];
    // Also where the input is not written: another input of its caller storage may be.
    info.read_in_place = s.read_in_place;
    if (!s.mutated) continue;
    info.mutates_data = true;
    info.mutations_under_no_grad = s.all_mutations_under_no_grad;
    info.mutations_hidden_from_autograd = s.all_mutations_hidden && !s.all_mutations_under_no_grad;
    meta.mutated_inputs.push_back(static_cast<size_t>(s.input_index));
    mutated_values.push_back(s.root);
  }
  for (const InputPlan::Unmergeable& u : plan.unmergeable)
    for (size_t m : u.members)
      if (meta.input_info[plan.inputs[m].index].mutates_data)
        throw trace::UnsupportedError(u.reason);
  return mutated_values;
}

// Whether anything the caller gets needs autograd. A mutation under no_grad or through detach()
// is invisible to autograd: alone it needs no training graph (the value is still written back,
// without history).
bool needs_autograd(const ViewAndMutationMeta& meta, const std::vector<bool>& rg,
                    const std::vector<graph::ValueId>& mutated_values, const OutputPlan& out_plan) {
  bool needs = false;
  for (size_t k = 0; k < mutated_values.size(); ++k) {
    const InputAliasInfo& info = meta.input_info[meta.mutated_inputs[k]];
    bool visible = !info.mutations_under_no_grad && !info.mutations_hidden_from_autograd;
    needs = needs || (visible && rg[mutated_values[k].index]);
  }
  for (graph::ValueId v : out_plan.user_values) needs = needs || rg[v.index];
  for (graph::ValueId v : out_plan.bases) needs = needs || rg[v.index];
  return needs;
}

// The graph's outputs, with their descriptors: new values of mutated inputs (or, kept in an
// inference graph, copy_ nodes into the inputs instead), non-aliased user outputs, intermediate
// bases.
void add_forward_outputs(CapturedForward& c, const std::vector<graph::ValueId>& mutated_values,
                         const OutputPlan& out_plan, bool keep_in_graph) {
  ViewAndMutationMeta& meta = c.meta;
  graph::Graph& g = c.graph;
  if (keep_in_graph) {
    const ops::OpDef& copy = ops::lookup("aten.copy_.default");
    for (size_t k = 0; k < meta.mutated_inputs.size(); ++k) {
      size_t i = meta.mutated_inputs[k];
      graph::ValueId input = g.inputs()[i];
      g.add_node(copy, {input, mutated_values[k], false}, {g.value(input).meta});
      meta.input_info[i].keep_in_graph = true;
    }
  } else {
    for (size_t k = 0; k < mutated_values.size(); ++k)
      g.add_output(mutated_values[k],
                   Descriptor::wrapping(DescriptorKind::mutated_input,
                                        g.input_descs()[meta.mutated_inputs[k]]));
  }
  for (size_t k = 0; k < out_plan.user_values.size(); ++k)
    g.add_output(out_plan.user_values[k],
                 Descriptor::output(static_cast<int64_t>(out_plan.user_index[k])));
  for (size_t k = 0; k < out_plan.bases.size(); ++k)
    g.add_output(out_plan.bases[k],
                 Descriptor::wrapping(
                     DescriptorKind::intermediate_base,
                     Descriptor::output(static_cast<int64_t>(out_plan.base_first_user[k]))));
  meta.num_user_graph_outputs = out_plan.user_values.size();
  meta.num_intermediate_bases = out_plan.bases.size();
}

// Eager's leaf takes the gradient of its new geometry as it is (aotgrad.geometry_update with
// fit=False), fitted by its AccumulateGrad to the sizes it recorded when made: at the first use
// with grad inside the function, whose sizes the runtime gives an accumulator the call makes
// (AutogradBody), or before the call, which the engine fits to alike. A written leaf's edge is
// taken before the runtime clones it. Refused:
// - when other inputs view the leaf (a synthetic base) and its sizes changed, or it was used in
//   other sizes than the caller's: the gradient would reach it through the base, in the caller's
//   sizes. With its sizes kept, its views regenerated after the change read its new geometry as
//   eager's do (Tracer::functionalize_metadata; AotProgramFuzz, seed 704161, refused until then);
// - when the leaf was used with grad in several sizes (t_ of a non-square leaf between two
//   uses): eager fits each gradient to the accumulator's sizes before adding them, the joint
//   graph would add them first (AotProgramFuzz, seed 2923634).
// Its data written under no_grad in the caller's sizes is not refused: the input's own geometry
// step is marked, so its value read again after the write takes the gradient as it is
// (Tracer::functionalize_metadata, seed 926919).
void check_metadata_mutations_of_leaves(const ViewAndMutationMeta& meta,
                                        const std::vector<Tensor>& inputs, const InputPlan& plan,
                                        const trace::Tracer& tracer,
                                        const std::vector<Tensor>& user_fakes,
                                        const std::string& fn_name) {
  for (const MetadataMutation& m : meta.metadata_mutations) {
    const Tensor& input = inputs[m.input];
    if (m.under_grad || !input.is_leaf() || !input.requires_grad()) continue;
    const std::vector<IntList> reads = tracer.metadata_touch(user_fakes[m.input]).grad_read_sizes;
    const bool plain = plan.inputs[m.input].kind == InputPlan::Kind::plain;
    const bool read_in_other_sizes = !reads.empty() && reads[0] != input.sizes();
    const char* what = nullptr;
    if (!plain && ((m.changed && input.sizes() != m.sizes) || read_in_other_sizes))
      what =
          ", another input views it, and its sizes were changed in place under no_grad (t_, "
          "transpose_, as_strided_, ...); aot_function cannot give its gradient the new sizes.";
    else if (reads.size() > 1)
      what =
          ", used with grad in several sizes while its sizes were changed in place under no_grad "
          "(t_, transpose_, as_strided_, ...); aot_function cannot fit each use's gradient to "
          "the sizes of the first.";
    if (what)
      throw trace::UnsupportedError(fn_name + ": input " + std::to_string(m.input) +
                                    " is a leaf that requires grad" + what +
                                    " Change the geometry before the call.");
  }
}

}  // namespace

CapturedForward capture_forward(const FlatFn& fn, const std::vector<Tensor>& inputs,
                                const InputPlan& plan, const std::vector<Descriptor>& input_descs,
                                const AotConfig& config) {
  CapturedForward c;
  trace::Tracer tracer(c.graph);
  std::vector<Tensor> graph_inputs = graph_inputs_for(plan, inputs);
  std::vector<Tensor> user_fakes;
  std::vector<Tensor> outs = run_traced(tracer, fn, inputs, plan, graph_inputs,
                                        graph_input_descs(plan, input_descs), config, user_fakes);
  c.node_budgets = tracer.node_budgets();
  c.reads_input_offsets = tracer.reads_input_offsets();
  ViewAndMutationMeta& meta = c.meta;
  meta.keep_input_mutations = config.keep_inference_input_mutations;
  OutputPlan out_plan = classify_outputs(tracer, user_fakes, outs, meta);
  record_requires_grad_changes(tracer, plan, user_fakes, outs, config.name, meta);
  outs.clear();  // the function's literals must be gone now; a tensor still alive was captured
  if (std::string captured = tracer.captured_constant(); !captured.empty())
    throw std::invalid_argument(
        config.name + ": the function uses " + captured +
        " it did not receive as an input (a "
        "captured tensor: it outlives the call, so aot_function cannot write it into the graph "
        "as a literal). Pass it to the function as an argument.");
  std::vector<bool> rg = values_requiring_grad(tracer, c.graph.values().size());
  std::vector<graph::ValueId> mutated_values =
      record_input_mutations(tracer, graph_inputs, plan, meta);
  record_metadata_mutations(tracer, inputs, plan, user_fakes, meta);
  c.needs_autograd = needs_autograd(meta, rg, mutated_values, out_plan);
  if (c.needs_autograd)
    check_metadata_mutations_of_leaves(meta, inputs, plan, tracer, user_fakes, config.name);
  add_forward_outputs(c, mutated_values, out_plan,
                      config.keep_inference_input_mutations && !c.needs_autograd);
  // The last effect token is the last forward output (include/aotgrad/effects.h).
  if (tracer.effect_token().defined())
    c.graph.add_output(tracer.value_of(tracer.effect_token(), "the effect token"),
                       Descriptor{DescriptorKind::fw_token, 0});
  rg.resize(c.graph.values().size(), false);  // copy_ results (inference only)
  c.value_requires_grad = rg;
  if (c.needs_autograd) c.backward_errors = backward_error_candidates(tracer, c.graph);
  return c;
}

}  // namespace aotgrad::aot
