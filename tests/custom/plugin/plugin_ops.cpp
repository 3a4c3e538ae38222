// A custom-op library for `aotgrad run --load-ops` (built as a MODULE library, not linked into
// the tests): plugin::triple registers from aotgrad_register_ops(), plugin::add_one from a static
// initializer.
#include "aotgrad/aotgrad.h"
#include "aotgrad/custom_op.h"

namespace {

std::vector<aotgrad::TensorSpec> same_as_x(const aotgrad::OpArgs& a) {
  const aotgrad::Tensor& x = std::get<aotgrad::Tensor>(a[0]);
  return {{x.dtype(), x.sizes()}};
}

std::vector<aotgrad::Tensor> triple(const aotgrad::OpArgs& a) {
  return {std::get<aotgrad::Tensor>(a[0]) * 3.0};
}

std::vector<aotgrad::Tensor> triple_vjp(const aotgrad::CustomVjpContext& c) {
  return {c.grads[0] * 3.0};
}

std::vector<aotgrad::Tensor> add_one(const aotgrad::OpArgs& a) {
  return {std::get<aotgrad::Tensor>(a[0]) + 1.0};
}

std::vector<aotgrad::Tensor> add_one_vjp(const aotgrad::CustomVjpContext& c) {
  return {c.grads[0]};
}

[[maybe_unused]] const bool registered_at_load = [] {
  aotgrad::register_op({.schema = "plugin::add_one(Tensor x) -> Tensor",
                        .meta = same_as_x,
                        .kernel = add_one,
                        .vjp = add_one_vjp});
  return true;
}();

}  // namespace

extern "C" void aotgrad_register_ops() {
  aotgrad::register_op({.schema = "plugin::triple(Tensor x) -> Tensor",
                        .meta = same_as_x,
                        .kernel = triple,
                        .vjp = triple_vjp});
}
