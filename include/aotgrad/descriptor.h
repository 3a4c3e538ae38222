// Typed descriptors of graph inputs and outputs (PyTorch's _aot_autograd/descriptors.py): what
// each input and output of a forward, backward, joint or inference graph stands for, so that a
// reader (or a compiler, or export) knows without counting positions.
//
//   param(layer1.weight)      a module parameter, by fully-qualified name (aot_module)
//   buffer(bn.running_mean)   a module buffer
//   input(2)                  the user's flat tensor input 2 (parameters and buffers not counted)
//   synthetic_base(input(0), input(1))   one storage passed for overlapping inputs, a mutation
//   view_base(input(0), input(1))        of one visible through the others; view_base when the
//                                        members share a common _base (PyTorch's ViewBaseAOTInput)
//   tangent(output(0))        the gradient flowing into a forward output (backward input)
//   saved(3)                  a value the forward saves for the backward (both sides)
//   output(1)                 the user's flat output 1
//   mutated_input(buffer(n))  the new value of a mutated input, written back by the runtime
//   intermediate_base(output(2))  the base of aliased outputs, returned so they can be regenerated
//   grad(param(w))            the gradient of an input (backward output)
//   fw_rng_seed(), fw_rng_offset(N)   the calling thread's generator seed and offset, fed by the
//                             runtime to graphs with random ops (N: the Philox blocks one call
//                             draws; docs/partitioning.md "Random ops and effects")
//   fw_token(k)               the effect token threaded through effectful ops (input and output)
//   bw_rng_seed(), bw_rng_offset(), fw_rng_new_offset(), bw_rng_new_offset(), bw_token(k)
//                             PyTorch's other state descriptors, parsed and printed; the backward
//                             reads the forward's seed and offset as saved(k) instead
//
// Descriptors nest only down the pipeline, as in PyTorch: tangent and grad wrap the descriptor of
// what they are the gradient of, mutated_input the input it writes. In graph text a descriptor is
// the comment after a signature or return entry (docs/ir.md "Descriptors").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aotgrad {

enum class DescriptorKind : uint8_t {
  none,  // no descriptor (a graph written by hand may leave them out)
  // inputs
  param,
  buffer,
  input,
  synthetic_base,
  view_base,
  tangent,
  fw_rng_seed,
  fw_rng_offset,
  bw_rng_seed,
  bw_rng_offset,
  // inputs and outputs
  saved,
  fw_token,
  bw_token,
  // outputs
  output,
  mutated_input,
  intermediate_base,
  grad,
  fw_rng_new_offset,
  bw_rng_new_offset,
};

struct Descriptor {
  DescriptorKind kind = DescriptorKind::none;
  int64_t index = 0;           // input, output, saved, fw_token, bw_token: the position
  std::string name;            // param, buffer: the fully-qualified name
  std::vector<Descriptor> of;  // tangent, grad, mutated_input, intermediate_base: one;
                               // synthetic_base, view_base: the members

  static Descriptor param(std::string fqn);
  static Descriptor buffer(std::string fqn);
  static Descriptor input(int64_t k);
  static Descriptor output(int64_t k);
  static Descriptor saved(int64_t k);
  // kind is tangent, grad, mutated_input or intermediate_base.
  static Descriptor wrapping(DescriptorKind kind, Descriptor inner);
  static Descriptor base(bool view_base, std::vector<Descriptor> members);

  bool empty() const { return kind == DescriptorKind::none; }
  // "param(layer1.weight)", "tangent(output(0))"; "" for none. A name that is not made of
  // [A-Za-z0-9_.] is written as a quoted string with the graph format's escapes.
  std::string to_string() const;
  bool operator==(const Descriptor& o) const;
};

// Parses what to_string writes; throws std::invalid_argument (one line naming the problem) on
// anything else. Nesting is limited to 64 levels.
Descriptor parse_descriptor(std::string_view text);
// Whether `text` starts with a descriptor kind and '(' (a comment that means to be a descriptor).
bool looks_like_descriptor(std::string_view text);
std::string_view descriptor_kind_name(DescriptorKind kind);

// The descriptors of one graph's inputs and outputs, in order.
struct GraphDescriptors {
  std::vector<Descriptor> inputs, outputs;
  bool operator==(const GraphDescriptors&) const = default;
};

}  // namespace aotgrad
