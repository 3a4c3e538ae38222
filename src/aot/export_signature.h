// GraphSignature from a graph's descriptors (export, aotgrad/export.h).
//
// Needs: a graph whose inputs and outputs carry descriptors (lowering writes them on every
// graph). Guarantees: a signature naming each input and output by its value name, or an
// ExportError naming the first input or output export cannot describe (no descriptor, a synthetic
// base, an intermediate base, a mutated parameter).
#pragma once

#include <optional>

#include "aotgrad/export.h"
#include "graph/graph.h"

namespace aotgrad::aot {

// `loss_output`: the graph output position of the loss; when given, or when the graph has
// gradient outputs, the signature has a backward_signature.
GraphSignature signature_of(const graph::Graph& g, std::optional<size_t> loss_output,
                            const std::string& who);

}  // namespace aotgrad::aot
