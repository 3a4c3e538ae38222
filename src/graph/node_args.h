// Helpers shared by the printer, parser and verifier: how a node's arguments relate to its op's
// schema (the default each argument takes when omitted, the one alternative each schema type is
// stored as, whether a stored argument fits its type) and how a type annotation reads. Shared so
// that the three agree on what "equal to the default" and "the right kind" mean.
#pragma once

#include <optional>
#include <string>

#include "graph/graph.h"
#include "ops/schema.h"

namespace aotgrad::graph {

// The value ops::normalize fills in when argument `s` is omitted: its parsed default text, or
// None for an optional argument without one. nullopt when the argument is required (or its
// default text is one this IR cannot represent, which then makes it required in text too).
// Mirrors parse_default in src/ops/args.cpp; keep the two in step.
std::optional<NodeArg> schema_default(const ops::ArgSchema& s);

// The alternative ops::normalize would store for `a` under schema type `s` (an int passed for a
// Scalar becomes a Scalar, an int passed for a float becomes a double, ...). Other args unchanged.
NodeArg canonical_arg(const ops::ArgSchema& s, NodeArg a);

// True when `a` holds an alternative the op's accessors accept for schema type `s` (None only
// where the argument is optional).
bool arg_fits_schema(const ops::ArgSchema& s, const NodeArg& a);

// The kind an argument holds, for error messages: "Tensor", "int[]", "None", ...
std::string_view arg_kind_name(const NodeArg& a);

// A value's type annotation: "f32[4,8]", "f32[4,8]{1,4}" when the strides are not contiguous,
// "...@16" when the storage offset is not 0 (docs/ir.md "Values and types").
std::string type_annotation(const ops::TensorMeta& m);

// `s`'s type as written in a schema: "Tensor?", "int[]", "Scalar".
std::string schema_type_text(const ops::ArgSchema& s);

}  // namespace aotgrad::graph
