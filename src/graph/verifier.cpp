// Reading guide: verify_graph walks the nodes once in order, tracking which values are defined;
// per node, structure comes first (check_args, check_results), then metadata (check_meta: the op's
// meta function run on fake tensors rebuilt from the recorded input metadata).
#include "graph/verifier.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "graph/node_args.h"
#include "tensor/checked_math.h"
#include "tensor/message_text.h"

namespace aotgrad::graph {
namespace {

std::string value_label(const Graph& g, ValueId v) {
  if (v.index >= g.values().size())
    return "value id " + std::to_string(v.index) + " (no such value)";
  return "%" + escape_for_message(g.value(v).name, 48);
}

// "node %mm = aten.mm.default": the first result names the node, as the printed graph shows it.
std::string node_label(const Graph& g, const Node& n, size_t k) {
  std::string op = n.op ? std::string(n.op->name) : "<no op>";
  if (n.outputs.empty())
    return "verify_graph: node " + std::to_string(k) + " (" + op + ", no results)";
  return "verify_graph: node " + value_label(g, n.outputs[0]) + " = " + op;
}

// Messages stay one line of bounded length; every piece of user text in them is escaped.
[[noreturn]] void fail(const std::string& who, const std::string& what) {
  constexpr size_t kMaxMessage = 300;
  std::string m = who + ": " + what;
  if (m.size() > kMaxMessage) m = m.substr(0, kMaxMessage - 3) + "...";
  throw VerifyError(m, std::nullopt);
}

// A fake tensor with exactly the recorded geometry. Its storage covers the geometry so that view
// metas that check bounds against the storage accept it. Throws std::invalid_argument naming the
// value when the geometry is negative or not addressable (is_addressable).
Tensor fake_tensor(const Graph& g, ValueId v) {
  const ops::TensorMeta& m = g.value(v).meta;
  if (!is_addressable(m))
    throw std::invalid_argument(value_label(g, v) + " has the type " + type_annotation(m) +
                                ", whose elements are not addressable with 64-bit offsets");
  const IntList strides =
      m.strides.size() == m.sizes.size() ? m.strides : contiguous_strides(m.sizes);
  return make_fake_strided(m.sizes, strides, m.storage_offset, m.dtype);
}

// Sizes and strides must pair up, or the value prints as a type the parser rejects. (Empty
// strides mean "contiguous", see type_annotation.)
void check_layout(const Graph& g, ValueId v, const std::string& who) {
  const ops::TensorMeta& m = g.value(v).meta;
  if (!m.strides.empty() && m.strides.size() != m.sizes.size())
    fail(who, value_label(g, v) + " has " + std::to_string(m.sizes.size()) + " sizes but " +
                  std::to_string(m.strides.size()) + " strides");
}

void check_args(const Graph& g, const Node& n, size_t k, const std::vector<bool>& defined,
                const std::string& who) {
  const ops::Schema& schema = n.op->parsed_schema();
  if (n.args.size() != schema.args.size())
    fail(who, "arity mismatch: the schema has " + std::to_string(schema.args.size()) +
                  " arguments, the node " + std::to_string(n.args.size()) +
                  " (nodes hold every argument, defaults filled in)");
  for (size_t i = 0; i < n.args.size(); ++i) {
    const ops::ArgSchema& s = schema.args[i];
    if (!arg_fits_schema(s, n.args[i]))
      fail(who, "argument '" + s.name + "' (" + std::to_string(i) + ") should be " +
                    schema_type_text(s) + " but holds " + std::string(arg_kind_name(n.args[i])));
    for (ValueId v : arg_values(n.args[i])) {
      if (v.index >= g.values().size())
        fail(who, "argument '" + s.name + "' refers to value id " + std::to_string(v.index) +
                      ", which does not exist");
      if (defined[v.index]) continue;
      int32_t producer = g.value(v).producer;
      std::string why = producer > static_cast<int32_t>(k)
                            ? "before its definition (node " + std::to_string(producer) + ")"
                            : "but it is not defined by any graph input or node";
      fail(who, "argument '" + s.name + "' uses " + value_label(g, v) + " " + why);
    }
  }
}

void check_results(const Graph& g, const Node& n, size_t k, std::vector<bool>& defined,
                   const std::string& who) {
  const ops::Schema& schema = n.op->parsed_schema();
  bool list_result = false;
  for (const ops::ArgSchema& r : schema.returns)
    list_result = list_result || r.type == ops::ArgType::tensor_list;
  if (!list_result && n.outputs.size() != schema.returns.size())
    fail(who, "arity mismatch: the op returns " + std::to_string(schema.returns.size()) +
                  " value(s), the node has " + std::to_string(n.outputs.size()) + " results");
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    ValueId v = n.outputs[i];
    if (v.index >= g.values().size())
      fail(who, "result " + std::to_string(i) + " is value id " + std::to_string(v.index) +
                    ", which does not exist");
    if (defined[v.index]) fail(who, "redefines " + value_label(g, v));
    const Value& val = g.value(v);
    if (val.producer != static_cast<int32_t>(k) || val.output_index != i)
      fail(who, "result " + value_label(g, v) + " records producer " +
                    std::to_string(val.producer) + " output " + std::to_string(val.output_index) +
                    " instead of node " + std::to_string(k) + " output " + std::to_string(i) +
                    " (call Graph::replace_nodes after moving nodes)");
    check_layout(g, v, who);
    defined[v.index] = true;
  }
}

// The node's arguments with fake tensors for its values.
ops::OpArgs fake_args(const Graph& g, const Node& n) {
  std::unordered_map<uint32_t, Tensor> fakes;
  auto fake = [&](ValueId v) -> const Tensor& {
    auto it = fakes.find(v.index);
    if (it == fakes.end()) it = fakes.emplace(v.index, fake_tensor(g, v)).first;
    return it->second;
  };
  ops::OpArgs args;
  for (const NodeArg& a : n.args) {
    if (auto* v = std::get_if<ValueId>(&a)) {
      args.emplace_back(fake(*v));
    } else if (auto* l = std::get_if<ValueList>(&a)) {
      ops::TensorList ts;
      for (ValueId v : *l) ts.push_back(v == kNoValue ? Tensor() : fake(v));
      args.emplace_back(std::move(ts));
    } else {
      // The remaining alternatives are the same types in the same order in Arg and NodeArg.
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (!std::is_same_v<T, ValueId> && !std::is_same_v<T, ValueList>)
              args.emplace_back(x);
          },
          a);
    }
  }
  return args;
}

void check_meta(const Graph& g, const Node& n, const std::string& who) {
  ops::OpArgs args;
  try {
    args = fake_args(g, n);
  } catch (const std::invalid_argument& e) {
    fail(who, e.what());
  }
  std::vector<ops::TensorMeta> metas;
  try {
    ops::normalize(*n.op, args);
    metas = n.op->meta(args);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    // Any exception: hostile metadata may trip a meta function's own checks of every kind
    // (std::out_of_range, std::overflow_error...), and verify_graph promises invalid_argument.
    fail(who, "the op's meta function rejects the recorded inputs: " +
                  escape_for_message(e.what(), 200));
  }
  if (metas.size() != n.outputs.size())
    fail(who, "the op's meta function computes " + std::to_string(metas.size()) +
                  " results, the node has " + std::to_string(n.outputs.size()));
  for (size_t i = 0; i < metas.size(); ++i) {
    const ops::TensorMeta& rec = g.value(n.outputs[i]).meta;
    if (rec.dtype != metas[i].dtype || rec.sizes != metas[i].sizes)
      fail(who, "result " + value_label(g, n.outputs[i]) + " is recorded as " +
                    type_annotation(rec) + " but the op's meta function computes " +
                    type_annotation(metas[i]) + " from the recorded inputs");
  }
}

}  // namespace

bool is_addressable(const ops::TensorMeta& m) {
  if (!m.strides.empty() && m.strides.size() != m.sizes.size()) return false;
  if (m.storage_offset < 0) return false;
  IntList at_least_one = m.sizes;
  for (int64_t& s : at_least_one) {
    if (s < 0) return false;
    s = std::max<int64_t>(s, 1);
  }
  // Only when the count with zero sizes read as 1 fits are contiguous strides safe to compute.
  if (!checked_numel(at_least_one)) return false;
  IntList strides = m.strides.empty() ? contiguous_strides(m.sizes) : m.strides;
  for (int64_t st : strides)
    if (st < 0) return false;
  std::optional<ReachableOffsets> reach = checked_reachable_offsets(m.sizes, strides, m.storage_offset);
  if (!reach) return false;
  int64_t elements = reach->empty ? m.storage_offset : reach->hi;
  return checked_add(elements, 1) && checked_mul(elements + 1, static_cast<int64_t>(itemsize(m.dtype)));
}

void verify_graph(const Graph& g) {
  std::vector<bool> defined(g.values().size(), false);
  std::unordered_map<std::string, ValueId> names;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    ValueId v = g.inputs()[i];
    std::string who = "verify_graph: graph input " + std::to_string(i);
    if (v.index >= g.values().size()) fail(who, value_label(g, v));
    if (defined[v.index]) fail(who, value_label(g, v) + " is listed twice");
    if (g.value(v).producer != -1)
      fail(who, value_label(g, v) + " records producer node " +
                    std::to_string(g.value(v).producer) + "; graph inputs have none");
    check_layout(g, v, who);
    defined[v.index] = true;
  }
  for (size_t k = 0; k < g.nodes().size(); ++k) {
    const Node& n = g.nodes()[k];
    std::string who = node_label(g, n, k);
    try {
      if (!n.op) fail(who, "the node has no op");
      check_args(g, n, k, defined, who);
      check_results(g, n, k, defined, who);
      check_meta(g, n, who);
    } catch (const VerifyError& e) {
      throw VerifyError(e.what(), k);
    }
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ValueId v = g.outputs()[i];
    std::string who = "verify_graph: graph output " + std::to_string(i);
    if (v.index >= g.values().size()) fail(who, value_label(g, v));
    if (!defined[v.index])
      fail(who, value_label(g, v) + " is not defined by any graph input or node");
  }
  // Names are how the text format refers to values: two values of one name cannot round-trip.
  for (size_t i = 0; i < g.values().size(); ++i) {
    if (!defined[i]) continue;
    auto [it, inserted] = names.emplace(g.values()[i].name, ValueId{static_cast<uint32_t>(i)});
    if (!inserted)
      fail("verify_graph", "two values are named %" + escape_for_message(g.values()[i].name, 48) +
                               " (value ids " + std::to_string(it->second.index) + " and " +
                               std::to_string(i) + "); rename one (Graph::fresh_name)");
  }
}

}  // namespace aotgrad::graph
