// The graph IR: Values (typed SSA names), Nodes (one op-table row applied to values and
// constants), and a Graph (inputs, nodes in execution order, outputs).
//
// Reading guide: a Value is defined once, either as a graph input or as output `output_index`
// of node `producer`. Node arguments mirror ops::Arg one for one, with ValueId where the op takes
// a Tensor. Nodes are kept in a valid execution order; passes that reorder must keep it valid.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "aotgrad/descriptor.h"
#include "ops/op.h"

namespace aotgrad::graph {

struct ValueId {
  uint32_t index = 0;
  auto operator<=>(const ValueId&) const = default;
};

// A None entry of a `Tensor?[]` argument (the indices of index / index_put): a ValueList may hold
// it where the schema says `optional_elements`; it names no value, and arg_values skips it.
inline constexpr ValueId kNoValue{UINT32_MAX};

struct NodeId {
  uint32_t index = 0;
  auto operator<=>(const NodeId&) const = default;
};

// A node argument: same alternatives, in the same order, as ops::Arg, with values for tensors.
using ValueList = std::vector<ValueId>;
using NodeArg = std::variant<std::monostate, ValueId, Scalar, int64_t, double, bool, IntList, DType,
                             ValueList, std::string>;

struct Value {
  std::string name;  // printed with a leading '%'
  ops::TensorMeta meta;
  int32_t producer = -1;  // node index; -1 for a graph input
  uint32_t output_index = 0;
};

struct Node {
  const ops::OpDef* op = nullptr;
  std::vector<NodeArg> args;  // one per schema argument, defaults filled in
  std::vector<ValueId> outputs;
  // Backward nodes: the name of the forward value whose node they came from (its VJP made them,
  // or they recompute it); printed as "# from %name". Empty for forward nodes.
  std::string origin;
};

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  // Adds a graph input with its descriptor (aotgrad/descriptor.h; none when left out).
  ValueId add_input(std::string_view name_hint, const ops::TensorMeta& meta, Descriptor desc = {});
  // Appends a node; returns its output values (named after `name_hints` or the op).
  std::vector<ValueId> add_node(const ops::OpDef& op, std::vector<NodeArg> args,
                                const std::vector<ops::TensorMeta>& output_metas,
                                const std::vector<std::string>& name_hints = {});
  void add_output(ValueId v, Descriptor desc = {});

  const Value& value(ValueId v) const { return values_.at(v.index); }
  Value& value(ValueId v) { return values_.at(v.index); }
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& mutable_nodes() { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::vector<ValueId>& mutable_outputs() { return outputs_; }
  const std::vector<Descriptor>& input_descs() const { return input_descs_; }
  const std::vector<Descriptor>& output_descs() const { return output_descs_; }
  std::vector<Descriptor>& mutable_input_descs() { return input_descs_; }
  std::vector<Descriptor>& mutable_output_descs() { return output_descs_; }
  GraphDescriptors descriptors() const { return {input_descs_, output_descs_}; }
  // Rewrites the node list (after a pass) and renumbers producers.
  void replace_nodes(std::vector<Node> nodes);

  // A name not used yet in this graph, derived from `hint` ("mm", "mm_1", ...).
  std::string fresh_name(std::string_view hint);

 private:
  std::string name_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_, outputs_;
  std::vector<Descriptor> input_descs_, output_descs_;
  std::unordered_map<std::string, uint32_t> name_counts_;
};

// The values a node argument refers to (none, one, or a list; kNoValue entries left out unless
// `keep_none`: a VJP's flat gradient list has a slot for each, as eager autograd's does).
std::vector<ValueId> arg_values(const NodeArg& a, bool keep_none = false);

// Calls f(ValueId&) on every value `args` refer to (a ValueId argument, or a ValueList entry other
// than kNoValue), so that a pass can point them at other values in place.
template <typename F>
void for_each_value(std::vector<NodeArg>& args, F&& f) {
  for (NodeArg& a : args) {
    if (auto* v = std::get_if<ValueId>(&a)) {
      f(*v);
    } else if (auto* list = std::get_if<ValueList>(&a)) {
      for (ValueId& e : *list)
        if (e != kNoValue) f(e);
    }
  }
}

// The default value name for an op's result: "aten.native_layer_norm.default" ->
// "native_layer_norm".
std::string default_value_name(const ops::OpDef& op);

}  // namespace aotgrad::graph
