// GraphSignature: derived from descriptors (signature_of), and written to / read from JSON.
//
// Reading guide: signature_of walks the inputs, then the outputs, once. The JSON half is a
// writer (to_json) and a reader of the fields over the library's JSON reader (tensor/json.h);
// every error is one line naming the byte offset or the field.
#include "aot/export_signature.h"

#include <map>

#include "graph/parser.h"
#include "tensor/json.h"
#include "tensor/message_text.h"

namespace aotgrad {
namespace aot {
namespace {

[[noreturn]] void fail(const std::string& who, const std::string& what) {
  throw ExportError(who + ": " + what);
}

std::string describe(const graph::Graph& g, bool input, size_t i) {
  graph::ValueId v = input ? g.inputs()[i] : g.outputs()[i];
  return std::string(input ? "input " : "output ") + std::to_string(i) + " (%" + g.value(v).name +
         ")";
}

}  // namespace

GraphSignature signature_of(const graph::Graph& g, std::optional<size_t> loss_output,
                            const std::string& who) {
  GraphSignature s;
  std::map<std::string, std::string> input_named;  // descriptor text -> value name
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Descriptor& d = g.input_descs()[i];
    const std::string& name = g.value(g.inputs()[i]).name;
    input_named[d.to_string()] = name;
    switch (d.kind) {
      case DescriptorKind::param:
        s.parameters.push_back(d.name);
        s.inputs_to_parameters.emplace_back(name, d.name);
        break;
      case DescriptorKind::buffer:
        s.buffers.push_back(d.name);
        s.inputs_to_buffers.emplace_back(name, d.name);
        break;
      case DescriptorKind::input:
        s.user_inputs.push_back(name);
        break;
      case DescriptorKind::tangent:
        break;  // a joint's tangents are not inputs of the module
      case DescriptorKind::fw_rng_seed:
      case DescriptorKind::fw_rng_offset:
        s.rng_inputs.emplace_back(name, d.to_string());
        break;
      case DescriptorKind::fw_token:
        s.input_tokens.push_back(name);
        break;
      default:
        fail(who, describe(g, true, i) + " is " +
                      (d.empty() ? std::string("undescribed") : d.to_string()) +
                      "; export describes param(fqn), buffer(fqn), input(k) and tangent inputs");
    }
  }
  BackwardSignature bw;
  bool has_grads = false;
  for (size_t o = 0; o < g.outputs().size(); ++o) {
    const Descriptor& d = g.output_descs()[o];
    const std::string& name = g.value(g.outputs()[o]).name;
    const Descriptor* inner = d.of.empty() ? nullptr : &d.of.front();
    if (d.kind == DescriptorKind::fw_token) {
      s.output_tokens.push_back(name);  // the last effect token, dropped by the runtime
    } else if (d.kind == DescriptorKind::output) {
      s.user_outputs.push_back(name);
    } else if (d.kind == DescriptorKind::mutated_input && inner->kind == DescriptorKind::buffer) {
      s.buffers_to_mutate.emplace_back(name, inner->name);
    } else if (d.kind == DescriptorKind::mutated_input && inner->kind == DescriptorKind::input) {
      s.user_inputs_to_mutate.emplace_back(name, input_named[inner->to_string()]);
    } else if (d.kind == DescriptorKind::grad && inner->kind == DescriptorKind::param) {
      bw.gradients_to_parameters.emplace_back(name, inner->name);
      has_grads = true;
    } else if (d.kind == DescriptorKind::grad && inner->kind == DescriptorKind::input) {
      bw.gradients_to_user_inputs.emplace_back(name, input_named[inner->to_string()]);
      has_grads = true;
    } else {
      fail(who, describe(g, false, o) + " is " +
                    (d.empty() ? std::string("undescribed") : d.to_string()) +
                    "; export describes output(k), mutated_input(buffer or input) and grad(param "
                    "or input) outputs");
    }
  }
  if (loss_output) {
    if (*loss_output >= g.outputs().size())
      fail(who, "loss output " + std::to_string(*loss_output) + " is past the graph's " +
                    std::to_string(g.outputs().size()) + " outputs");
    bw.loss_output = g.value(g.outputs()[*loss_output]).name;
  }
  if (loss_output || has_grads) s.backward_signature = std::move(bw);
  return s;
}

}  // namespace aot

GraphSignature signature_of_graph(std::string_view graph_text, std::optional<size_t> loss_output) {
  graph::Graph g;
  try {
    g = graph::parse_graph(graph_text);
  } catch (const std::invalid_argument& e) {
    throw ExportError(std::string("signature_of_graph: ") + e.what());
  }
  return aot::signature_of(g, loss_output, "signature_of_graph");
}

// ---- JSON ----

namespace {

void write_list(std::string& out, const char* key, const std::vector<std::string>& items,
                const std::string& indent) {
  out += indent;
  json::append_string(out, key);
  out += ": [";
  for (size_t i = 0; i < items.size(); ++i) {
    out += i ? ", " : "";
    json::append_string(out, items[i]);
  }
  out += "]";
}

void write_map(std::string& out, const char* key, const NameMap& items, const std::string& indent) {
  out += indent;
  json::append_string(out, key);
  out += ": {";
  for (size_t i = 0; i < items.size(); ++i) {
    out += i ? ", " : "";
    json::append_string(out, items[i].first);
    out += ": ";
    json::append_string(out, items[i].second);
  }
  out += "}";
}

// A signature nests 3 levels; more is not a signature.
constexpr int kMaxDepth = 8;

using json::Value;

[[noreturn]] void field_error(const std::string& field, const char* expected) {
  throw ExportError("signature JSON: field \"" + escape_for_message(field, 60) + "\" must be " +
                    expected);
}

std::vector<std::string> read_list(const std::string& field, const Value& v) {
  if (v.kind != Value::Kind::array) field_error(field, "an array of strings");
  std::vector<std::string> out;
  for (const Value& item : v.items) {
    if (item.kind != Value::Kind::string) field_error(field, "an array of strings");
    out.push_back(item.text);
  }
  return out;
}

NameMap read_map(const std::string& field, const Value& v) {
  if (v.kind != Value::Kind::object) field_error(field, "an object of strings");
  NameMap out;
  for (size_t m = 0; m < v.keys.size(); ++m) {
    const std::string& key = v.keys[m];
    const Value& item = v.values[m];
    if (item.kind != Value::Kind::string) field_error(field, "an object of strings");
    out.emplace_back(key, item.text);
  }
  return out;
}

BackwardSignature read_backward(const Value& v) {
  if (v.kind != Value::Kind::object) field_error("backward_signature", "an object or null");
  BackwardSignature bw;
  for (size_t m = 0; m < v.keys.size(); ++m) {
    const std::string& key = v.keys[m];
    const Value& item = v.values[m];
    if (key == "gradients_to_parameters") {
      bw.gradients_to_parameters = read_map(key, item);
    } else if (key == "gradients_to_user_inputs") {
      bw.gradients_to_user_inputs = read_map(key, item);
    } else if (key == "loss_output") {
      if (item.kind != Value::Kind::string) field_error(key, "a string");
      bw.loss_output = item.text;
    } else {
      throw ExportError("signature JSON: unknown field \"" + escape_for_message(key, 60) +
                        "\" in backward_signature");
    }
  }
  return bw;
}

}  // namespace

std::string GraphSignature::to_json() const {
  std::string out = "{\n";
  const std::string in = "  ";
  write_list(out, "parameters", parameters, in);
  out += ",\n";
  write_list(out, "buffers", buffers, in);
  out += ",\n";
  write_list(out, "user_inputs", user_inputs, in);
  out += ",\n";
  write_list(out, "user_outputs", user_outputs, in);
  out += ",\n";
  write_map(out, "inputs_to_parameters", inputs_to_parameters, in);
  out += ",\n";
  write_map(out, "inputs_to_buffers", inputs_to_buffers, in);
  out += ",\n";
  write_map(out, "buffers_to_mutate", buffers_to_mutate, in);
  out += ",\n";
  write_map(out, "user_inputs_to_mutate", user_inputs_to_mutate, in);
  out += ",\n";
  write_list(out, "input_tokens", input_tokens, in);
  out += ",\n";
  write_list(out, "output_tokens", output_tokens, in);
  out += ",\n";
  write_map(out, "rng_inputs", rng_inputs, in);
  out += ",\n  \"backward_signature\": ";
  if (!backward_signature) {
    out += "null\n}\n";
    return out;
  }
  out += "{\n";
  write_map(out, "gradients_to_parameters", backward_signature->gradients_to_parameters, in + in);
  out += ",\n";
  write_map(out, "gradients_to_user_inputs", backward_signature->gradients_to_user_inputs, in + in);
  out += ",\n    \"loss_output\": ";
  json::append_string(out, backward_signature->loss_output);
  out += "\n  }\n}\n";
  return out;
}

GraphSignature signature_from_json(std::string_view json) {
  Value doc;
  try {
    doc = json::parse(json, kMaxDepth);
  } catch (const json::ParseError& e) {
    throw ExportError("signature JSON, byte " + std::to_string(e.offset()) + ": " + e.what());
  }
  if (doc.kind != Value::Kind::object)
    throw ExportError("signature JSON: expected an object at the top level");
  GraphSignature s;
  std::map<std::string, std::vector<std::string>*> lists = {{"parameters", &s.parameters},
                                                            {"buffers", &s.buffers},
                                                            {"user_inputs", &s.user_inputs},
                                                            {"user_outputs", &s.user_outputs},
                                                            {"input_tokens", &s.input_tokens},
                                                            {"output_tokens", &s.output_tokens}};
  std::map<std::string, NameMap*> maps = {{"inputs_to_parameters", &s.inputs_to_parameters},
                                          {"inputs_to_buffers", &s.inputs_to_buffers},
                                          {"buffers_to_mutate", &s.buffers_to_mutate},
                                          {"user_inputs_to_mutate", &s.user_inputs_to_mutate},
                                          {"rng_inputs", &s.rng_inputs}};
  for (size_t m = 0; m < doc.keys.size(); ++m) {
    const std::string& key = doc.keys[m];
    const Value& v = doc.values[m];
    if (auto l = lists.find(key); l != lists.end())
      *l->second = read_list(key, v);
    else if (auto m = maps.find(key); m != maps.end())
      *m->second = read_map(key, v);
    else if (key == "backward_signature" && v.kind == Value::Kind::null)
      s.backward_signature.reset();
    else if (key == "backward_signature")
      s.backward_signature = read_backward(v);
    else
      throw ExportError("signature JSON: unknown field \"" + escape_for_message(key, 60) + "\"");
  }
  return s;
}

}  // namespace aotgrad
