#include "kernels/onednn.h"

namespace aotgrad::kernels {

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& onednn_stream() {
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

namespace {

dnnl::algorithm eltwise_of(GemmActivation act) {
  switch (act) {
    case GemmActivation::relu:
      return dnnl::algorithm::eltwise_relu;
    case GemmActivation::none:
      break;
  }
  return dnnl::algorithm::undef;
}

}  // namespace

dnnl::post_ops epilogue_post_ops(GemmActivation activation, bool residual, bool residual_first,
                                 const dnnl::memory::desc& dst, int* residual_index,
                                 bool residual_in_dst) {
  dnnl::post_ops ops;
  if (residual_index) *residual_index = -1;
  auto add = [&] {
    if (residual_index) *residual_index = ops.len();
    if (residual_in_dst)
      ops.append_sum(1.0f);
    else
      ops.append_binary(dnnl::algorithm::binary_add, dst);
  };
  if (residual && residual_first) add();
  if (activation != GemmActivation::none)
    ops.append_eltwise(1.0f, eltwise_of(activation), 0.0f, 0.0f);
  if (residual && !residual_first) add();
  return ops;
}

}  // namespace aotgrad::kernels
