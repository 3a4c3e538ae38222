// GraphBuilder (aotgrad/compiler.h): builds a graph for a user pass.
//
// Needs: nothing (started empty or from any GraphView). Guarantees: build() returns a graph that
// verify_graph accepts, or throws naming the first fault. Reading guide: the builder keeps a
// graph::Graph whose node list only grows (so node indices, and the ValueRefs of the view it came
// from, stay valid) and a separate execution order over those indices; insertions and dead-code
// removal edit the order, and build() lays the nodes out in it.
#include <algorithm>
#include <stdexcept>

#include "aotgrad/compiler.h"
#include "graph/graph.h"
#include "graph/node_args.h"
#include "graph/verifier.h"
#include "tensor/current_op.h"
#include "tensor/message_text.h"

namespace aotgrad {

struct GraphBuilder::Impl {
  graph::Graph g;
  std::vector<uint32_t> order;  // indices into g.nodes(), in execution order
  size_t source_nodes = 0;      // nodes that came from the view the builder started from
  std::optional<uint32_t> before;

  graph::ValueId checked(ValueRef v, std::string_view who) const {
    if (v.id >= g.values().size())
      throw std::invalid_argument("GraphBuilder::" + std::string(who) + ": value id " +
                                  std::to_string(v.id) + " is not a value of graph " +
                                  escape_for_message(g.name(), 48));
    return graph::ValueId{v.id};
  }
};

BuilderArg builder_arg(const ArgView& a) {
  return std::visit(
      [](const auto& x) -> BuilderArg {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ValueView>) {
          return x.ref();
        } else if constexpr (std::is_same_v<T, std::vector<ValueView>>) {
          std::vector<ValueRef> refs;
          for (const ValueView& v : x) refs.push_back(v.ref());
          return refs;
        } else {
          return BuilderArg(std::in_place_type<T>, x);
        }
      },
      a);
}

GraphBuilder::GraphBuilder(std::string name) : impl_(std::make_unique<Impl>()) {
  impl_->g.set_name(std::move(name));
}

GraphBuilder::GraphBuilder(const GraphView& from) : impl_(std::make_unique<Impl>()) {
  impl_->g = from.graph();
  impl_->source_nodes = impl_->g.nodes().size();
  for (uint32_t i = 0; i < impl_->source_nodes; ++i) impl_->order.push_back(i);
}

GraphBuilder::~GraphBuilder() = default;
GraphBuilder::GraphBuilder(GraphBuilder&&) noexcept = default;
GraphBuilder& GraphBuilder::operator=(GraphBuilder&&) noexcept = default;

ValueRef GraphBuilder::add_input(std::string_view name_hint, const TensorInfo& info,
                                 Descriptor desc) {
  ops::TensorMeta m{info.dtype, info.sizes, info.strides, info.storage_offset};
  if (m.strides.empty()) m.strides = contiguous_strides(m.sizes);
  if (m.strides.size() != m.sizes.size() || !graph::is_addressable(m))
    throw std::invalid_argument("GraphBuilder::add_input: input '" +
                                escape_for_message(name_hint, 48) + "' has the type " +
                                graph::type_annotation(m) +
                                ", which is not an addressable tensor (sizes and strides must "
                                "pair up and be non-negative)");
  return {impl_->g.add_input(name_hint.empty() ? "arg" : name_hint, m, std::move(desc)).index};
}

namespace {

// The node arguments for `args` under `op`'s schema: canonical alternatives, defaults filled in.
std::vector<graph::NodeArg> node_args(const ops::OpDef& op, const std::vector<BuilderArg>& args,
                                      const std::function<graph::ValueId(ValueRef)>& value) {
  const ops::Schema& schema = op.parsed_schema();
  std::string who = "GraphBuilder::add_node: " + std::string(op.name);
  if (args.size() > schema.args.size())
    throw std::invalid_argument(who + " takes " + std::to_string(schema.args.size()) +
                                " arguments, " + std::to_string(args.size()) + " given");
  std::vector<graph::NodeArg> out;
  for (size_t i = 0; i < schema.args.size(); ++i) {
    const ops::ArgSchema& s = schema.args[i];
    if (i >= args.size()) {
      std::optional<graph::NodeArg> d = graph::schema_default(s);
      if (!d && !s.optional)
        throw std::invalid_argument(who + ": missing argument '" + s.name + "' (" +
                                    graph::schema_type_text(s) + ")");
      out.push_back(d ? *d : graph::NodeArg{});
      continue;
    }
    graph::NodeArg a = std::visit(
        [&](const auto& x) -> graph::NodeArg {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, ValueRef>) {
            return value(x);
          } else if constexpr (std::is_same_v<T, std::vector<ValueRef>>) {
            graph::ValueList list;
            for (ValueRef v : x) list.push_back(value(v));
            return list;
          } else {
            return graph::NodeArg(std::in_place_type<T>, x);
          }
        },
        args[i]);
    a = graph::canonical_arg(s, std::move(a));
    if (!graph::arg_fits_schema(s, a))
      throw std::invalid_argument(who + ": argument '" + s.name + "' (" + std::to_string(i) +
                                  ") should be " + graph::schema_type_text(s) + " but is " +
                                  std::string(graph::arg_kind_name(a)));
    out.push_back(std::move(a));
  }
  return out;
}

Tensor fake_of(const graph::Graph& g, graph::ValueId v) {
  const ops::TensorMeta& m = g.value(v).meta;
  IntList strides = m.strides.size() == m.sizes.size() ? m.strides : contiguous_strides(m.sizes);
  return make_fake_strided(m.sizes, strides, m.storage_offset, m.dtype);
}

// The op's meta function on fake tensors with the arguments' recorded metadata.
std::vector<ops::TensorMeta> result_metas(const graph::Graph& g, const ops::OpDef& op,
                                          const std::vector<graph::NodeArg>& args) {
  ops::OpArgs op_args;
  for (const graph::NodeArg& a : args) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, graph::ValueId>) {
            op_args.emplace_back(fake_of(g, x));
          } else if constexpr (std::is_same_v<T, graph::ValueList>) {
            ops::TensorList list;
            for (graph::ValueId v : x) list.push_back(fake_of(g, v));
            op_args.emplace_back(std::move(list));
          } else {
            op_args.emplace_back(std::in_place_type<T>, x);
          }
        },
        a);
  }
  CurrentOpScope scope(op.name);
  try {
    return op.meta(op_args);
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::string name(op.name);
    if (what.rfind(name, 0) != 0) what = name + ": " + what;
    throw std::invalid_argument("GraphBuilder::add_node: " + what);
  }
}

}  // namespace

std::vector<ValueRef> GraphBuilder::add_node(std::string_view op_name, std::vector<BuilderArg> args,
                                             std::string_view name_hint) {
  const ops::OpDef* op = ops::find(op_name);
  if (!op)
    throw std::invalid_argument("GraphBuilder::add_node: unknown op '" +
                                escape_for_message(op_name, 64) +
                                "' (ops are named like aten.add.Tensor)");
  std::vector<graph::NodeArg> nargs =
      node_args(*op, args, [&](ValueRef v) { return impl_->checked(v, "add_node"); });
  std::vector<ops::TensorMeta> metas = result_metas(impl_->g, *op, nargs);
  std::vector<std::string> hints;
  if (!name_hint.empty()) hints.assign(metas.size(), std::string(name_hint));
  auto index = static_cast<uint32_t>(impl_->g.nodes().size());
  std::vector<graph::ValueId> outs = impl_->g.add_node(*op, std::move(nargs), metas, hints);
  auto at = impl_->order.end();
  if (impl_->before) at = std::find(impl_->order.begin(), impl_->order.end(), *impl_->before);
  impl_->order.insert(at, index);
  std::vector<ValueRef> refs;
  for (graph::ValueId v : outs) refs.push_back({v.index});
  return refs;
}

void GraphBuilder::insert_before(const NodeView& n) {
  auto index = static_cast<uint32_t>(n.index());
  bool present = std::find(impl_->order.begin(), impl_->order.end(), index) != impl_->order.end();
  if (n.index() >= impl_->source_nodes || !present)
    throw std::invalid_argument("GraphBuilder::insert_before: node " + std::to_string(n.index()) +
                                " is not a node of the graph this builder started from (or was "
                                "removed as dead code)");
  impl_->before = index;
}

void GraphBuilder::insert_at_end() {
  impl_->before.reset();
}

void GraphBuilder::replace_all_uses(ValueRef old, ValueRef replacement) {
  graph::ValueId from = impl_->checked(old, "replace_all_uses");
  graph::ValueId to = impl_->checked(replacement, "replace_all_uses");
  int32_t producer = impl_->g.value(to).producer;
  std::vector<graph::Node>& nodes = impl_->g.mutable_nodes();
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (static_cast<int32_t>(k) == producer) continue;
    graph::for_each_value(nodes[k].args, [&](graph::ValueId& v) {
      if (v == from) v = to;
    });
  }
  std::vector<graph::ValueId>& outs = impl_->g.mutable_outputs();
  std::replace(outs.begin(), outs.end(), from, to);
}

void GraphBuilder::set_outputs(std::vector<ValueRef> outputs, std::vector<Descriptor> descs) {
  if (!descs.empty() && descs.size() != outputs.size())
    throw std::invalid_argument("GraphBuilder::set_outputs: " + std::to_string(outputs.size()) +
                                " outputs but " + std::to_string(descs.size()) + " descriptors");
  graph::Graph& g = impl_->g;
  if (descs.empty())
    descs = g.output_descs().size() == outputs.size() ? g.output_descs()
                                                      : std::vector<Descriptor>(outputs.size());
  std::vector<graph::ValueId> ids;
  for (ValueRef v : outputs) ids.push_back(impl_->checked(v, "set_outputs"));
  g.mutable_outputs() = std::move(ids);
  g.mutable_output_descs() = std::move(descs);
}

void GraphBuilder::eliminate_dead_code() {
  const graph::Graph& g = impl_->g;
  std::vector<bool> live(g.values().size(), false);
  for (graph::ValueId v : g.outputs()) live[v.index] = true;
  std::vector<uint32_t> kept;
  // Backward over the execution order: every reader is decided before its producer.
  for (size_t k = impl_->order.size(); k-- > 0;) {
    const graph::Node& n = g.nodes()[impl_->order[k]];
    bool keep = n.op->recompute == ops::Recompute::effectful || n.op->is_inplace();
    for (graph::ValueId v : n.outputs) keep = keep || live[v.index];
    if (!keep) continue;
    kept.push_back(impl_->order[k]);
    for (const graph::NodeArg& a : n.args)
      for (graph::ValueId v : graph::arg_values(a)) live[v.index] = true;
  }
  std::reverse(kept.begin(), kept.end());
  impl_->order = std::move(kept);
  if (impl_->before &&
      std::find(impl_->order.begin(), impl_->order.end(), *impl_->before) == impl_->order.end())
    impl_->before.reset();
}

TensorInfo GraphBuilder::info(ValueRef v) const {
  const ops::TensorMeta& m = impl_->g.value(impl_->checked(v, "info")).meta;
  return {m.dtype, m.sizes, m.strides, m.storage_offset};
}

GraphView GraphBuilder::build() const {
  auto out = std::make_shared<graph::Graph>(impl_->g);
  std::vector<graph::Node> nodes;
  for (uint32_t i : impl_->order) nodes.push_back(impl_->g.nodes()[i]);
  out->replace_nodes(std::move(nodes));
  graph::verify_graph(*out);
  return GraphView(std::move(out));
}

}  // namespace aotgrad
