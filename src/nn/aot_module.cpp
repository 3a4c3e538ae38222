// The non-template half of aot_module: which tensors a call lifts, and the slot swap that lets
// the traced forward see graph inputs where the module keeps its parameters and buffers.
#include "aotgrad/nn/aot_module.h"

namespace aotgrad::nn_detail {

LiftedState lift(nn::Module& module) {
  LiftedState s;
  nn::TensorSlots params = module.parameter_slots(/*with_names=*/false);
  nn::TensorSlots buffers = module.buffer_slots(/*with_names=*/false);
  s.tensors.reserve(params.slots.size() + buffers.slots.size());
  s.slots.reserve(params.slots.size() + buffers.slots.size());
  for (auto* group : {&params, &buffers})
    for (auto& slots : group->slots) {
      s.tensors.push_back(*slots.front());
      s.slots.push_back(std::move(slots));
    }
  // The counts keep parameters and buffers apart in the key; the flags make train() and eval()
  // separate specializations (Dropout and BatchNorm trace differently in each).
  s.key =
      "P" + std::to_string(params.slots.size()) + "B" + std::to_string(buffers.slots.size()) + "M";
  for (const nn::Module* m : module.modules()) s.key += m->is_training() ? '1' : '0';
  s.key += ';';
  return s;
}

SlotSwap::SlotSwap(const std::vector<std::vector<Tensor*>>& slots,
                   const std::vector<Tensor>& inputs)
    : slots_(slots) {
  saved_.reserve(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    saved_.push_back(*slots[i].front());
    for (Tensor* slot : slots[i]) *slot = inputs.at(i);
  }
}

SlotSwap::~SlotSwap() {
  for (size_t i = 0; i < saved_.size(); ++i)
    for (Tensor* slot : slots_[i]) *slot = saved_[i];
}

}  // namespace aotgrad::nn_detail
