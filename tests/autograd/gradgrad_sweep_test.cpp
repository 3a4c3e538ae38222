// gradgradcheck over the op table: every aten row with a VJP is called on small f64 inputs built
// from its schema (or on a hand-written sample where the schema alone cannot say what is valid:
// index tensors, convolution shapes), and its second derivatives are checked by finite
// differences. A row whose backward is not differentiable must say so with one clear line
// ("... backward is not differentiable ...") when differentiated twice, never give zero.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/gradgradcheck.h"
#include "testing/op_samples.h"

namespace ag = aotgrad;
using ag::Tensor;
namespace ops = ag::ops;

namespace {

using namespace ag::testing::op_samples;

struct SweepResult {
  std::vector<std::string> checked, refused, unsampled, failed;
};

// gradgradcheck of output 0 of `op` called as `sample`, the checked tensors substituted.
void check_row(const ops::OpDef& op, Sample sample, SweepResult& r) {
  const std::string name(op.name);
  auto fn = [&](const std::vector<Tensor>& in) {
    ops::OpArgs args = sample.args;
    size_t k = 0;
    for (ops::Arg& a : args) {
      if (auto* t = std::get_if<Tensor>(&a); t && k < in.size() && t->is_same(sample.inputs[k]))
        *t = in[k++];
      else if (auto* l = std::get_if<ops::TensorList>(&a))
        for (Tensor& e : *l)
          if (k < in.size() && e.is_same(sample.inputs[k])) e = in[k++];
    }
    std::vector<Tensor> out = ops::dispatch(op, args);
    return sample.pick ? sample.pick(out) : out.at(0);
  };
  try {
    ::testing::AssertionResult ok = ag::testing::gradgradcheck(fn, sample.inputs);
    if (ok)
      r.checked.push_back(name);
    else
      r.failed.push_back(name + ": " + ok.message());
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (msg.find("backward is not differentiable") != std::string::npos)
      r.refused.push_back(name);
    else
      r.failed.push_back(name + " threw: " + msg);
  }
}

}  // namespace

TEST(GradGradSweep, EveryDifferentiableRowHasCorrectSecondDerivativesOrSaysItHasNone) {
  SweepResult r;
  auto hand = hand_written();
  for (const ops::OpDef* op : ops::all_ops()) {
    if (!op->vjp || op->is_inplace() || op->name.rfind("aten.", 0) != 0 ||
        op->recompute == ops::Recompute::random || op->recompute == ops::Recompute::effectful)
      continue;
    std::optional<Sample> sample;
    if (auto it = hand.find(std::string(op->name)); it != hand.end()) sample = it->second();
    for (const ag::IntList& shape : {ag::IntList{2, 2}, ag::IntList{2, 2, 2}, ag::IntList{2}})
      if (!sample) sample = generic_sample(*op, shape);
    if (!sample || sample->inputs.empty()) {
      r.unsampled.push_back(std::string(op->schema));
      continue;
    }
    check_row(*op, std::move(*sample), r);
  }
  EXPECT_TRUE(r.failed.empty()) << r.failed.size()
                                << " rows with wrong second derivatives:" << join(r.failed);
  EXPECT_GE(r.checked.size(), 125u) << "checked:" << join(r.checked);
  std::cout << "gradgradcheck: " << r.checked.size() << " rows checked, " << r.refused.size()
            << " refused:" << join(r.refused) << "\nno sample (" << r.unsampled.size()
            << "):" << join(r.unsampled) << "\n";
}
