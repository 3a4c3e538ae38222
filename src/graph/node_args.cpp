#include "graph/node_args.h"

#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "ops/schema.h"

namespace aotgrad::graph {
namespace {

// ops::Arg (op layer) and NodeArg (graph layer) are two variants that must stay in step: the same
// alternatives in the same order, where a graph value (ValueId) stands for a Tensor and a
// ValueList for a Tensor[]. Code converting one to the other (the tracer's to_node_arg, the
// backends' node preparation, build_joint) and every name table indexed by Arg::index() rely on
// it. Pinned here, at compile time, so a change to one that misses the other does not build.
template <class T>
struct AsNodeAlternative {
  using type = T;
};
template <>
struct AsNodeAlternative<Tensor> {
  using type = ValueId;
};
template <>
struct AsNodeAlternative<ops::TensorList> {
  using type = ValueList;
};

template <size_t... I>
constexpr bool same_alternatives(std::index_sequence<I...>) {
  return (std::is_same_v<typename AsNodeAlternative<std::variant_alternative_t<I, ops::Arg>>::type,
                         std::variant_alternative_t<I, NodeArg>> &&
          ...);
}

static_assert(std::variant_size_v<ops::Arg> == std::variant_size_v<NodeArg>,
              "ops::Arg and graph::NodeArg must have the same number of alternatives");
static_assert(same_alternatives(std::make_index_sequence<std::variant_size_v<ops::Arg>>{}),
              "ops::Arg and graph::NodeArg must list the same alternatives in the same order "
              "(Tensor as ValueId, Tensor[] as ValueList)");

}  // namespace

std::optional<NodeArg> schema_default(const ops::ArgSchema& s) {
  if (!s.default_text) {
    if (s.optional || s.type == ops::ArgType::generator) return NodeArg(std::monostate{});
    return std::nullopt;
  }
  try {
    ops::DefaultValue d = ops::parse_default_value(s);
    if (std::holds_alternative<std::monostate>(d)) return NodeArg(std::monostate{});
    if (s.type == ops::ArgType::tensor_list) return NodeArg(ValueList{});
    return std::visit([](auto&& v) { return NodeArg(std::move(v)); }, std::move(d));
  } catch (const std::invalid_argument&) {
    // A default this IR cannot hold: the argument must be written.
    return std::nullopt;
  }
}

NodeArg canonical_arg(const ops::ArgSchema& s, NodeArg a) {
  switch (s.type) {
    case ops::ArgType::scalar:
      if (auto* v = std::get_if<int64_t>(&a)) return Scalar(*v);
      if (auto* d = std::get_if<double>(&a)) return Scalar(*d);
      if (auto* b = std::get_if<bool>(&a)) return Scalar(*b);
      break;
    case ops::ArgType::float_:
      if (auto* v = std::get_if<int64_t>(&a)) return static_cast<double>(*v);
      if (auto* sc = std::get_if<Scalar>(&a)) return sc->to_double();
      break;
    case ops::ArgType::int_:
      if (auto* sc = std::get_if<Scalar>(&a); sc && sc->is_integral()) return sc->to_int();
      break;
    default:
      break;
  }
  return a;
}

bool arg_fits_schema(const ops::ArgSchema& s, const NodeArg& a) {
  using ops::ArgType;
  if (std::holds_alternative<std::monostate>(a)) return s.optional || s.type == ArgType::generator;
  switch (s.type) {
    case ArgType::tensor:
      return std::holds_alternative<ValueId>(a);
    case ArgType::tensor_list:
      return std::holds_alternative<ValueList>(a);
    case ArgType::scalar:
      return std::holds_alternative<Scalar>(a) || std::holds_alternative<int64_t>(a) ||
             std::holds_alternative<double>(a) || std::holds_alternative<bool>(a);
    case ArgType::int_:
      return std::holds_alternative<int64_t>(a);
    case ArgType::int_list:
      return std::holds_alternative<IntList>(a);
    case ArgType::float_:
      return std::holds_alternative<double>(a) || std::holds_alternative<int64_t>(a);
    case ArgType::bool_:
      return std::holds_alternative<bool>(a);
    case ArgType::dtype:
      return std::holds_alternative<DType>(a);
    case ArgType::string:
      return std::holds_alternative<std::string>(a);
    case ArgType::generator:
      return false;
  }
  return false;
}

std::string_view arg_kind_name(const NodeArg& a) {
  static constexpr std::string_view names[] = {"None", "Tensor", "Scalar",     "int",      "float",
                                               "bool", "int[]",  "ScalarType", "Tensor[]", "str"};
  return names[a.index()];
}

std::string type_annotation(const ops::TensorMeta& m) {
  auto join = [](const IntList& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
    return out;
  };
  std::string out = std::string(dtype_name(m.dtype)) + "[" + join(m.sizes) + "]";
  // Empty strides on a sized tensor mean "never computed": the parser reads them as contiguous.
  bool strides_known = !m.strides.empty() || m.sizes.empty();
  if (strides_known && m.strides != contiguous_strides(m.sizes)) out += "{" + join(m.strides) + "}";
  if (m.storage_offset != 0) out += "@" + std::to_string(m.storage_offset);
  return out;
}

std::string schema_type_text(const ops::ArgSchema& s) {
  if (s.optional_elements) return "Tensor?[]" + std::string(s.optional ? "?" : "");
  return std::string(ops::arg_type_name(s.type)) + (s.optional ? "?" : "");
}

}  // namespace aotgrad::graph
