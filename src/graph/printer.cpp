// Printer for the graph text format. Reading guide: print_graph walks signature, nodes, return;
// format_arg prints one constant or value reference; node_call decides which arguments print
// positionally, which by name, and which are left out as defaults (docs/ir.md "Arguments").
#include "graph/printer.h"

#include <cctype>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <vector>

#include "graph/node_args.h"

namespace aotgrad::graph {
namespace {

bool is_plain_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string name_text(std::string_view name) {
  return is_plain_name(name) ? std::string(name) : quoted(name);
}

std::string value_ref(const Graph& g, ValueId v) {
  if (v.index >= g.values().size())
    return "%" + quoted("<invalid value " + std::to_string(v.index) + ">");
  return "%" + name_text(g.value(v).name);
}

std::string int_list_text(const IntList& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + std::to_string(v[i]);
  return out;
}

std::string format_arg(const Graph& g, const NodeArg& a) {
  struct Visitor {
    const Graph& g;
    std::string operator()(std::monostate) const { return "none"; }
    std::string operator()(ValueId v) const { return value_ref(g, v); }
    std::string operator()(const Scalar& s) const { return s.to_string(); }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return Scalar(v).to_string(); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const IntList& v) const { return "[" + int_list_text(v, ", ") + "]"; }
    std::string operator()(DType t) const { return std::string(dtype_name(t)); }
    std::string operator()(const ValueList& l) const {
      std::string out = "[";
      for (size_t i = 0; i < l.size(); ++i)
        out += (i ? ", " : "") + (l[i] == kNoValue ? std::string("none") : value_ref(g, l[i]));
      return out + "]";
    }
    std::string operator()(const std::string& s) const { return quoted(s); }
  };
  return std::visit(Visitor{g}, a);
}

bool is_tensor_type(const ops::ArgSchema& s) {
  return s.type == ops::ArgType::tensor || s.type == ops::ArgType::tensor_list;
}

std::string node_call(const Graph& g, const Node& n) {
  const ops::Schema& schema = n.op->parsed_schema();
  // The parser hands positional arguments to the schema slots not named in the call, in order,
  // so a default may only be left out after the last tensor argument: earlier, the next
  // positional tensor would land in its slot.
  size_t after_last_tensor = 0;
  for (size_t i = 0; i < schema.args.size(); ++i)
    if (is_tensor_type(schema.args[i])) after_last_tensor = i + 1;

  // Positional (tensor) arguments first, then name=value ones, each group in schema order, as
  // in a Python call.
  std::vector<std::string> positional, named;
  for (size_t i = 0; i < n.args.size(); ++i) {
    if (i >= schema.args.size()) {  // more args than the schema has: malformed, show them all
      positional.push_back(format_arg(g, n.args[i]));
      continue;
    }
    const ops::ArgSchema& s = schema.args[i];
    if (is_tensor_type(s)) {
      positional.push_back(format_arg(g, n.args[i]));
      continue;
    }
    NodeArg a = canonical_arg(s, n.args[i]);
    if (i >= after_last_tensor) {
      std::optional<NodeArg> def = schema_default(s);
      if (def && *def == a) continue;
    }
    if (auto* bools = std::get_if<IntList>(&a); bools && s.bool_elements) {
      std::string text;  // `bool[3] output_mask` holds 0 / 1 but reads as booleans
      for (size_t k = 0; k < bools->size(); ++k)
        text += std::string(k ? ", " : "") + ((*bools)[k] ? "true" : "false");
      named.push_back(s.name + "=[" + text + "]");
      continue;
    }
    named.push_back(s.name + "=" + format_arg(g, a));
  }
  std::string out = std::string(n.op->name) + "(";
  positional.insert(positional.end(), named.begin(), named.end());
  for (size_t i = 0; i < positional.size(); ++i) out += (i ? ", " : "") + positional[i];
  return out + ")";
}

// One entry per line with "  # descriptor" when any entry has a descriptor, else all on one line.
std::string entry_list(const std::vector<std::string>& entries,
                       const std::vector<Descriptor>& descs, const char* close_indent) {
  auto desc_text = [&](size_t i) { return i < descs.size() ? descs[i].to_string() : ""; };
  bool any = false;
  for (size_t i = 0; i < entries.size(); ++i) any = any || !desc_text(i).empty();
  std::string out = "(";
  if (!any) {
    for (size_t i = 0; i < entries.size(); ++i) out += (i ? ", " : "") + entries[i];
    return out + ")";
  }
  out += "\n";
  for (size_t i = 0; i < entries.size(); ++i) {
    out += "    " + entries[i] + (i + 1 < entries.size() ? "," : "");
    std::string d = desc_text(i);
    if (!d.empty()) out += "  # " + d;
    out += "\n";
  }
  return out + close_indent + ")";
}

}  // namespace

std::string print_graph(const Graph& g) {
  std::vector<std::string> params;
  for (ValueId v : g.inputs()) {
    std::string type = v.index < g.values().size() ? type_annotation(g.value(v).meta) : "?";
    params.push_back(value_ref(g, v) + ": " + type);
  }
  std::string out =
      "graph " + name_text(g.name()) + entry_list(params, g.input_descs(), "") + " {\n";

  for (size_t k = 0; k < g.nodes().size(); ++k) {
    const Node& n = g.nodes()[k];
    if (!n.op) throw std::invalid_argument("print_graph: node " + std::to_string(k) + " has no op");
    out += "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ValueId v = n.outputs[i];
      std::string type = v.index < g.values().size() ? type_annotation(g.value(v).meta) : "?";
      out += (i ? ", " : "") + value_ref(g, v) + ": " + type;
    }
    if (!n.outputs.empty()) out += " = ";
    out += node_call(g, n);
    if (!n.origin.empty()) out += "  # from %" + name_text(n.origin);
    out += "\n";
  }

  std::vector<std::string> results;
  for (ValueId v : g.outputs()) results.push_back(value_ref(g, v));
  out += "  return " + entry_list(results, g.output_descs(), "  ") + "\n}\n";
  return out;
}

}  // namespace aotgrad::graph
