// ATen-style operator schemas: "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor".
// Alias annotations: `Tensor(a!)` is written in place, `Tensor(a)` in a result aliases the
// argument annotated with the same set (a view).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aotgrad::ops {

enum class ArgType : uint8_t {
  tensor, tensor_list, scalar, int_, int_list, float_, bool_, dtype, string, generator,
};
std::string_view arg_type_name(ArgType t);

struct ArgSchema {
  std::string name;
  ArgType type = ArgType::tensor;
  bool optional = false;      // `T?`: may be None
  bool kwarg_only = false;    // after `*`
  std::optional<std::string> default_text;  // as written in the schema ("1", "False", "None", "[]")
  std::string alias_set;      // "a" in `Tensor(a)` / `Tensor(a!)`; empty when none
  bool is_write = false;      // `!`
};

struct Schema {
  std::string name;      // "add"
  std::string overload;  // "Tensor" ("default" when the schema has none)
  std::vector<ArgSchema> args;
  std::vector<ArgSchema> returns;  // names empty unless written

  // Index of the argument called `arg_name`, or -1.
  int find_arg(std::string_view arg_name) const;
};

// Parses a schema string; throws std::invalid_argument with the column of the first error.
Schema parse_schema(std::string_view text);

}  // namespace aotgrad::ops
