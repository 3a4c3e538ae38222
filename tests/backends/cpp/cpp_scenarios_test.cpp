// A CI-sized subset of the scenario suites under the cpp backend (the whole suites run under it
// with AOTGRAD_TEST_COMPILER=cpp): functions whose graphs mix fused kernels, reductions, views,
// input mutations and extern calls, compared with eager by the scenario harness (outputs, aliasing,
// mutations, gradients) for every partitioner.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "testing/scenario.h"

namespace {

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::leaf;
using ag::testing::run_scenario;
using ag::testing::ScenarioInputs;
using ag::testing::TensorList;

// Runs the scenarios of one test under the cpp backend, restoring the environment afterwards.
class CppScenarios : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("AOTGRAD_TEST_COMPILER");
    had_ = old != nullptr;
    if (old) saved_ = old;
    setenv("AOTGRAD_TEST_COMPILER", "cpp", 1);
  }
  void TearDown() override {
    if (had_)
      setenv("AOTGRAD_TEST_COMPILER", saved_.c_str(), 1);
    else
      unsetenv("AOTGRAD_TEST_COMPILER");
  }

 private:
  bool had_ = false;
  std::string saved_;
};

TEST_F(CppScenarios, LinearGeluSoftmaxAndARowSum) {
  run_scenario(
      [] {
        return TensorList{leaf({6, 5}, 1), leaf({4, 5}, 2), leaf({4}, 3)};
      },
      [](const TensorList& a) {
        Tensor h = ag::gelu(ag::linear(a[0], a[1], a[2]));
        Tensor p = ag::softmax(h * 0.5, -1);
        return TensorList{p, ag::sum(ag::tanh(h) * p, {-1}, true)};
      });
}

TEST_F(CppScenarios, MutatedInputAndAViewOutput) {
  run_scenario(
      [] {
        Tensor base = leaf({4, 3}, 4, false);
        return ScenarioInputs{{base, leaf({3}, 5)}, {base}};
      },
      [](const TensorList& a) {
        Tensor x = a[0];
        x.mul_(2.0);
        Tensor y = ag::relu(x + a[1]);
        return TensorList{y.t(), ag::sigmoid(y) * a[1]};
      });
}

TEST_F(CppScenarios, TransposedAndBroadcastInputs) {
  run_scenario(
      [] {
        return TensorList{leaf({5, 4}, 6).t(), leaf({4, 1}, 7), leaf({}, 8)};
      },
      [](const TensorList& a) {
        Tensor d = (a[0] - a[1]) * a[2];
        return TensorList{ag::where(d.gt(0.0), ag::exp(d), ag::log_softmax(d, 1)),
                          ag::mean(d * d, {1})};
      });
}

}  // namespace
