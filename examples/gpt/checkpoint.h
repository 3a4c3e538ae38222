// aotgrad-gpt checkpoints: a safetensors file holding the model's parameters under their module
// names (as a PyTorch state_dict would name them), AdamW's moments under
// "optimizer.<name>.exp_avg" / ".exp_avg_sq", the vocabulary as the i64 tensor "vocab" (its byte
// values: metadata strings must be UTF-8, a vocabulary need not be), and in "__metadata__" the
// model's sizes and the step reached.
#pragma once

#include <cstdint>
#include <string>

#include "aotgrad/aotgrad.h"
#include "model.h"

namespace gpt {

struct Checkpoint {
  GptConfig config;
  std::string vocab;
  int64_t step = 0;  // optimizer steps taken
  aotgrad::SafetensorsContents contents;
};

void save_checkpoint(const std::string& path, Gpt& model, const aotgrad::optim::AdamW& opt,
                     const std::string& vocab, int64_t step);

// Reads the file and its metadata; throws FileError naming the file for anything unreadable or
// not written by save_checkpoint.
Checkpoint read_checkpoint(const std::string& path);

// Copies the checkpoint's parameters into `model` and its moments into `opt` (both built from
// checkpoint.config); throws FileError naming the file and the tensor that is missing or has
// another shape.
void restore(const Checkpoint& checkpoint, const std::string& path, Gpt& model,
             aotgrad::optim::AdamW& opt);

}  // namespace gpt
