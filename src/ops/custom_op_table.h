// The op table's door for rows made at run time (custom ops, see aotgrad/custom_op.h).
#pragma once

#include "ops/op.h"

namespace aotgrad::ops {

// Adds `op` (which, and whose name and schema strings, must live for the rest of the process) to
// the table with its derived schema facts; find() and lookup() return it from then on. Throws
// std::invalid_argument naming the op when a row of that name exists. Thread-safe.
void add_runtime_row(const OpDef& op, OpDef::Derived derived);

}  // namespace aotgrad::ops
