// What export refuses, one line each, as PyTorch's export does: a joint export without a scalar
// loss, a second differentiable output, a parameter without a gradient; aot_export_joint_simple
// with an input mutation or an aliased output. Also what aot_export_joint_simple returns.
#include <gtest/gtest.h>

#include "aotgrad/export.h"
#include "export/export_net.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::testing::contains;
using ag::testing::error_of;

namespace {

// One line, naming the mistake.
void expect_one_line(const std::string& message, const std::string& part) {
  EXPECT_TRUE(contains(message, part)) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_LE(message.size(), 300u) << message;
}

// forward(x) -> (loss, x * w): two outputs that require grad, the second not a scalar.
class TwoOutputs : public ag::nn::Module {
 public:
  using ag::nn::Module::forward;  // the one-tensor overload stays callable
  TwoOutputs() {
    w = ag::ones({3}).requires_grad_();
    unused = ag::ones({2}).requires_grad_();
    register_parameter("w", w);
    register_parameter("unused", unused);
  }
  std::vector<ag::Tensor> forward(const ag::Tensor& x, int64_t mode) {
    ag::Tensor y = x * w;
    if (mode == 0) return {y.sum(), y};           // two differentiable outputs
    if (mode == 1) return {y, y.sum().detach()};  // the loss is not a scalar
    return {y.sum(), y.detach()};                 // `unused` gets no gradient
  }
  ag::Tensor w, unused;
};

}  // namespace

TEST(ExportErrors, JointNeedsALossIndex) {
  auto net = ag::testing::make_export_net();
  std::string m = error_of<ag::ExportError>([&] {
    ag::aot_export_module(net, std::tuple{ag::testing::export_net_input()}, {.trace_joint = true});
  });
  expect_one_line(m, "output_loss_index");
}

TEST(ExportErrors, JointRefusesASecondDifferentiableOutput) {
  auto m = std::make_shared<TwoOutputs>();
  std::string e = error_of<ag::ExportError>([&] {
    ag::aot_export_module(m, std::tuple{ag::ones({3}), int64_t{0}},
                          {.trace_joint = true, .output_loss_index = 0});
  });
  expect_one_line(e, "output 1 requires gradients but is not the scalar loss");
}

TEST(ExportErrors, JointRefusesANonScalarLoss) {
  auto m = std::make_shared<TwoOutputs>();
  std::string e = error_of<ag::ExportError>([&] {
    ag::aot_export_module(m, std::tuple{ag::ones({3}), int64_t{1}},
                          {.trace_joint = true, .output_loss_index = 0});
  });
  expect_one_line(e, "must be a scalar, got f32[3]");
}

TEST(ExportErrors, JointRefusesALossIndexPastTheOutputs) {
  auto m = std::make_shared<TwoOutputs>();
  std::string e = error_of<ag::ExportError>([&] {
    ag::aot_export_module(m, std::tuple{ag::ones({3}), int64_t{2}},
                          {.trace_joint = true, .output_loss_index = 5});
  });
  expect_one_line(e, "output_loss_index is 5, but the forward returns 2 outputs");
}

TEST(ExportErrors, JointRefusesAParameterWithoutGradient) {
  auto m = std::make_shared<TwoOutputs>();
  std::string e = error_of<ag::ExportError>([&] {
    ag::aot_export_module(m, std::tuple{ag::ones({3}), int64_t{2}},
                          {.trace_joint = true, .output_loss_index = 0});
  });
  expect_one_line(e, "parameter unused requires grad but receives no gradient");
}

TEST(ExportErrors, JointSimpleRefusesInputMutation) {
  ag::FlatFn fn = [](const std::vector<ag::Tensor>& in) {
    ag::Tensor x = in[0];
    x.mul_(2);
    return std::vector<ag::Tensor>{x * 3};
  };
  std::string e =
      error_of<ag::ExportError>([&] { ag::aot_export_joint_simple(fn, {ag::ones({2})}, false); });
  expect_one_line(e, "aot_export_joint_simple: does not support input mutations: input 0");
}

TEST(ExportErrors, JointSimpleRefusesOutputAliasingAnInput) {
  ag::FlatFn fn = [](const std::vector<ag::Tensor>& in) {
    return std::vector<ag::Tensor>{in[0].reshape({2, 2}), in[0] * 2};
  };
  std::string e = error_of<ag::ExportError>(
      [&] { ag::aot_export_joint_simple(fn, {ag::ones({4}).requires_grad_()}, true); });
  expect_one_line(e, "output 0 aliases an input or another output");
}

TEST(ExportJointSimple, InferenceGraphKeepsTheSignature) {
  ag::FlatFn fn = [](const std::vector<ag::Tensor>& in) {
    return std::vector<ag::Tensor>{(in[0] * in[1]).sum(), in[0] + 1};
  };
  ag::ExportedGraph e =
      ag::aot_export_joint_simple(fn, {ag::ones({3}).requires_grad_(), ag::ones({3})}, false);
  EXPECT_EQ(e.descriptors.inputs.size(), 2u);
  ASSERT_EQ(e.descriptors.outputs.size(), 2u);
  EXPECT_EQ(e.descriptors.outputs[1].to_string(), "output(1)");
  EXPECT_EQ(e.signature.user_inputs.size(), 2u);
  EXPECT_FALSE(e.signature.backward_signature.has_value());
  EXPECT_TRUE(contains(e.graph, "graph inference(")) << e.graph;
}

TEST(ExportJointSimple, JointGraphTakesTangentsAndReturnsGradients) {
  ag::FlatFn fn = [](const std::vector<ag::Tensor>& in) {
    return std::vector<ag::Tensor>{(in[0] * in[1]).sum()};
  };
  ag::ExportedGraph e =
      ag::aot_export_joint_simple(fn, {ag::ones({3}).requires_grad_(), ag::ones({3})}, true);
  ASSERT_EQ(e.descriptors.inputs.size(), 3u);
  EXPECT_EQ(e.descriptors.inputs[2].to_string(), "tangent(output(0))");
  ASSERT_EQ(e.descriptors.outputs.size(), 2u);
  EXPECT_EQ(e.descriptors.outputs[1].to_string(), "grad(input(0))");
  ASSERT_TRUE(e.signature.backward_signature.has_value());
  ASSERT_EQ(e.signature.backward_signature->gradients_to_user_inputs.size(), 1u);
  EXPECT_EQ(e.signature.backward_signature->gradients_to_user_inputs[0].second,
            e.signature.user_inputs[0]);
}

namespace {

// forward(x): mode 0 bumps its parameter in place (allowed eagerly under no_grad, as an optimizer
// does), mode 1 transposes x in place (a metadata mutation), mode 2 returns a view of x.
class Mutator : public ag::nn::Module {
 public:
  using ag::nn::Module::forward;  // the one-tensor overload stays callable
  Mutator() {
    w = ag::ones({2, 2}).requires_grad_();
    register_parameter("w", w);
  }
  std::vector<ag::Tensor> forward(const ag::Tensor& x, int64_t mode) {
    ag::Tensor p = w, in = x;
    if (mode == 0) p.add_(1.0);
    if (mode == 1) ag::t_(in);
    if (mode == 2) return {x.reshape({4}), (x * w).sum()};
    return {(in * w).sum()};
  }
  ag::Tensor w;
};

std::string export_error(int64_t mode) {
  auto m = std::make_shared<Mutator>();
  return error_of<ag::ExportError>([&] {
    ag::aot_export_module(m, std::tuple{ag::ones({2, 2}), mode});
  });
}

}  // namespace

TEST(ExportErrors, ForwardExportRefusesAMutatedParameter) {
  expect_one_line(export_error(0),
                  "aot_export_module: input 0 (param(w)) is mutated; export "
                  "supports mutating buffers and user inputs only");
}

TEST(ExportErrors, ForwardExportRefusesAMetadataMutation) {
  expect_one_line(export_error(1), "input 1 (input(0)) received a metadata mutation");
}

TEST(ExportErrors, ForwardExportRefusesAnOutputAliasingAnInput) {
  expect_one_line(export_error(2), "output 0 aliases an input or another output (alias_of_input)");
}
