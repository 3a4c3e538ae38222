#include "graph/dot.h"

#include <sstream>

namespace aotgrad::graph {
namespace {

// A DOT double-quoted string: quotes and backslashes escaped, control bytes as \xHH text.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      const char* hex = "0123456789abcdef";
      out += "\\\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string type_of(const Value& v) {
  return std::string(dtype_name(v.meta.dtype)) + shape_to_string(v.meta.sizes);
}

}  // namespace

std::string print_dot(const Graph& g, const std::string& id) {
  std::ostringstream os;
  os << "digraph " << quoted(id) << " {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n";
  const auto value_node = [&](ValueId v) -> std::string {
    const Value& val = g.value(v);
    return val.producer < 0 ? "in" + std::to_string(v.index) : "n" + std::to_string(val.producer);
  };
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value& v = g.value(g.inputs()[i]);
    std::string desc = i < g.input_descs().size() ? g.input_descs()[i].to_string() : "";
    os << "  in" << g.inputs()[i].index << " [shape=ellipse, label="
       << quoted("%" + v.name + "\n" + type_of(v) + (desc.empty() ? "" : "\n" + desc)) << "];\n";
  }
  for (size_t k = 0; k < g.nodes().size(); ++k) {
    const Node& n = g.nodes()[k];
    std::string label = std::string(n.op->name);
    for (ValueId o : n.outputs) label += "\n%" + g.value(o).name + ": " + type_of(g.value(o));
    os << "  n" << k << " [shape=box, label=" << quoted(label) << "];\n";
    for (const NodeArg& a : n.args)
      for (ValueId v : arg_values(a)) os << "  " << value_node(v) << " -> n" << k << ";\n";
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    std::string desc = i < g.output_descs().size() ? g.output_descs()[i].to_string() : "";
    os << "  out" << i << " [shape=ellipse, style=bold, label="
       << quoted("output " + std::to_string(i) + (desc.empty() ? "" : "\n" + desc)) << "];\n";
    os << "  " << value_node(g.outputs()[i]) << " -> out" << i << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace aotgrad::graph
