// Whole models, as PyTorch users bring them (issue 18): each fixture under
// tests/data/torch_models/ is a raw make_fx training step of a small configuration of a real model
// (tests/data/torch_models/regenerate.sh) — in-place ops, batch norm updating its running
// statistics, parameters and buffers as inputs named by their fully-qualified names. Here each one
// runs through GraphProgram (functionalized on load) with the backward, under both partitioners,
// and every output, parameter gradient and updated buffer is compared with PyTorch's, within the
// fixture's atol / rtol plus kNoiseFactor times that tensor's float32 noise floor (the manifest's
// `noise`, measured by the exporter against a float64 run and 1-ulp nudged inputs).
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/graph_program.h"
#include "torch/torch_fixture.h"

namespace aotgrad::testing::torch {
namespace {

class TorchModel : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(TorchModel, TrainingStepMatchesPyTorch) {
  const auto& [name, partitioner] = GetParam();
  Fixture f = load_fixture(name, model_fixture_root());
  GraphProgram p = GraphProgram::parse(f.graph_text, name);
  // Inputs PyTorch took no gradient for (buffers, integer inputs) do not require grad here either.
  GraphRunOptions options{.backward = true, .partitioner = partitioner};
  std::vector<bool> has_grad(f.inputs.size(), false);
  for (const auto& [i, g] : f.grads) has_grad[i] = true;
  for (size_t i = 0; i < f.inputs.size(); ++i)
    if (!has_grad[i]) options.no_grad.push_back(i);
  GraphRunResult r = p.run(f.inputs, options, f.tangents);

  ASSERT_EQ(r.outputs.size(), f.outputs.size());
  for (size_t i = 0; i < r.outputs.size(); ++i)
    EXPECT_TRUE(close_to_torch(r.outputs[i], f.outputs[i], f.rtol,
                               f.atol_for("output" + std::to_string(i) + ".npy"),
                               name + " output " + std::to_string(i)));
  for (const auto& [i, expected] : f.grads) {
    const std::string what = name + " (" + partitioner + ") gradient of %" + p.inputs()[i].name;
    const Tensor ours = r.grads.at(i).defined() ? r.grads[i] : zeros_like(expected);
    EXPECT_TRUE(close_to_torch(ours, expected, f.rtol,
                               f.atol_for("grad" + std::to_string(i) + ".npy"), what));
  }
  // Exactly the buffers PyTorch's step wrote are reported mutated, with PyTorch's new values.
  std::vector<bool> written(f.inputs.size(), false);
  for (const auto& [i, expected] : f.mutated) {
    written[i] = true;
    ASSERT_TRUE(r.mutated.at(i).defined())
        << name << ": %" << p.inputs()[i].name << " was not reported mutated";
    EXPECT_TRUE(close_to_torch(r.mutated[i], expected, f.rtol,
                               f.atol_for("mutated" + std::to_string(i) + ".npy"),
                               name + " new value of %" + p.inputs()[i].name));
  }
  // Any other input we report written must hold its old value (a write PyTorch's step made
  // without changing it).
  for (size_t i = 0; i < r.mutated.size(); ++i) {
    if (!r.mutated[i].defined() || written[i]) continue;
    EXPECT_TRUE(close_to_torch(r.mutated[i], f.inputs[i], 0, 0,
                               name + " %" + p.inputs()[i].name + " (PyTorch left it unchanged)"));
  }
}

std::vector<std::tuple<std::string, std::string>> model_cases() {
  std::vector<std::tuple<std::string, std::string>> out;
  for (const std::string& n : fixture_names(model_fixture_root()))
    for (const char* p : {"default", "min_cut"}) out.emplace_back(n, p);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Models, TorchModel, ::testing::ValuesIn(model_cases()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace aotgrad::testing::torch
