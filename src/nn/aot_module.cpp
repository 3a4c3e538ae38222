// The non-template half of aot_module: which tensors a call lifts, and how the traced forward
// sees graph inputs where the module keeps its parameters and buffers.
//
// Thread-safety: a trace writes fakes into module slots, which every other call reads (lift, or
// an eager forward). One process-wide reader/writer lock orders them; per-thread counts make it
// reentrant, since an aot_module call nested in another module's forward (or traced through in
// its trace) takes it again on the same thread. A thread holding the lock never waits for
// another thread's compile (traces inline nested calls; eager forwards hold an EagerOnlyScope),
// so the lock and compile waits cannot deadlock.
#include "aotgrad/nn/aot_module.h"

#include <shared_mutex>
#include <stdexcept>

#include "aotgrad/autograd.h"
#include "autograd/traced.h"
#include "trace/tracer.h"

namespace aotgrad::nn_detail {
namespace {

std::shared_mutex& slots_mutex() {
  static std::shared_mutex m;
  return m;
}
thread_local int t_readers = 0;  // read locks this thread holds (or nests in its write lock)
thread_local int t_writers = 0;  // write locks this thread holds

class SlotsReadLock {
 public:
  SlotsReadLock() : owns_(t_readers == 0 && t_writers == 0) {
    if (owns_) slots_mutex().lock_shared();
    ++t_readers;
  }
  ~SlotsReadLock() {
    --t_readers;
    if (owns_) slots_mutex().unlock_shared();
  }
  SlotsReadLock(const SlotsReadLock&) = delete;
  SlotsReadLock& operator=(const SlotsReadLock&) = delete;

 private:
  bool owns_;
};

class SlotsWriteLock {
 public:
  SlotsWriteLock() : owns_(t_writers == 0) {
    // Upgrading would deadlock against another reader doing the same; unreachable, since a
    // thread reading the slots for an eager forward never traces (EagerOnlyScope).
    if (owns_ && t_readers > 0)
      throw std::logic_error("aot_module: a trace started while this thread reads module slots");
    if (owns_) slots_mutex().lock();
    ++t_writers;
  }
  ~SlotsWriteLock() {
    --t_writers;
    if (owns_) slots_mutex().unlock();
  }
  SlotsWriteLock(const SlotsWriteLock&) = delete;
  SlotsWriteLock& operator=(const SlotsWriteLock&) = delete;

 private:
  bool owns_;
};

// Puts inputs[i] into every slot of slots[i] and puts the originals back when destroyed. The
// trace also reads each original as its stand-in: a module that keeps a copy of a registered
// tensor outside the slot (LibTorch's `w = register_parameter("w", t)`, whose slot is the
// module's own) reads the copy, which PyTorch's aot_module sees as the parameter itself.
class SlotSwap {
 public:
  SlotSwap(const std::vector<std::vector<Tensor*>>& slots, const std::vector<Tensor>& inputs)
      : slots_(slots) {
    saved_.reserve(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
      saved_.push_back(*slots[i].front());
      for (Tensor* slot : slots[i]) *slot = inputs.at(i);
      if (auto* tracer = dynamic_cast<trace::Tracer*>(autograd::traced_autograd_for(inputs[i])))
        tracer->substitute(saved_.back(), inputs[i]);
    }
  }
  ~SlotSwap() {
    for (size_t i = 0; i < saved_.size(); ++i)
      for (Tensor* slot : slots_[i]) *slot = saved_[i];
  }
  SlotSwap(const SlotSwap&) = delete;
  SlotSwap& operator=(const SlotSwap&) = delete;

 private:
  const std::vector<std::vector<Tensor*>>& slots_;
  std::vector<Tensor> saved_;
};

}  // namespace

LiftedState lift(nn::Module& module) {
  SlotsReadLock read;
  LiftedState s;
  nn::TensorSlots params = module.parameter_slots(/*with_names=*/false);
  nn::TensorSlots buffers = module.buffer_slots(/*with_names=*/false);
  s.tensors.reserve(params.slots.size() + buffers.slots.size());
  s.slots.reserve(params.slots.size() + buffers.slots.size());
  s.num_parameters = params.slots.size();
  for (auto* group : {&params, &buffers})
    for (auto& slots : group->slots) {
      s.tensors.push_back(*slots.front());
      s.slots.push_back(std::move(slots));
    }
  // The counts keep parameters and buffers apart in the key; the flags make train() and eval()
  // separate specializations (Dropout and BatchNorm trace differently in each).
  std::vector<const nn::Module*> modules = module.module_pointers();
  s.key += 'M';
  aot_detail::append_u64(s.key, params.slots.size());
  aot_detail::append_u64(s.key, buffers.slots.size());
  aot_detail::append_u64(s.key, modules.size());
  for (const nn::Module* m : modules) s.key += m->is_training() ? '1' : '0';
  return s;
}

void lifted_names(nn::Module& module, std::vector<std::string>& parameters,
                  std::vector<std::string>& buffers) {
  SlotsReadLock read;
  parameters = module.parameter_slots(/*with_names=*/true).names;
  buffers = module.buffer_slots(/*with_names=*/true).names;
}

namespace {

// After a traced forward: slots the forward reassigned (the module attribute now holds another
// tensor than the stand-in swapped in). A buffer's new value is copied into the stand-in, which
// makes it a mutation of the lifted buffer, written back after every call like BatchNorm's
// running statistics; a parameter cannot be written back, so it is an error.
void write_back_reassigned(const std::vector<std::vector<Tensor*>>& slots, size_t num_parameters,
                           const std::vector<std::string>& names,
                           const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < slots.size(); ++i) {
    const Tensor* assigned = nullptr;
    for (Tensor* slot : slots[i])
      if (!slot->is_same(inputs[i])) assigned = slot;
    if (!assigned) continue;
    std::string name = i < names.size() ? "'" + names[i] + "'" : std::to_string(i);
    std::string which = (i < num_parameters ? "parameter " : "buffer ") + name;
    if (i < num_parameters)
      throw std::invalid_argument(
          "aot_module: the forward assigned a new tensor to " + which +
          "; a parameter cannot be replaced inside a compiled forward. Update it in place under "
          "no_grad (or outside the forward) instead.");
    const Tensor& value = *assigned;
    const Tensor& buffer = inputs[i];
    if (!value.defined() || value.dtype() != buffer.dtype() || value.sizes() != buffer.sizes())
      throw std::invalid_argument(
          "aot_module: the forward assigned " +
          (value.defined() ? std::string(dtype_name(value.dtype())) + shape_to_string(value.sizes())
                           : std::string("an undefined tensor")) +
          " to " + which + ", which is " + std::string(dtype_name(buffer.dtype())) +
          shape_to_string(buffer.sizes()) +
          "; a reassigned buffer is written back into the buffer, so keep its dtype and shape.");
    if (value.requires_grad())
      throw std::invalid_argument(
          "aot_module: the forward assigned a tensor that requires grad to " + which +
          "; a reassigned buffer is written back without history. Assign value.detach().");
    NoGradGuard no_grad;
    Tensor(buffer).copy_(value);
  }
}

}  // namespace

std::vector<Tensor> run_with_slots(const std::vector<std::vector<Tensor*>>& slots,
                                   size_t num_parameters, const std::vector<std::string>& names,
                                   const std::vector<Tensor>& inputs,
                                   const std::function<std::vector<Tensor>()>& forward) {
  bool tracing = false;
  for (size_t i = 0; i < slots.size(); ++i) tracing = tracing || inputs.at(i).is_fake();
  if (tracing) {
    SlotsWriteLock write;
    SlotSwap swap(slots, inputs);
    std::vector<Tensor> outs = forward();
    write_back_reassigned(slots, num_parameters, names, inputs);
    return outs;
  }
  SlotsReadLock read;
  aot_detail::EagerOnlyScope eager_only;
  return forward();
}

}  // namespace aotgrad::nn_detail
