// Checkpoints: torch::save / torch::load for a tensor, a list of tensors, a module and an
// optimizer. Each is one safetensors file (safetensors.h): the tensors, plus "__metadata__"
// strings for what is not a tensor (which kind of checkpoint it is, optimizer options and step
// counters, written so that they read back bit for bit).
//
//   torch::save(model, "model.pt");       torch::load(model, "model.pt");
//   torch::save(optimizer, "optim.pt");   torch::load(optimizer, "optim.pt");
//
// What each file holds:
//  - a Tensor: one tensor named "tensor"; a std::vector<Tensor>: tensors "0", "1", ...
//  - a Module: every parameter and buffer under its fully-qualified name ("fc1.weight"), so a
//    file PyTorch writes with safetensors.torch.save_file(model.state_dict(), ...) loads too;
//  - an Optimizer: its type, each param group's size and options, and the state of each
//    parameter by position ("state.G.J.exp_avg" for parameter J of group G).
//
// Loading checks the whole file against the target first and changes nothing when anything is
// wrong: a missing, truncated or malformed file, another kind of checkpoint, a missing or
// unexpected entry, or a shape or dtype that differs throws std::invalid_argument, one line
// "checkpoint 'PATH': ..." naming the first entry at fault (with expected and found shape and
// dtype). Module and optimizer loads copy the values into the existing tensors in place (their
// identity and requires_grad stay, so an optimizer built over the module keeps working); a
// Tensor or vector is replaced by fresh tensors. Writing replaces the file whole or not at all.
//
// Thread-safety: each call reads or writes its own file; don't save or load an object while
// another thread uses it.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "aotgrad/nn/module.h"
#include "aotgrad/optim/optimizer.h"
#include "aotgrad/tensor.h"

namespace aotgrad {

void save(const Tensor& tensor, const std::string& path);
void save(const std::vector<Tensor>& tensors, const std::string& path);
void save(const nn::Module& module, const std::string& path);
void save(const optim::Optimizer& optimizer, const std::string& path);

void load(Tensor& tensor, const std::string& path);
void load(std::vector<Tensor>& tensors, const std::string& path);
void load(nn::Module& module, const std::string& path);
void load(optim::Optimizer& optimizer, const std::string& path);

// Anything that points at a module with `->` (std::shared_ptr<Net>, a TORCH_MODULE holder).
template <typename H>
concept ModuleHandle = requires(const H& h) {
  h.operator->();
}
&&std::is_base_of_v<
    nn::Module,
    std::remove_cv_t<std::remove_pointer_t<decltype(std::declval<const H&>().operator->())>>>;

template <ModuleHandle H>
void save(const H& module, const std::string& path) {
  save(static_cast<const nn::Module&>(*module.operator->()), path);
}

template <ModuleHandle H>
void load(H& module, const std::string& path) {
  load(static_cast<nn::Module&>(*module.operator->()), path);
}

}  // namespace aotgrad
