// Graphs that mutate, as make_fx records training steps (issue 18.1): GraphProgram and the CLI
// functionalize them by tracing the graph as a function, so they run under both partitioners and
// agree with the same step written with aotgrad's eager ops — outputs, gradients, and the new
// values of the inputs the graph writes (returned, the caller's tensors untouched).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "aotgrad/aotgrad.h"
#include "aotgrad/graph_program.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;
using ag::testing::allclose;

namespace {

std::string cli_data(const std::string& name) {
  return std::string(AOTGRAD_TEST_DATA) + "/cli/" + name;
}

ag::Tensor input(const ag::IntList& sizes, uint64_t seed) {
  return ag::testing::test_input(sizes, -1.0, 1.0, seed, false).to(ag::DType::f32);
}

std::vector<ag::Tensor> step_inputs() {
  return {input({4, 3}, 1),
          input({2, 4}, 2),
          ag::scalar_tensor(5, ag::DType::i64),
          input({3}, 3).add(1.0),
          input({3}, 4),
          input({3}, 5),
          ag::abs(input({3}, 6)).add(0.5)};
}

struct EagerStep {
  std::vector<ag::Tensor> in;  // leaves, and the buffers the step updates
  ag::Tensor t, r;
};

// The graph above written with eager ops, on copies of the inputs.
EagerStep eager_step(const std::vector<ag::Tensor>& inputs) {
  EagerStep e;
  for (const ag::Tensor& t : inputs) e.in.push_back(t.clone());
  for (size_t i : {0, 1, 3, 4}) e.in[i].requires_grad_();
  ag::Tensor h = ag::mm(e.in[1], e.in[0]);
  ag::relu_(h);
  ag::Tensor h2 = ag::mul(h, 1.5);
  ag::Tensor row = h2.select(0, 1);
  ag::mul_(row, 2.0);
  {
    ag::NoGradGuard no_grad;
    ag::add_(e.in[2], 1);
  }
  ag::Tensor y = ag::batch_norm(h2, e.in[3], e.in[4], e.in[5], e.in[6], true, 0.1, 1e-5);
  ag::tanh_(y);
  e.t = y;
  e.r = h;
  return e;
}

TEST(FunctionalizeOnLoad, InPlaceAddOfAnInputRunsAndReportsTheMutation) {
  ag::GraphProgram p = ag::GraphProgram::load(cli_data("inplace.graph"));
  ag::Tensor x = input({3}, 1), y = input({3}, 2);
  ag::Tensor x_before = x.clone();
  ag::GraphRunResult r = p.run({x, y});
  EXPECT_TRUE(allclose(r.outputs[0], ag::add(x_before, y), 0, 0));
  ASSERT_EQ(r.mutated.size(), 2u);
  ASSERT_TRUE(r.mutated[0].defined());
  EXPECT_TRUE(allclose(r.mutated[0], ag::add(x_before, y), 0, 0));
  EXPECT_FALSE(r.mutated[1].defined());
  EXPECT_TRUE(allclose(x, x_before, 0, 0));  // the caller's tensor is untouched
}

TEST(FunctionalizeOnLoad, TrainingStepMatchesEagerUnderEveryPartitioner) {
  std::vector<ag::Tensor> in = step_inputs();
  ag::GraphProgram p = ag::GraphProgram::load(cli_data("step_mutating.graph"));
  for (auto [name, budget] : {std::pair{"default", 1.0}, {"min_cut", 1.0}, {"min_cut", 0.0}}) {
    SCOPED_TRACE(std::string(name) + " budget " + std::to_string(budget));
    EagerStep e = eager_step(in);
    ag::Tensor g_t = input({2, 3}, 9), g_r = input({2, 3}, 10);
    ag::autograd::backward({e.t, e.r}, {g_t, g_r});
    ag::GraphRunResult r =
        p.run(in, {.backward = true, .partitioner = name, .activation_memory_budget = budget},
              {g_t, g_r});
    EXPECT_TRUE(allclose(r.outputs[0], e.t, 1e-5, 1e-5));
    EXPECT_TRUE(allclose(r.outputs[1], e.r, 1e-6, 1e-6));
    for (size_t i : {0, 1, 3, 4}) {
      ASSERT_TRUE(r.grads[i].defined()) << "input " << i;
      EXPECT_TRUE(allclose(r.grads[i], e.in[i].grad(), 1e-5, 1e-5)) << "input " << i;
    }
    // The buffers the step writes: new values returned, no gradient, caller's copies untouched.
    for (size_t i : {2, 5, 6}) {
      EXPECT_FALSE(r.grads[i].defined()) << "input " << i;
      ASSERT_TRUE(r.mutated[i].defined()) << "input " << i;
      EXPECT_TRUE(allclose(r.mutated[i].to(ag::DType::f64), e.in[i].to(ag::DType::f64), 1e-6, 1e-6))
          << "input " << i;
    }
    EXPECT_EQ(in[2].item<int64_t>(), 5);
    for (size_t i : {0, 1, 3, 4}) EXPECT_FALSE(r.mutated[i].defined()) << "input " << i;
  }
}

TEST(FunctionalizeOnLoad, ForwardOnlyRunAndShow) {
  std::vector<ag::Tensor> in = step_inputs();
  ag::GraphProgram p = ag::GraphProgram::load(cli_data("step_mutating.graph"));
  EagerStep e = eager_step(in);
  ag::GraphRunResult r = p.run(in);
  EXPECT_TRUE(allclose(r.outputs[0], e.t.detach(), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(r.mutated[5], e.in[5], 1e-6, 1e-6));
  std::string shown = p.show({.backward = true});
  std::string text = shown.substr(shown.find("# joint graph"));
  // The graphs shown are functional: no in-place node survives.
  for (const char* op : {"relu_", "mul_", "tanh_", "add_"})
    EXPECT_EQ(text.find(std::string("aten.") + op + "."), std::string::npos) << op << "\n" << text;
}

TEST(FunctionalizeOnLoad, CliWritesMutatedInputs) {
  fs::path dir = fs::temp_directory_path() / ("aotgrad_fl_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<ag::Tensor> in = step_inputs();
  std::string args;
  for (size_t i = 0; i < in.size(); ++i) {
    std::string f = (dir / ("in" + std::to_string(i) + ".npy")).string();
    ag::write_npy(f, in[i]);
    args += " " + f;
  }
  std::string cmd = std::string(AOTGRAD_CLI_PATH) + " run " + cli_data("step_mutating.graph") +
                    " --inputs" + args + " --backward --out " + (dir / "out").string() + " >" +
                    (dir / "stdout").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::stringstream said;
  said << std::ifstream(dir / "stdout").rdbuf();
  EXPECT_NE(said.str().find("mutated inputs: 2 (%count), 5 (%mean), 6 (%var)"), std::string::npos)
      << said.str();
  EagerStep e = eager_step(in);
  EXPECT_EQ(ag::read_npy((dir / "out" / "mutated2.npy").string()).item<int64_t>(), 6);
  EXPECT_TRUE(allclose(ag::read_npy((dir / "out" / "mutated5.npy").string()), e.in[5], 1e-6, 1e-6));
  EXPECT_FALSE(fs::exists(dir / "out" / "mutated0.npy"));
  fs::remove_all(dir);
}

}  // namespace
