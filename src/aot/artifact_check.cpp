// validate_artifact (aot/artifact.h): the consistency an Artifact's runtime relies on. lower makes
// artifacts that pass by construction; deserialize_artifact runs this on bytes from elsewhere, so
// that instantiate and every later call only ever index within bounds.
#include <cstdint>
#include <string>

#include "aot/artifact.h"
#include "graph/node_args.h"
#include "tensor/message_text.h"

namespace aotgrad::aot {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw ArtifactError(
      escape_for_message("artifact: inconsistent: " + what, 300, /*keep_backslash=*/true));
}

void check_index(size_t i, size_t n, const std::string& what) {
  if (i >= n) fail(what + " is " + std::to_string(i) + ", but there are only " + std::to_string(n));
}

void check_plan(const InputPlan& p, size_t num_guards) {
  size_t n = p.inputs.size();
  if (n != num_guards)
    fail("the plan has " + std::to_string(n) + " inputs, the guards " + std::to_string(num_guards));
  using Kind = InputPlan::Kind;
  for (size_t i = 0; i < n; ++i) {
    const InputPlan::Entry& e = p.inputs[i];
    std::string what = "plan input " + std::to_string(i);
    if (e.kind == Kind::plain) {
      check_index(e.index, p.graph_inputs.size(), what + "'s graph input");
      const InputPlan::GraphInput& g = p.graph_inputs[e.index];
      if (g.is_base || g.index != i) fail(what + " and its graph input disagree");
    } else if (e.kind == Kind::duplicate) {
      if (e.index >= i || p.inputs[e.index].kind == Kind::duplicate)
        fail(what + " repeats input " + std::to_string(e.index) + ", not an earlier original");
    } else {
      check_index(e.index, p.bases.size(), what + "'s synthetic base");
    }
  }
  std::vector<int> graph_input_of_base(p.bases.size(), -1);
  for (size_t g = 0; g < p.graph_inputs.size(); ++g) {
    const InputPlan::GraphInput& gi = p.graph_inputs[g];
    std::string what = "plan graph input " + std::to_string(g);
    if (!gi.is_base) {
      check_index(gi.index, n, what + "'s user input");
      if (p.inputs[gi.index].kind != Kind::plain || p.inputs[gi.index].index != g)
        fail(what + " and its user input disagree");
      continue;
    }
    check_index(gi.index, p.bases.size(), what + "'s synthetic base");
    if (graph_input_of_base[gi.index] >= 0) fail(what + " repeats a synthetic base");
    graph_input_of_base[gi.index] = static_cast<int>(g);
  }
  for (size_t b = 0; b < p.bases.size(); ++b) {
    std::string what = "synthetic base " + std::to_string(b);
    if (graph_input_of_base[b] < 0 || p.bases[b].members.empty())
      fail(what + " has no graph input or no members");
    for (size_t m : p.bases[b].members) {
      check_index(m, n, what + "'s member");
      if (p.inputs[m].kind != Kind::member || p.inputs[m].index != b)
        fail(what + " and its member " + std::to_string(m) + " disagree");
    }
  }
  for (const InputPlan::Unmergeable& u : p.unmergeable)
    for (size_t m : u.members) check_index(m, n, "an unmergeable group's member");
  if (!p.same_base_as.empty() && p.same_base_as.size() != n)
    fail("the plan names the _base of " + std::to_string(p.same_base_as.size()) + " of " +
         std::to_string(n) + " inputs");
  for (size_t i = 0; i < p.same_base_as.size(); ++i)
    if (p.same_base_as[i] > i)
      fail("the plan says input " + std::to_string(i) + " shares the _base of a later input");
}

// A view step's arguments fit its op's schema, with the viewed tensor's slot left empty.
void check_args(const ops::OpDef& op, const ops::OpArgs& args, const std::string& what) {
  const ops::Schema& schema = op.parsed_schema();
  if (args.size() != schema.args.size())
    fail(what + " gives " + std::string(op.name) + " " + std::to_string(args.size()) +
         " arguments; it takes " + std::to_string(schema.args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    bool is_tensor = std::holds_alternative<Tensor>(args[i]);
    if (static_cast<int>(i) == op.view_of_arg()) {
      if (!is_tensor || std::get<Tensor>(args[i]).defined())
        fail(what + ": the viewed tensor's slot must be an empty tensor");
      continue;
    }
    if (is_tensor || std::holds_alternative<ops::TensorList>(args[i]))
      fail(what + ": argument " + std::to_string(i) + " holds a tensor");
    graph::NodeArg a = std::visit(
        [](const auto& x) -> graph::NodeArg {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, ops::TensorList>)
            return std::monostate{};
          else
            return x;
        },
        args[i]);
    if (!graph::arg_fits_schema(schema.args[i], a))
      fail(what + ": argument '" + schema.args[i].name + "' of " + std::string(op.name) +
           " does not fit its schema");
  }
}

void check_chain(const std::vector<ViewReplayStep>& chain, const std::string& what) {
  for (const ViewReplayStep& s : chain) {
    trace::ViewStep step;
    try {
      step = resolve(s);
    } catch (const std::invalid_argument& e) {
      fail(what + ": " + e.what());
    }
    check_args(*step.op, s.args, what);
    if (step.piece_of) check_args(*step.piece_of, s.piece_args, what);
  }
}

void check_outputs(const ViewAndMutationMeta& m, size_t num_user_inputs, size_t num_graph_inputs) {
  for (size_t o = 0; o < m.output_info.size(); ++o) {
    const OutputAliasInfo& info = m.output_info[o];
    std::string what = "output " + std::to_string(o);
    auto base = static_cast<size_t>(info.base < 0 ? SIZE_MAX : info.base);
    switch (info.type) {
      case OutputType::non_alias:
      case OutputType::unsafe_view_alias:
        check_index(info.graph_output < 0 ? SIZE_MAX : size_t(info.graph_output),
                    m.num_user_graph_outputs, what + "'s graph output");
        break;
      case OutputType::is_input:
        check_index(base, num_user_inputs, what + "'s input");
        break;
      case OutputType::alias_of_input:
        check_index(base, num_graph_inputs, what + "'s base input");
        break;
      case OutputType::alias_of_intermediate:
      case OutputType::alias_of_intermediate_save_as_output:
        check_index(base, m.num_intermediate_bases, what + "'s intermediate base");
        break;
      case OutputType::alias_of_intermediate_base_is_user_output: {
        check_index(base, m.output_info.size(), what + "'s base output");
        OutputType t = m.output_info[base].type;
        if (t != OutputType::non_alias && t != OutputType::unsafe_view_alias &&
            t != OutputType::is_input)
          fail(what + " is an alias of output " + std::to_string(base) + ", itself an alias");
        break;
      }
    }
    check_chain(info.view_chain, what + "'s view chain");
    if ((info.history_base >= 0) != (info.history_step >= 0))
      fail(what + " has half a detached history");
    if (info.history_base >= 0) {
      check_index(static_cast<size_t>(info.history_base), m.num_intermediate_bases,
                  what + "'s history base");
      check_index(static_cast<size_t>(info.history_step), info.view_chain.size(),
                  what + "'s history step");
      if (info.type == OutputType::non_alias || info.type == OutputType::unsafe_view_alias ||
          info.type == OutputType::is_input)
        fail(what + " is no regenerated alias but has a detached history");
    }
    if ((info.own_views_of_input >= 0) != (info.own_views_from >= 0))
      fail(what + " has half a replay from its input's new geometry");
    if (info.own_views_of_input >= 0) {
      if (info.type != OutputType::alias_of_input || !info.made_after_metadata_mutation ||
          info.history_base >= 0)
        fail(what + " replays from its input's new geometry but is no view made after it");
      check_index(static_cast<size_t>(info.own_views_of_input), num_user_inputs, what + "'s input");
      check_index(static_cast<size_t>(info.own_views_from), info.view_chain.size(),
                  what + "'s first own view step");
    }
    if (info.from_input >= 0) {
      if (info.type != OutputType::alias_of_input || info.history_base >= 0 ||
          info.own_views_of_input >= 0)
        fail(what + " replays from a user input but is no plain view of a synthetic base");
      check_index(static_cast<size_t>(info.from_input), num_user_inputs, what + "'s user input");
      if (info.from_input_step < 0 ||
          static_cast<size_t>(info.from_input_step) > info.view_chain.size())
        fail(what + "'s first step from its user input is out of range");
    }
    if (info.own_views_start_made_before && info.own_views_of_input < 0)
      fail(what + " starts a replay from a view made before a geometry change but has none");
    if (info.start_sizes.size() != info.start_strides.size())
      fail(what + "'s replay start has sizes and strides of different lengths");
    if (info.same_as >= 0) {
      check_index(static_cast<size_t>(info.same_as), o, what + "'s earlier self");
      auto regenerated = [](OutputType t) {
        return t != OutputType::non_alias && t != OutputType::is_input;
      };
      if (!regenerated(info.type) || !regenerated(m.output_info[info.same_as].type))
        fail(what + " is the same tensor as output " + std::to_string(info.same_as) +
             " but one of them is no regenerated alias");
    }
  }
}

void check_meta(const Artifact& a, size_t num_graph_outputs) {
  const ViewAndMutationMeta& m = a.meta;
  size_t num_user = a.guards.plan.inputs.size(), num_graph = a.guards.plan.graph_inputs.size();
  if (m.input_info.size() != num_graph)
    fail("the meta describes " + std::to_string(m.input_info.size()) + " graph inputs, the plan " +
         std::to_string(num_graph));
  size_t written = 0;
  for (size_t g : m.mutated_inputs) {
    check_index(g, num_graph, "a mutated input");
    if (m.input_info[g].keep_in_graph && !a.is_inference)
      fail("a training artifact keeps a mutation in its graph");
    written += m.input_info[g].keep_in_graph ? 0 : 1;
  }
  if (written + m.num_user_graph_outputs + m.num_intermediate_bases != num_graph_outputs)
    fail("the meta accounts for " +
         std::to_string(written + m.num_user_graph_outputs + m.num_intermediate_bases) +
         " graph outputs, the graph has " + std::to_string(num_graph_outputs));
  check_outputs(m, num_user, num_graph);
  for (const MetadataMutation& mm : m.metadata_mutations) {
    check_index(mm.input, num_user, "a metadata mutation's input");
    if (mm.sizes.size() != mm.strides.size())
      fail("a metadata mutation's sizes and strides differ in length");
    if (mm.written_sizes.size() != mm.written_strides.size())
      fail("a metadata mutation's written sizes and strides differ in length");
    for (const MetadataMutation::Run& run : mm.runs)
      if (run.sizes.size() != run.strides.size())
        fail("a metadata mutation's run has sizes and strides of different lengths");
    if (!mm.runs.empty() &&
        (mm.runs.back().sizes != mm.sizes || mm.runs.back().strides != mm.strides ||
         mm.runs.back().storage_offset != mm.storage_offset))
      fail("a metadata mutation's last run does not end in its geometry");
  }
  for (const RequiresGradChange& c : m.input_requires_grad_changes)
    check_index(c.input, num_user, "a requires_grad change's input");
}

}  // namespace

void validate_artifact(const Artifact& a) {
  check_plan(a.guards.plan, a.guards.inputs.size());
  size_t num_graph = a.guards.plan.graph_inputs.size();
  const graph::Graph& main = a.is_inference ? a.inference : a.forward;
  // Inputs after the plan's carry RNG state (fw_rng_seed, fw_rng_offset) and the effect token
  // (fw_token), fed by the runtime.
  size_t num_state = 0;
  for (const Descriptor& d : main.input_descs())
    num_state += d.kind == DescriptorKind::fw_rng_seed || d.kind == DescriptorKind::fw_rng_offset ||
                 d.kind == DescriptorKind::fw_token;
  // ... and the effect token it returns last (after the outputs the meta accounts for).
  size_t num_tokens = 0;
  for (const Descriptor& d : main.output_descs()) num_tokens += d.kind == DescriptorKind::fw_token;
  if (main.inputs().size() != num_graph + num_state)
    fail("the " + main.name() + " graph takes " + std::to_string(main.inputs().size()) +
         " inputs, the plan makes " + std::to_string(num_graph) + " (and " +
         std::to_string(num_state) + " RNG state and token inputs)");
  if (a.is_inference) {
    if (!a.saved.empty() || !a.tangent_of_output.empty() || !a.grad_of_primal.empty())
      fail("an inference artifact has saved values, tangents or gradients");
    check_meta(a, a.inference.outputs().size() - num_tokens);
    return;
  }
  size_t num_out = a.forward.outputs().size();
  if (a.saved.size() > num_out) fail("more saved values than forward outputs");
  num_out -= a.saved.size();
  check_meta(a, num_out - num_tokens);
  for (size_t o : a.tangent_of_output) check_index(o, num_out, "a tangent's forward output");
  for (size_t p : a.grad_of_primal) check_index(p, num_graph, "a gradient's graph input");
  if (a.backward.inputs().size() != a.saved.size() + a.tangent_of_output.size())
    fail("the backward graph takes " + std::to_string(a.backward.inputs().size()) +
         " inputs, not the saved values and tangents (" +
         std::to_string(a.saved.size() + a.tangent_of_output.size()) + ")");
  if (a.backward.outputs().size() != a.grad_of_primal.size())
    fail("the backward graph returns " + std::to_string(a.backward.outputs().size()) +
         " gradients, the artifact names " + std::to_string(a.grad_of_primal.size()));
}

}  // namespace aotgrad::aot
