// The module the export tests share: Linear(4, 3) -> BatchNorm2d(3) (training mode: its running
// statistics and num_batches_tracked are mutated buffers) -> relu -> sum, a scalar loss.
#pragma once

#include <memory>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"

namespace aotgrad::testing {

class ExportNet : public nn::Module {
 public:
  ExportNet() {
    fc = register_module("fc", std::make_shared<nn::LinearImpl>(4, 3));
    bn = register_module("bn", std::make_shared<nn::BatchNorm2dImpl>(3));
  }
  std::string type_name() const override { return "ExportNet"; }
  Tensor forward(const Tensor& x) {
    Tensor h = bn->forward(fc->forward(x).reshape({5, 3, 1, 1}));
    return h.reshape({5, 3}).relu().sum();
  }
  std::shared_ptr<nn::LinearImpl> fc;
  std::shared_ptr<nn::BatchNorm2dImpl> bn;
};

// Two nets with the same weights (the same seed), for eager-vs-exported comparisons.
inline std::shared_ptr<ExportNet> make_export_net() {
  manual_seed(7);
  return std::make_shared<ExportNet>();
}

inline Tensor export_net_input() {
  manual_seed(11);
  return randn({5, 4});
}

// (params..., buffers...) of `m`, in named_parameters() / named_buffers() order.
inline std::vector<Tensor> params_and_buffers(const nn::Module& m) {
  std::vector<Tensor> out;
  for (const auto& [name, t] : m.named_parameters()) out.push_back(t);
  for (const auto& [name, t] : m.named_buffers()) out.push_back(t);
  return out;
}

}  // namespace aotgrad::testing
