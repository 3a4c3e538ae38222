// Functionalized RNG in the tracer (include/aotgrad/random.h, docs/partitioning.md "Random ops").
//
// Needs: the eager random rows (ops/factory.cpp rand / randn, ops/normalization.cpp
// native_dropout) and their functional forms (ops/random.cpp). Guarantees: a traced random call
// becomes a philox node reading the graph inputs fw_rng_seed() and fw_rng_offset(N) at `rel`,
// the running count of blocks the call drew before it — exactly the blocks eager would reserve
// from the generator for the same calls in the same order — and N (the offset descriptor's index)
// is the call's total, which the runtime (aot/runtime_rng.cpp) advances the generator by. The
// two inputs come after every other graph input and exist only in graphs that draw.
// Effect tokens: an effectful call becomes aotgrad.with_effects(token, ...) -> (next token,
// results); the first token is the graph input fw_token(0) and capture returns the last one as
// the graph output fw_token(0) (aot/capture.cpp), so the calls keep their order and survive DCE.
#include "kernels/random.h"

#include <string>

#include "kernels/factory.h"
#include "ops/effects.h"
#include "ops/op.h"
#include "ops/random_rows.h"
#include "trace/tracer.h"

namespace aotgrad::trace {

int64_t Tracer::take_rng_blocks(int64_t blocks) {
  if (!rng_seed_.defined()) {
    // Only the metadata of the examples is read: 0-dim i64 tensors, never requiring grad.
    Tensor example = scalar_tensor(Scalar(int64_t{0}), DType::i64);
    rng_seed_ = add_input(example, "rng_seed", Descriptor{DescriptorKind::fw_rng_seed});
    rng_offset_input_ = graph_.inputs().size();
    rng_offset_ = add_input(example, "rng_offset", Descriptor{DescriptorKind::fw_rng_offset});
  }
  const int64_t rel = rng_blocks_;
  rng_blocks_ += blocks;
  graph_.mutable_input_descs()[rng_offset_input_].index = rng_blocks_;
  return rel;
}

std::optional<std::vector<Tensor>> Tracer::functionalize_random(const ops::OpDef& op,
                                                                ops::OpArgs& args) {
  // Rows made of rand / randn (bernoulli, uniform_, ...): their decomposition, traced.
  if (ops::RandomDecomposition d = ops::random_decomposition(op)) {
    op.meta(args);  // eager's checks
    return d(args);
  }
  const bool uniform = op.name == "aten.rand.default";
  if (uniform || op.name == "aten.randn.default") {
    static const ops::OpDef& philox_rand = ops::lookup("aotgrad.philox_rand.default");
    static const ops::OpDef& philox_randn = ops::lookup("aotgrad.philox_randn.default");
    const ops::TensorMeta m = op.meta(args).at(0);
    const int64_t rel = take_rng_blocks(kernels::random_blocks(m.dtype, numel_of(m.sizes)));
    ops::OpArgs p{rng_seed_, rng_offset_, rel, m.sizes, m.dtype};
    ops::normalize(uniform ? philox_rand : philox_randn, p);
    return record(uniform ? philox_rand : philox_randn, p, /*track=*/true);
  }
  if (op.name == "aten.native_dropout.default") {
    // Eval mode draws nothing (a copy and an all-true mask): recorded as is.
    if (!ops::is_none(args, 2) && !ops::bool_arg(args, 2)) return std::nullopt;
    static const ops::OpDef& mask_op = ops::lookup("aotgrad.philox_dropout_mask.default");
    static const ops::OpDef& scale_op = ops::lookup("aten.native_dropout_backward.default");
    op.meta(args);  // eager's checks (floating input, p in [0, 1])
    const Tensor input = ops::tensor_arg(args, 0);
    const double p = ops::float_arg(args, 1);
    const int64_t rel = take_rng_blocks(kernels::dropout_blocks(input.numel()));
    ops::OpArgs m{rng_seed_, rng_offset_, rel, input.sizes(), p};
    ops::normalize(mask_op, m);
    Tensor mask = record(mask_op, m, /*track=*/true).at(0);
    // out = input * mask * scale, the eager kernel's own arithmetic (kernels::dropout), and
    // differentiable through native_dropout_backward's rule like eager's native_dropout.
    const double scale = p == 1.0 ? 0.0 : 1.0 / (1.0 - p);
    ops::OpArgs s{input, mask, scale};
    ops::normalize(scale_op, s);
    Tensor out = call(scale_op, s).at(0);
    return std::vector<Tensor>{out, mask};
  }
  return std::nullopt;
}

// ---- effect tokens ----

std::vector<Tensor> Tracer::thread_effect(const ops::OpDef& op, ops::OpArgs& args) {
  static const ops::OpDef& with_effects = ops::lookup("aotgrad.with_effects.default");
  if (!token_.defined())
    token_ =
        add_input(make_tensor({0}, DType::f32), "token", Descriptor{DescriptorKind::fw_token, 0});
  ops::OpArgs w = ops::with_effects_args(op, args, token_);
  ops::normalize(with_effects, w);
  std::vector<Tensor> outs = record(with_effects, w, /*track=*/true);
  token_ = outs.at(0);
  return {outs.begin() + 1, outs.end()};
}

}  // namespace aotgrad::trace
