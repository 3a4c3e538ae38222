// ViewAndMutationMeta: what a traced function did to its inputs and how its outputs alias, in
// one plain struct the runtime walks (PyTorch's ViewAndMutationMeta, InputAliasInfo and
// OutputAliasInfo).
#pragma once

#include <string>
#include <vector>

#include "trace/functionalize.h"

namespace aotgrad::aot {

struct InputAliasInfo {  // one per graph input
  bool is_leaf = true;
  bool requires_grad = false;
  bool mutates_data = false;
  bool mutates_metadata = false;  // always false for now: no metadata-mutating ops are traced
  bool mutations_hidden_from_autograd = false;   // every write went through a detach()ed alias
  bool mutations_under_no_grad = false;          // every write happened under no_grad
  bool keep_in_graph = false;  // the mutation is a copy_ inside the graph (inference only)
};

enum class OutputType : uint8_t {
  non_alias,
  alias_of_input,
  is_input,
  alias_of_intermediate_save_as_output,
  alias_of_intermediate,
  alias_of_intermediate_base_is_user_output,
  unsafe_view_alias,
};
std::string_view output_type_name(OutputType t);

struct OutputAliasInfo {  // one per user output
  OutputType type = OutputType::non_alias;
  // alias_of_input: graph input; is_input: user input; alias_of_intermediate*: intermediate base;
  // alias_of_intermediate_base_is_user_output: user output. -1 otherwise.
  int base = -1;
  int graph_output = -1;  // non_alias / unsafe_view_alias: forward graph output holding it
  bool requires_grad = false;
  std::vector<trace::ViewStep> view_chain;  // replayed on the base to regenerate the alias
};

struct ViewAndMutationMeta {
  std::vector<InputAliasInfo> input_info;
  std::vector<OutputAliasInfo> output_info;
  // Forward graph outputs are (new values of mutated inputs, non-aliased user outputs,
  // intermediate bases); these say which graph input each mutation writes to, and the counts.
  std::vector<size_t> mutated_inputs;
  size_t num_user_graph_outputs = 0;
  size_t num_intermediate_bases = 0;
  bool keep_input_mutations = false;

  std::string to_string() const;
};

}  // namespace aotgrad::aot
