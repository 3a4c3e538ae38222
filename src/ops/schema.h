// ATen-style operator schemas: "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor".
// Alias annotations: `Tensor(a!)` is written in place, `Tensor(a)` in a result aliases the
// argument annotated with the same set (a view); `Tensor(a -> *)` (split, unbind: each result is a
// view of it) reads as set `a` too. Schemas are read as ATen writes them (native_functions.yaml),
// so rows can copy ATen's text, and graphs from PyTorch's make_fx name the same arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "aotgrad/scalar.h"

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
  std::string alias_set;      // "a" in `Tensor(a)` / `Tensor(a!)` / `Tensor(a -> *)`; empty when none
  bool is_write = false;      // `!`
  // `bool[3] output_mask`: type int_list, `bool_elements` set. OpArgs and graph nodes hold it as
  // an int[] of 0 / 1 (one list alternative for both keeps the Arg variant, and every switch
  // over it, unchanged); the graph text writes it `[true, false, true]`.
  bool bool_elements = false;
  int list_size = 0;          // N in `int[N]`; 0 when the schema gives none
  // `Tensor?[] indices` (index, index_put): a tensor list whose entries may each be None. OpArgs
  // hold a None entry as an undefined Tensor, graph nodes as graph::kNoValue; text writes `none`.
  bool optional_elements = false;
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

// An argument's default, as ops::normalize should fill it in for an omitted argument (the graph
// parser does; args.cpp's parse_default and graph::schema_default are to defer to this). Lists hold
// int64s (a `bool[]` default as 0 / 1; a `Tensor[]` default `[]` as an empty list).
using DefaultValue =
    std::variant<std::monostate, Scalar, int64_t, double, bool, std::vector<int64_t>, std::string>;

// Reads `s.default_text` under `s`'s type. "None" is None (monostate). A list default written as
// one scalar repeats it to the list's size, as ATen does: `int[2] padding=0` is [0, 0],
// `int[2] dilation=1` is [1, 1] (an unsized `int[] x=0` is [0]). Throws std::invalid_argument
// naming the argument when `s` has no default or the text does not read as its type.
DefaultValue parse_default_value(const ArgSchema& s);

}  // namespace aotgrad::ops
