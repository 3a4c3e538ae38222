#include "aot/analysis.h"

#include <sstream>

namespace aotgrad::aot {

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
       << " under_no_grad=" << in.mutations_under_no_grad << " keep_in_graph=" << in.keep_in_graph
       << "\n";
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
        os << (k ? ", " : "") << out.view_chain[k].op->name;
      os << "]";
    }
    os << "\n";
  }
  for (const RequiresGradChange& c : input_requires_grad_changes)
    os << "  requires_grad_(" << (c.requires_grad ? "true" : "false") << ") on user input "
       << c.input << "\n";
  for (const MetadataMutation& m : metadata_mutations) {
    if (!m.changed) {
      os << "  metadata ops without effect on user input " << m.input << " (version bump only)\n";
      continue;
    }
    os << "  metadata mutation of user input " << m.input << ": sizes " << shape_to_string(m.sizes)
       << " strides " << shape_to_string(m.strides) << " storage_offset " << m.storage_offset
       << (m.under_grad ? " (seen by autograd)" : " (under no_grad)") << "\n";
  }
  os << "  mutated inputs: " << mutated_inputs.size()
     << ", intermediate bases: " << num_intermediate_bases << "\n";
  return os.str();
}

}  // namespace aotgrad::aot
