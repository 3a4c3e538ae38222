// The read-only public views of the graph IR (aotgrad/compiler.h): GraphView, NodeView,
// ValueView, each a shared pointer to an immutable graph::Graph and an index.
#include <stdexcept>
#include <type_traits>

#include "aotgrad/compiler.h"
#include "graph/graph.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "tensor/message_text.h"

namespace aotgrad {

// The public argument types mirror the IR's alternative for alternative, so conversions are
// index-for-index and OpArg is the op table's own argument type.
static_assert(std::is_same_v<OpArg, ops::Arg>);
static_assert(std::variant_size_v<ArgView> == std::variant_size_v<graph::NodeArg>);
static_assert(std::variant_size_v<BuilderArg> == std::variant_size_v<graph::NodeArg>);

namespace {

TensorInfo info_of(const ops::TensorMeta& m) {
  return {m.dtype, m.sizes, m.strides, m.storage_offset};
}

const graph::Value& value_at(const graph::Graph& g, uint32_t id) {
  if (id >= g.values().size())
    throw std::out_of_range("graph " + escape_for_message(g.name(), 48) + " has no value id " +
                            std::to_string(id));
  return g.value(graph::ValueId{id});
}

}  // namespace

// ---- ValueView ----

const std::string& ValueView::name() const {
  return value_at(*g_, id_).name;
}
TensorInfo ValueView::info() const {
  return info_of(value_at(*g_, id_).meta);
}
DType ValueView::dtype() const {
  return value_at(*g_, id_).meta.dtype;
}
const IntList& ValueView::sizes() const {
  return value_at(*g_, id_).meta.sizes;
}
bool ValueView::is_input() const {
  return value_at(*g_, id_).producer < 0;
}
size_t ValueView::input_index() const {
  const graph::Value& v = value_at(*g_, id_);
  if (v.producer >= 0)
    throw std::logic_error("value %" + escape_for_message(v.name, 48) + " is not a graph input");
  return v.output_index;
}
std::optional<NodeView> ValueView::producer() const {
  const graph::Value& v = value_at(*g_, id_);
  if (v.producer < 0) return std::nullopt;
  return NodeView(g_, static_cast<size_t>(v.producer));
}
size_t ValueView::output_index() const {
  return value_at(*g_, id_).output_index;
}

// ---- NodeView ----

namespace {

ArgView to_view(const std::shared_ptr<const graph::Graph>& g, const graph::NodeArg& a);

}  // namespace

std::string_view NodeView::op() const {
  return g_->nodes().at(index_).op->name;
}
std::string_view NodeView::schema() const {
  return g_->nodes().at(index_).op->schema;
}
size_t NodeView::num_args() const {
  return g_->nodes().at(index_).args.size();
}
std::string_view NodeView::arg_name(size_t i) const {
  return g_->nodes().at(index_).op->parsed_schema().args.at(i).name;
}
ArgView NodeView::arg(size_t i) const {
  return to_view(g_, g_->nodes().at(index_).args.at(i));
}
std::vector<ArgView> NodeView::args() const {
  std::vector<ArgView> out;
  for (const graph::NodeArg& a : g_->nodes().at(index_).args) out.push_back(to_view(g_, a));
  return out;
}
ArgView NodeView::arg(std::string_view name) const {
  const graph::Node& n = g_->nodes().at(index_);
  int i = n.op->parsed_schema().find_arg(std::string(name));
  if (i < 0 || static_cast<size_t>(i) >= n.args.size())
    throw std::invalid_argument(std::string(n.op->name) + " has no argument '" +
                                escape_for_message(name, 48) + "'");
  return to_view(g_, n.args[static_cast<size_t>(i)]);
}
std::vector<ValueView> NodeView::outputs() const {
  std::vector<ValueView> out;
  for (graph::ValueId v : g_->nodes().at(index_).outputs) out.push_back(ValueView(g_, v.index));
  return out;
}
ValueView NodeView::output(size_t i) const {
  return ValueView(g_, g_->nodes().at(index_).outputs.at(i).index);
}
const std::string& NodeView::origin() const {
  return g_->nodes().at(index_).origin;
}

namespace {

ArgView to_view(const std::shared_ptr<const graph::Graph>& g, const graph::NodeArg& a) {
  return std::visit(
      [&](const auto& x) -> ArgView {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, graph::ValueId>) {
          return GraphView(g).value(ValueRef{x.index});
        } else if constexpr (std::is_same_v<T, graph::ValueList>) {
          std::vector<ValueView> list;
          GraphView view(g);
          for (graph::ValueId v : x) list.push_back(view.value(ValueRef{v.index}));
          return list;
        } else {
          return x;
        }
      },
      a);
}

}  // namespace

// ---- GraphView ----

GraphView::GraphView(std::shared_ptr<const graph::Graph> g) : g_(std::move(g)) {
  if (!g_) throw std::invalid_argument("GraphView: no graph");
}

GraphView GraphView::parse(std::string_view text) {
  auto g = std::make_shared<graph::Graph>(graph::parse_graph(text));
  graph::verify_graph(*g);
  return GraphView(std::move(g));
}

const std::string& GraphView::name() const {
  return g_->name();
}
size_t GraphView::num_inputs() const {
  return g_->inputs().size();
}
ValueView GraphView::input(size_t i) const {
  return ValueView(g_, g_->inputs().at(i).index);
}
std::vector<ValueView> GraphView::inputs() const {
  std::vector<ValueView> out;
  for (graph::ValueId v : g_->inputs()) out.push_back(ValueView(g_, v.index));
  return out;
}
const Descriptor& GraphView::input_descriptor(size_t i) const {
  return g_->input_descs().at(i);
}
size_t GraphView::num_nodes() const {
  return g_->nodes().size();
}
NodeView GraphView::node(size_t i) const {
  if (i >= g_->nodes().size())
    throw std::out_of_range("graph " + escape_for_message(g_->name(), 48) + " has " +
                            std::to_string(g_->nodes().size()) + " nodes, asked for node " +
                            std::to_string(i));
  return NodeView(g_, i);
}
std::vector<NodeView> GraphView::nodes() const {
  std::vector<NodeView> out;
  for (size_t i = 0; i < g_->nodes().size(); ++i) out.push_back(NodeView(g_, i));
  return out;
}
size_t GraphView::num_outputs() const {
  return g_->outputs().size();
}
ValueView GraphView::output(size_t i) const {
  return ValueView(g_, g_->outputs().at(i).index);
}
std::vector<ValueView> GraphView::outputs() const {
  std::vector<ValueView> out;
  for (graph::ValueId v : g_->outputs()) out.push_back(ValueView(g_, v.index));
  return out;
}
const Descriptor& GraphView::output_descriptor(size_t i) const {
  return g_->output_descs().at(i);
}
GraphDescriptors GraphView::descriptors() const {
  return g_->descriptors();
}
ValueView GraphView::value(ValueRef v) const {
  value_at(*g_, v.id);
  return ValueView(g_, v.id);
}
std::string GraphView::to_text() const {
  return graph::print_graph(*g_);
}

}  // namespace aotgrad
