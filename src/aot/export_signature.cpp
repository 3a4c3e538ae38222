// GraphSignature: derived from descriptors (signature_of), and written to / read from JSON.
//
// Reading guide: signature_of walks the inputs, then the outputs, once. The JSON half is a
// writer (to_json) and a small reader for exactly the grammar signatures need (objects, arrays,
// strings, null), depth-limited; every error is one line naming the byte offset.
#include "aot/export_signature.h"

#include <map>

#include "graph/parser.h"
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
      case DescriptorKind::fw_token:
        break;  // RNG state and the effect token: fed by the runtime, not module inputs
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
      continue;  // the last effect token, dropped by the runtime
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

void write_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

void write_list(std::string& out, const char* key, const std::vector<std::string>& items,
                const std::string& indent) {
  out += indent;
  write_string(out, key);
  out += ": [";
  for (size_t i = 0; i < items.size(); ++i) {
    out += i ? ", " : "";
    write_string(out, items[i]);
  }
  out += "]";
}

void write_map(std::string& out, const char* key, const NameMap& items, const std::string& indent) {
  out += indent;
  write_string(out, key);
  out += ": {";
  for (size_t i = 0; i < items.size(); ++i) {
    out += i ? ", " : "";
    write_string(out, items[i].first);
    out += ": ";
    write_string(out, items[i].second);
  }
  out += "}";
}

// A parsed JSON value: only what signatures hold.
struct Json {
  enum class Kind { null, string, array, object } kind = Kind::null;
  std::string str;
  std::vector<Json> items;  // array
  // object, in order (keys may repeat): keys[i] names values[i]. Two vectors, because a
  // std::pair<std::string, Json> needs Json complete where Json is being defined.
  std::vector<std::string> keys;
  std::vector<Json> values;
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  Json document() {
    Json v = value(0);
    space();
    if (pos_ != s_.size()) error("the end of the document");
    return v;
  }

  [[noreturn]] void error(const std::string& expected) const {
    std::string here = pos_ < s_.size() ? "'" + escape_for_message(s_.substr(pos_, 1), 8) + "'"
                                        : std::string("the end");
    throw ExportError("signature JSON, byte " + std::to_string(pos_) + ": expected " + expected +
                      ", found " + here);
  }

 private:
  static constexpr int kMaxDepth = 8;  // a signature needs 3

  void space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }
  bool take(char c) {
    space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!take(c)) error(std::string("'") + c + "'");
  }

  Json value(int depth) {
    if (depth > kMaxDepth) error("at most " + std::to_string(kMaxDepth) + " levels of nesting");
    Json v;
    space();
    if (s_.substr(pos_, 4) == "null") {
      pos_ += 4;
    } else if (pos_ < s_.size() && s_[pos_] == '"') {
      v.kind = Json::Kind::string;
      v.str = string();
    } else if (take('[')) {
      v.kind = Json::Kind::array;
      if (!take(']')) {
        do v.items.push_back(value(depth + 1));
        while (take(','));
        expect(']');
      }
    } else if (take('{')) {
      v.kind = Json::Kind::object;
      if (!take('}')) {
        do {
          space();
          std::string key = string();
          expect(':');
          v.keys.push_back(std::move(key));
          v.values.push_back(value(depth + 1));
        } while (take(','));
        expect('}');
      }
    } else {
      error("a string, array, object or null");
    }
    return v;
  }

  unsigned hex4() {
    unsigned v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      char c = pos_ < s_.size() ? s_[pos_] : '\0';
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) error("four hex digits after \\u");
      v = v * 16 + static_cast<unsigned>(d);
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // A surrogate pair's second half, after its first (`high`).
  unsigned low_surrogate(unsigned high) {
    if (s_.substr(pos_, 2) != "\\u") error("a low surrogate \\uDC00-\\uDFFF after \\uD800-\\uDBFF");
    pos_ += 2;
    unsigned low = hex4();
    if (low < 0xDC00 || low > 0xDFFF) error("a low surrogate \\uDC00-\\uDFFF");
    return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
  }

  std::string string() {
    if (pos_ >= s_.size() || s_[pos_] != '"') error("a string");
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) error("'\"' closing the string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        error("no control character inside a string (escape it)");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = pos_ < s_.size() ? s_[pos_++] : '\0';
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) error("a code point, not a lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) cp = low_surrogate(cp);
          append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          error("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

[[noreturn]] void field_error(const std::string& field, const char* expected) {
  throw ExportError("signature JSON: field \"" + escape_for_message(field, 60) + "\" must be " +
                    expected);
}

std::vector<std::string> read_list(const std::string& field, const Json& v) {
  if (v.kind != Json::Kind::array) field_error(field, "an array of strings");
  std::vector<std::string> out;
  for (const Json& item : v.items) {
    if (item.kind != Json::Kind::string) field_error(field, "an array of strings");
    out.push_back(item.str);
  }
  return out;
}

NameMap read_map(const std::string& field, const Json& v) {
  if (v.kind != Json::Kind::object) field_error(field, "an object of strings");
  NameMap out;
  for (size_t m = 0; m < v.keys.size(); ++m) {
    const std::string& key = v.keys[m];
    const Json& item = v.values[m];
    if (item.kind != Json::Kind::string) field_error(field, "an object of strings");
    out.emplace_back(key, item.str);
  }
  return out;
}

BackwardSignature read_backward(const Json& v) {
  if (v.kind != Json::Kind::object) field_error("backward_signature", "an object or null");
  BackwardSignature bw;
  for (size_t m = 0; m < v.keys.size(); ++m) {
    const std::string& key = v.keys[m];
    const Json& item = v.values[m];
    if (key == "gradients_to_parameters") {
      bw.gradients_to_parameters = read_map(key, item);
    } else if (key == "gradients_to_user_inputs") {
      bw.gradients_to_user_inputs = read_map(key, item);
    } else if (key == "loss_output") {
      if (item.kind != Json::Kind::string) field_error(key, "a string");
      bw.loss_output = item.str;
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
  write_string(out, backward_signature->loss_output);
  out += "\n  }\n}\n";
  return out;
}

GraphSignature signature_from_json(std::string_view json) {
  Json doc = JsonReader(json).document();
  if (doc.kind != Json::Kind::object)
    throw ExportError("signature JSON: expected an object at the top level");
  GraphSignature s;
  std::map<std::string, std::vector<std::string>*> lists = {{"parameters", &s.parameters},
                                                            {"buffers", &s.buffers},
                                                            {"user_inputs", &s.user_inputs},
                                                            {"user_outputs", &s.user_outputs}};
  std::map<std::string, NameMap*> maps = {{"inputs_to_parameters", &s.inputs_to_parameters},
                                          {"inputs_to_buffers", &s.inputs_to_buffers},
                                          {"buffers_to_mutate", &s.buffers_to_mutate},
                                          {"user_inputs_to_mutate", &s.user_inputs_to_mutate}};
  for (size_t m = 0; m < doc.keys.size(); ++m) {
    const std::string& key = doc.keys[m];
    const Json& v = doc.values[m];
    if (auto l = lists.find(key); l != lists.end())
      *l->second = read_list(key, v);
    else if (auto m = maps.find(key); m != maps.end())
      *m->second = read_map(key, v);
    else if (key == "backward_signature" && v.kind == Json::Kind::null)
      s.backward_signature.reset();
    else if (key == "backward_signature")
      s.backward_signature = read_backward(v);
    else
      throw ExportError("signature JSON: unknown field \"" + escape_for_message(key, 60) + "\"");
  }
  return s;
}

}  // namespace aotgrad
