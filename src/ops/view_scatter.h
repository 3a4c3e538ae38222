// How each view op writes an updated view back into its base, functionally (OpDef::view_scatter).
// Functionalization calls these to turn a mutation through a view into a new base value.
#pragma once

#include "ops/op.h"

namespace aotgrad::ops {

Tensor view_scatter_reshape(const Tensor& base, const Tensor& updated, const OpArgs& view_args);
Tensor view_scatter_identity(const Tensor& base, const Tensor& updated, const OpArgs& view_args);
Tensor view_scatter_permute(const Tensor& base, const Tensor& updated, const OpArgs& view_args);
Tensor view_scatter_transpose(const Tensor& base, const Tensor& updated, const OpArgs& view_args);
Tensor view_scatter_t(const Tensor& base, const Tensor& updated, const OpArgs& view_args);
Tensor view_scatter_unsqueeze(const Tensor& base, const Tensor& updated, const OpArgs& view_args);
Tensor view_scatter_squeeze(const Tensor& base, const Tensor& updated, const OpArgs& view_args);
Tensor view_scatter_slice(const Tensor& base, const Tensor& updated, const OpArgs& view_args);
Tensor view_scatter_select(const Tensor& base, const Tensor& updated, const OpArgs& view_args);
Tensor view_scatter_as_strided(const Tensor& base, const Tensor& updated, const OpArgs& view_args);

}  // namespace aotgrad::ops
