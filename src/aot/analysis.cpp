#include "aot/analysis.h"

#include <sstream>
#include <stdexcept>

#include "tensor/message_text.h"

namespace aotgrad::aot {

ViewReplayStep to_replay_step(const trace::ViewStep& step) {
  ViewReplayStep r;
  r.op = std::string(step.op->name);
  r.args = step.args;
  r.grad_mode = step.grad_mode;
  if (step.piece_of) r.piece_of = std::string(step.piece_of->name);
  r.piece_args = step.piece_args;
  r.piece = step.piece;
  r.piece_group = step.piece_group;
  r.written_after = step.written_after;
  r.plain = step.plain;
  return r;
}

namespace {
const ops::OpDef& view_op(const std::string& name) {
  const ops::OpDef* op = ops::find(name);
  if (!op || op->view_of_arg() < 0)
    throw std::invalid_argument("view replay step names '" + escape_for_message(name, 80) +
                                "', which is not a view op of this build's op table");
  return *op;
}
}  // namespace

trace::ViewStep resolve(const ViewReplayStep& r) {
  trace::ViewStep step;
  step.op = &view_op(r.op);
  step.args = r.args;
  step.grad_mode = r.grad_mode;
  if (!r.piece_of.empty()) step.piece_of = &view_op(r.piece_of);
  step.piece_args = r.piece_args;
  step.piece = r.piece;
  step.piece_group = r.piece_group;
  step.written_after = r.written_after;
  step.plain = r.plain;
  return step;
}

std::vector<ViewReplayStep> to_replay_chain(const std::vector<trace::ViewStep>& chain) {
  std::vector<ViewReplayStep> out;
  out.reserve(chain.size());
  for (const trace::ViewStep& s : chain) out.push_back(to_replay_step(s));
  return out;
}

std::vector<trace::ViewStep> resolve(const std::vector<ViewReplayStep>& chain) {
  std::vector<trace::ViewStep> out;
  out.reserve(chain.size());
  for (const ViewReplayStep& s : chain) out.push_back(resolve(s));
  return out;
}

std::string_view output_type_name(OutputType t) {
  switch (t) {
    case OutputType::non_alias:
      return "non_alias";
    case OutputType::alias_of_input:
      return "alias_of_input";
    case OutputType::is_input:
      return "is_input";
    case OutputType::alias_of_intermediate_save_as_output:
      return "alias_of_intermediate_save_as_output";
    case OutputType::alias_of_intermediate:
      return "alias_of_intermediate";
    case OutputType::alias_of_intermediate_base_is_user_output:
      return "alias_of_intermediate_base_is_user_output";
    case OutputType::unsafe_view_alias:
      return "unsafe_view_alias";
  }
  return "?";
}

std::string ViewAndMutationMeta::to_string() const {
  std::ostringstream os;
  os << "ViewAndMutationMeta\n";
  for (size_t i = 0; i < input_info.size(); ++i) {
    const InputAliasInfo& in = input_info[i];
    os << "  input " << i << ": requires_grad=" << in.requires_grad << " is_leaf=" << in.is_leaf
       << " mutates_data=" << in.mutates_data << " mutates_metadata=" << in.mutates_metadata
       << " hidden_from_autograd=" << in.mutations_hidden_from_autograd
       << " under_no_grad=" << in.mutations_under_no_grad << " keep_in_graph=" << in.keep_in_graph;
    if (in.read_in_place) os << " read_in_place=1";
    os << "\n";
  }
  for (size_t o = 0; o < output_info.size(); ++o) {
    const OutputAliasInfo& out = output_info[o];
    os << "  output " << o << ": " << output_type_name(out.type);
    if (out.base >= 0) os << " base=" << out.base;
    if (out.graph_output >= 0) os << " graph_output=" << out.graph_output;
    os << " requires_grad=" << out.requires_grad;
    if (out.requires_grad_set_inside) os << " (a leaf made inside)";
    if (!out.view_chain.empty()) {
      os << " view_chain=[";
      for (size_t k = 0; k < out.view_chain.size(); ++k)
        os << (k ? ", " : "") << out.view_chain[k].op;
      os << "]";
    }
    if (out.history_base >= 0)
      os << " history=base " << out.history_base << " from step " << out.history_step;
    if (out.made_after_metadata_mutation) os << " made_after_metadata_mutation";
    if (out.own_views_of_input >= 0)
      os << " own views of input " << out.own_views_of_input << " from step " << out.own_views_from;
    if (out.own_views_start_made_before)
      os << " (from its view made before the change: sizes " << shape_to_string(out.start_sizes)
         << " strides " << shape_to_string(out.start_strides) << " storage_offset "
         << out.start_storage_offset << ")";
    if (out.same_as >= 0) os << " same tensor as output " << out.same_as;
    if (out.from_input >= 0)
      os << " replayed from user input " << out.from_input << " from step " << out.from_input_step;
    os << "\n";
  }
  for (const RequiresGradChange& c : input_requires_grad_changes)
    os << "  requires_grad_(" << (c.requires_grad ? "true" : "false") << ") on user input "
       << c.input << "\n";
  for (const MetadataMutation& m : metadata_mutations) {
    if (!m.runs.empty()) {
      os << "  metadata mutation of user input " << m.input << " in runs:";
      for (const MetadataMutation::Run& run : m.runs)
        os << " sizes " << shape_to_string(run.sizes) << " strides " << shape_to_string(run.strides)
           << " storage_offset " << run.storage_offset
           << (run.under_grad ? " (seen by autograd);" : " (under no_grad);");
    } else if (!m.changed) {
      os << "  metadata ops without effect on user input " << m.input << " (version bump only)\n";
      continue;
    } else {
      os << "  metadata mutation of user input " << m.input << ": sizes "
         << shape_to_string(m.sizes) << " strides " << shape_to_string(m.strides)
         << " storage_offset " << m.storage_offset
         << (m.under_grad ? " (seen by autograd)" : " (under no_grad)");
    }
    if (m.written_in_other_geometry)
      os << (m.runs.empty() ? ", last written" : " after the last write, made")
         << " with grad on in sizes " << shape_to_string(m.written_sizes) << " strides "
         << shape_to_string(m.written_strides) << " storage_offset " << m.written_storage_offset;
    os << "\n";
  }
  os << "  mutated inputs: " << mutated_inputs.size()
     << ", intermediate bases: " << num_intermediate_bases << "\n";
  return os.str();
}

}  // namespace aotgrad::aot
