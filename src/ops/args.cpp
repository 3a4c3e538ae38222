// OpArgs access, default filling, and small shared helpers of the op layer.
#include <stdexcept>
#include <string>

#include "ops/op.h"
#include "ops/schema.h"

namespace aotgrad::ops {
namespace {

[[noreturn]] void bad_arg(size_t i, const char* expected, const Arg& got) {
  static const char* names[] = {"None", "Tensor", "Scalar", "int",  "float",
                                "bool", "int[]",  "dtype",  "Tensor[]", "str"};
  throw std::invalid_argument("argument " + std::to_string(i) + ": expected " + expected +
                              ", got " + names[got.index()]);
}

const Arg& at(const OpArgs& a, size_t i) {
  if (i >= a.size())
    throw std::invalid_argument("argument " + std::to_string(i) + " is missing (" +
                                std::to_string(a.size()) + " given)");
  return a[i];
}

// The default of an omitted argument, as schema.h's parse_default_value reads it.
Arg parse_default(const ArgSchema& s) {
  DefaultValue d = parse_default_value(s);
  if (std::holds_alternative<std::monostate>(d)) return std::monostate{};
  if (s.type == ArgType::tensor_list) return TensorList{};
  return std::visit([](auto&& v) -> Arg { return Arg(std::move(v)); }, std::move(d));
}

// Converts an argument to the schema's type where the conversion is lossless and unambiguous.
void coerce(const OpDef& op, const ArgSchema& s, Arg& a, size_t i) {
  if (std::holds_alternative<std::monostate>(a)) {
    if (!s.optional && s.type != ArgType::generator)
      throw std::invalid_argument(std::string(op.name) + ": argument '" + s.name +
                                  "' (" + std::to_string(i) + ") may not be None");
    return;
  }
  switch (s.type) {
    case ArgType::scalar:
      if (auto* v = std::get_if<int64_t>(&a)) a = Scalar(*v);
      else if (auto* d = std::get_if<double>(&a)) a = Scalar(*d);
      else if (auto* b = std::get_if<bool>(&a)) a = Scalar(*b);
      break;
    case ArgType::float_:
      if (auto* v = std::get_if<int64_t>(&a)) a = static_cast<double>(*v);
      else if (auto* sc = std::get_if<Scalar>(&a)) a = sc->to_double();
      break;
    case ArgType::int_:
      if (auto* sc = std::get_if<Scalar>(&a); sc && sc->is_integral()) a = sc->to_int();
      break;
    default: break;
  }
}

}  // namespace

const Tensor& tensor_arg(const OpArgs& a, size_t i) {
  if (auto* t = std::get_if<Tensor>(&at(a, i))) return *t;
  bad_arg(i, "Tensor", a[i]);
}
const TensorList& tensor_list_arg(const OpArgs& a, size_t i) {
  if (auto* t = std::get_if<TensorList>(&at(a, i))) return *t;
  bad_arg(i, "Tensor[]", a[i]);
}
Scalar scalar_arg(const OpArgs& a, size_t i) {
  const Arg& v = at(a, i);
  if (auto* s = std::get_if<Scalar>(&v)) return *s;
  if (auto* d = std::get_if<double>(&v)) return Scalar(*d);
  if (auto* n = std::get_if<int64_t>(&v)) return Scalar(*n);
  if (auto* b = std::get_if<bool>(&v)) return Scalar(*b);
  bad_arg(i, "Scalar", v);
}
int64_t int_arg(const OpArgs& a, size_t i) {
  if (auto* v = std::get_if<int64_t>(&at(a, i))) return *v;
  bad_arg(i, "int", a[i]);
}
double float_arg(const OpArgs& a, size_t i) {
  const Arg& v = at(a, i);
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* n = std::get_if<int64_t>(&v)) return static_cast<double>(*n);
  bad_arg(i, "float", v);
}
bool bool_arg(const OpArgs& a, size_t i) {
  if (auto* v = std::get_if<bool>(&at(a, i))) return *v;
  bad_arg(i, "bool", a[i]);
}
const IntList& int_list_arg(const OpArgs& a, size_t i) {
  if (auto* v = std::get_if<IntList>(&at(a, i))) return *v;
  bad_arg(i, "int[]", a[i]);
}
DType dtype_arg(const OpArgs& a, size_t i) {
  if (auto* v = std::get_if<DType>(&at(a, i))) return *v;
  bad_arg(i, "ScalarType", a[i]);
}
const std::string& string_arg(const OpArgs& a, size_t i) {
  if (auto* v = std::get_if<std::string>(&at(a, i))) return *v;
  bad_arg(i, "str", a[i]);
}
bool is_none(const OpArgs& a, size_t i) {
  return i >= a.size() || std::holds_alternative<std::monostate>(a[i]);
}
Tensor optional_tensor(const OpArgs& a, size_t i) {
  return is_none(a, i) ? Tensor() : tensor_arg(a, i);
}
Arg optional_arg(const Tensor& t) {
  return t.defined() ? Arg(t) : Arg(std::monostate{});
}

std::vector<std::optional<Arg>> omitted_args(const Schema& schema) {
  std::vector<std::optional<Arg>> out(schema.args.size());  // nullopt: must be given
  for (size_t i = 0; i < schema.args.size(); ++i) {
    const ArgSchema& a = schema.args[i];
    if (!a.default_text) {
      if (a.optional || a.type == ArgType::generator) out[i].emplace(std::monostate{});
      continue;
    }
    try {
      out[i].emplace(parse_default(a));
    } catch (const std::invalid_argument&) {
      // A custom op may carry a default this reader refuses; a call that gives the argument
      // works, one that omits it gets the reader's error from normalize.
    }
  }
  return out;
}

void normalize(const OpDef& op, OpArgs& args) {
  const OpDef::Derived& d = *op.derived;
  const Schema& s = d.schema;
  if (args.size() > s.args.size())
    throw std::invalid_argument(std::string(op.name) + " takes " + std::to_string(s.args.size()) +
                                " arguments, " + std::to_string(args.size()) + " given");
  const size_t given = args.size();
  args.reserve(s.args.size());
  for (size_t i = given; i < s.args.size(); ++i) {
    // A row built by hand (tests) may have no `omitted`: it then reads the default here.
    if (i < d.omitted.size() && d.omitted[i]) {
      args.push_back(*d.omitted[i]);
      continue;
    }
    if (!s.args[i].default_text) {
      if (s.args[i].optional || s.args[i].type == ArgType::generator) {
        args.emplace_back(std::monostate{});
        continue;
      }
      throw std::invalid_argument(std::string(op.name) + ": missing argument '" + s.args[i].name +
                                  "'");
    }
    args.push_back(parse_default(s.args[i]));  // may throw: the default does not read as its type
  }
  for (size_t i = 0; i < args.size(); ++i) coerce(op, s.args[i], args[i], i);
}

// Every meta function that makes a fresh result comes here, so this one check_shape refuses,
// for every op, a result whose element count or byte size would overflow (naming the op, which
// dispatch has made current).
TensorMeta TensorMeta::contiguous(const IntList& sizes, DType dtype) {
  check_shape(sizes, dtype);
  return TensorMeta{dtype, sizes, contiguous_strides(sizes), 0};
}

std::string_view recompute_name(Recompute r) {
  switch (r) {
    case Recompute::pointwise: return "pointwise";
    case Recompute::view: return "view";
    case Recompute::reduction: return "reduction";
    case Recompute::factory: return "factory";
    case Recompute::compute_heavy: return "compute_heavy";
    case Recompute::random: return "random";
    case Recompute::effectful: return "effectful";
  }
  return "?";
}

}  // namespace aotgrad::ops
