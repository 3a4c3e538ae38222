// GraphProgram (the library side of the `aotgrad` program) against eager autograd, and the real
// `aotgrad` binary run through std::system on the graph files under tests/data/cli/.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "aotgrad/aotgrad.h"
#include "aotgrad/graph_program.h"
#include "cli_args.h"
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

// mlp.graph's inputs: x [4,3], w [3,2], b [2], idx (i64, passed through).
std::vector<ag::Tensor> mlp_inputs() {
  return {input({4, 3}, 1), input({3, 2}, 2), input({2}, 3),
          ag::from_vector(std::vector<int64_t>{3, 1, 0, 2}, {4})};
}

struct EagerMlp {
  ag::Tensor x, w, b, loss, t;
};

// mlp.graph written with the eager API, inputs requiring grad.
EagerMlp eager_mlp(const std::vector<ag::Tensor>& in) {
  EagerMlp e{in[0].detach().requires_grad_(),
             in[1].detach().requires_grad_(),
             in[2].detach().requires_grad_(),
             {},
             {}};
  e.t = ag::tanh(ag::add(ag::mm(e.x, e.w), e.b));
  e.loss = ag::sum(e.t);
  return e;
}

int exit_status(int system_result) {
  return WIFEXITED(system_result) ? WEXITSTATUS(system_result) : -1;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("aotgrad_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::vector<ag::Tensor> in = mlp_inputs();
    const char* names[] = {"x.npy", "w.npy", "b.npy", "idx.npy"};
    for (size_t i = 0; i < in.size(); ++i) ag::write_npy((dir_ / names[i]).string(), in[i]);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `aotgrad ARGS` with stdout and stderr captured; returns the exit status.
  int cli(const std::string& args) {
    std::string cmd = std::string(AOTGRAD_CLI_PATH) + " " + args + " >" +
                      (dir_ / "stdout").string() + " 2>" + (dir_ / "stderr").string();
    return exit_status(std::system(cmd.c_str()));
  }
  std::string out() const { return read_text(dir_ / "stdout"); }
  std::string err() const { return read_text(dir_ / "stderr"); }
  std::string f(const std::string& name) const { return (dir_ / name).string(); }
  std::string mlp_inputs_arg() const {
    return "--inputs " + f("x.npy") + " " + f("w.npy") + " " + f("b.npy") + " " + f("idx.npy");
  }

  fs::path dir_;
};

}  // namespace

TEST(CliProgram, RunsForwardLikeEager) {
  ag::GraphProgram p = ag::GraphProgram::load(cli_data("mlp.graph"));
  ASSERT_EQ(p.inputs().size(), 4u);
  EXPECT_EQ(p.inputs()[3].name, "idx");
  EXPECT_EQ(p.num_outputs(), 3u);
  std::vector<ag::Tensor> in = mlp_inputs();
  ag::GraphRunResult r = p.run(in);
  EagerMlp e = eager_mlp(in);
  ASSERT_EQ(r.outputs.size(), 3u);
  EXPECT_TRUE(allclose(r.outputs[0], e.loss, 1e-5, 1e-5));
  EXPECT_TRUE(allclose(r.outputs[1], e.t, 1e-6, 1e-5));
  EXPECT_EQ(r.outputs[2].to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 0, 2}));
  EXPECT_TRUE(r.grads.empty());
}

TEST(CliProgram, BackwardMatchesEagerAutogradUnderEveryPartitioner) {
  std::vector<ag::Tensor> in = mlp_inputs();
  EagerMlp e = eager_mlp(in);
  // Default tangents are ones for both outputs that require grad (loss and t).
  ag::add(e.loss, ag::sum(e.t)).backward();
  ag::GraphProgram p = ag::GraphProgram::load(cli_data("mlp.graph"));
  for (auto [name, budget] : {std::pair{"default", 1.0}, {"min_cut", 1.0}, {"min_cut", 0.0}}) {
    SCOPED_TRACE(std::string(name) + " budget " + std::to_string(budget));
    ag::GraphRunResult r =
        p.run(in, {.backward = true, .partitioner = name, .activation_memory_budget = budget});
    ASSERT_EQ(r.grads.size(), 4u);
    EXPECT_TRUE(allclose(r.outputs[0], e.loss, 1e-5, 1e-5));
    EXPECT_TRUE(allclose(r.grads[0], e.x.grad(), 1e-5, 1e-5));
    EXPECT_TRUE(allclose(r.grads[1], e.w.grad(), 1e-5, 1e-5));
    EXPECT_TRUE(allclose(r.grads[2], e.b.grad(), 1e-5, 1e-5));
    EXPECT_FALSE(r.grads[3].defined());  // i64 input: never requires grad
  }
}

TEST(CliProgram, GivenTangentsAndNoGrad) {
  std::vector<ag::Tensor> in = mlp_inputs();
  ag::Tensor g_loss = ag::scalar_tensor(2.0, ag::DType::f32), g_t = input({4, 2}, 7);
  EagerMlp e = eager_mlp(in);
  ag::add(ag::mul(e.loss, g_loss), ag::sum(ag::mul(e.t, g_t))).backward();
  ag::GraphProgram p = ag::GraphProgram::load(cli_data("mlp.graph"));

  // One tangent per output that requires grad, or one per output (the i64 one is ignored).
  ag::GraphRunResult a = p.run(in, {.backward = true, .no_grad = {1}}, {g_loss, g_t});
  ag::GraphRunResult b = p.run(in, {.backward = true}, {g_loss, g_t, in[3]});
  EXPECT_TRUE(allclose(a.grads[0], e.x.grad(), 1e-5, 1e-5));
  EXPECT_FALSE(a.grads[1].defined());  // excluded by no_grad
  EXPECT_TRUE(allclose(a.grads[2], e.b.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(b.grads[1], e.w.grad(), 1e-5, 1e-5));

  try {
    p.run(in, {.backward = true}, {g_t, g_loss});
    FAIL() << "swapped tangents were accepted";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what())
                  .find("tangent 0 (for output 0, %loss): expected f32[], got f32[4, 2]"),
              std::string::npos)
        << err.what();
  }
}

TEST(CliProgram, MultiResultOpBackwardMatchesEager) {
  ag::Tensor x = input({2, 4}, 11), w = input({4}, 12), b = input({4}, 13);
  ag::GraphProgram p = ag::GraphProgram::load(cli_data("layer_norm.graph"));
  ag::GraphRunResult r = p.run({x, w, b}, {.backward = true, .partitioner = "min_cut"});
  ag::Tensor ex = x.detach().requires_grad_(), ew = w.detach().requires_grad_(),
             eb = b.detach().requires_grad_();
  ag::Tensor y = std::get<0>(ag::native_layer_norm(ex, {4}, ew, eb, 1e-5));
  ag::Tensor loss = ag::sum(ag::mul(y, y));
  loss.backward();
  EXPECT_TRUE(allclose(r.outputs[0], loss, 1e-5, 1e-5));
  EXPECT_TRUE(allclose(r.grads[0], ex.grad(), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(r.grads[1], ew.grad(), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(r.grads[2], eb.grad(), 1e-4, 1e-4));
}

TEST(CliProgram, HalfPrecisionBackward) {
  ag::Tensor x = ag::from_vector(std::vector<float>{1, 2, -3}, {3}).to(ag::DType::f16);
  ag::Tensor y = ag::from_vector(std::vector<float>{0.5, 4, 2}, {3}).to(ag::DType::f16);
  ag::GraphRunResult r =
      ag::GraphProgram::load(cli_data("half.graph")).run({x, y}, {.backward = true});
  EXPECT_EQ(r.outputs[0].dtype(), ag::DType::f16);
  EXPECT_EQ(r.outputs[0].to_vector<float>(), (std::vector<float>{0.5, 8, -6}));
  EXPECT_EQ(r.grads[0].dtype(), ag::DType::f16);
  EXPECT_EQ(r.grads[0].to_vector<float>(), (std::vector<float>{0.5, 4, 2}));
  EXPECT_EQ(r.grads[1].to_vector<float>(), (std::vector<float>{1, 2, -3}));
}

TEST(CliProgram, ShowPrintsTheGraphsAndTheSavedReport) {
  ag::GraphProgram p = ag::GraphProgram::load(cli_data("mlp.graph"));
  std::string fwd = p.show();
  EXPECT_NE(fwd.find("%t: f32[4,2] = aten.tanh.default(%h)"), std::string::npos) << fwd;
  EXPECT_EQ(fwd.find("# joint graph"), std::string::npos);

  std::string s = p.show({.backward = true, .partitioner = "min_cut"});
  for (const char* part :
       {"# inputs that require grad: 0 (%x), 1 (%w), 2 (%b)\n", "# joint graph\ngraph joint(",
        "# forward graph (partitioner min_cut", "# backward graph\ngraph backward(",
        "# saved values\n", "  %t: f32[4, 2]  32 B  from aten.tanh.default",
        "saved 3 values, 104 B (32 B activations, 72 B graph inputs)"})
    EXPECT_NE(s.find(part), std::string::npos) << "missing: " << part << "\n" << s;
}

TEST(CliProgram, ParseErrorsNameLineAndColumn) {
  try {
    ag::GraphProgram::load(cli_data("bad_syntax.graph"));
    FAIL() << "an unknown op was accepted";
  } catch (const ag::GraphParseError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.column(), 18);
    EXPECT_EQ(std::string(e.what()),
              cli_data("bad_syntax.graph") + ":3:18: unknown op 'aten.no_such_op.default'");
  }
  try {
    ag::GraphProgram::parse("graph g(%x: f32[2]) {\n  return (%y)\n}\n", "inline.graph");
    FAIL() << "an unknown value was accepted";
  } catch (const ag::GraphParseError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("inline.graph:2:", 0), 0u) << e.what();
  }
}

TEST(CliProgram, RejectsGraphsItCannotRun) {
  EXPECT_THROW(ag::GraphProgram::load(cli_data("bad_shape.graph")), std::invalid_argument);
  EXPECT_THROW(ag::GraphProgram::load(cli_data("no_such_file.graph")), std::invalid_argument);
}

TEST(CliProgram, WrongInputsNameTheInput) {
  ag::GraphProgram p = ag::GraphProgram::load(cli_data("mlp.graph"));
  std::vector<ag::Tensor> in = mlp_inputs();
  in[1] = input({2, 3}, 2);
  try {
    p.run(in);
    FAIL() << "a wrong shape was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input 1 (%w): expected f32[3, 2], got f32[2, 3]"),
              std::string::npos)
        << e.what();
  }
  in[1] = input({3, 2}, 2).to(ag::DType::f64);
  EXPECT_THROW(p.run(in), std::invalid_argument);
  in.pop_back();
  EXPECT_THROW(p.run(in), std::invalid_argument);
}

TEST_F(CliBinary, RunWritesOutputsAndGradients) {
  ASSERT_EQ(cli("run " + cli_data("mlp.graph") + " " + mlp_inputs_arg() +
                " --backward --partition min_cut --out " + f("out")),
            0)
      << err();
  std::vector<ag::Tensor> in = mlp_inputs();
  EagerMlp e = eager_mlp(in);
  ag::add(e.loss, ag::sum(e.t)).backward();
  EXPECT_TRUE(allclose(ag::read_npy(f("out/out0.npy")), e.loss, 1e-5, 1e-5));
  EXPECT_TRUE(allclose(ag::read_npy(f("out/out1.npy")), e.t, 1e-6, 1e-5));
  EXPECT_EQ(ag::read_npy(f("out/out2.npy")).to_vector<int64_t>(),
            (std::vector<int64_t>{3, 1, 0, 2}));
  EXPECT_TRUE(allclose(ag::read_npy(f("out/grad0.npy")), e.x.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(ag::read_npy(f("out/grad1.npy")), e.w.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(ag::read_npy(f("out/grad2.npy")), e.b.grad(), 1e-5, 1e-5));
  EXPECT_FALSE(fs::exists(f("out/grad3.npy")));
}

TEST_F(CliBinary, RunForwardOnlyAndWithTangents) {
  ASSERT_EQ(cli("run " + cli_data("mlp.graph") + " " + mlp_inputs_arg() + " --out " + f("fw")), 0)
      << err();
  EXPECT_TRUE(fs::exists(f("fw/out1.npy")));
  EXPECT_FALSE(fs::exists(f("fw/grad0.npy")));

  ag::write_npy(f("g0.npy"), ag::scalar_tensor(0.0, ag::DType::f32));
  ag::write_npy(f("g1.npy"), ag::ones({4, 2}));
  ASSERT_EQ(
      cli("run " + cli_data("mlp.graph") + " " + mlp_inputs_arg() + " --backward --tangents " +
          f("g0.npy") + " " + f("g1.npy") + " --no-grad 0,2 --out " + f("bw")),
      0)
      << err();
  EagerMlp e = eager_mlp(mlp_inputs());
  ag::sum(e.t).backward();
  EXPECT_FALSE(fs::exists(f("bw/grad0.npy")));
  EXPECT_FALSE(fs::exists(f("bw/grad2.npy")));
  EXPECT_TRUE(allclose(ag::read_npy(f("bw/grad1.npy")), e.w.grad(), 1e-5, 1e-5));
}

TEST_F(CliBinary, ShowPrintsTheSavedReport) {
  ASSERT_EQ(
      cli("show " + cli_data("mlp.graph") + " --backward --partition min_cut --memory-budget 0.5"),
      0)
      << err();
  EXPECT_NE(out().find("# saved values\n"), std::string::npos) << out();
  EXPECT_NE(out().find("activation_memory_budget 0.5"), std::string::npos) << out();
  EXPECT_NE(out().find("graph backward("), std::string::npos) << out();
}

TEST_F(CliBinary, ExitCodesAndMessages) {
  EXPECT_EQ(cli("--help"), 0);
  EXPECT_NE(out().find("aotgrad run GRAPH"), std::string::npos);

  EXPECT_EQ(cli("run " + cli_data("mlp.graph") + " --frobnicate"), 2);
  EXPECT_EQ(err(),
            "aotgrad: unknown flag '--frobnicate' for 'run' (aotgrad --help shows the "
            "usage)\n");
  EXPECT_EQ(cli("launch " + cli_data("mlp.graph")), 2);
  EXPECT_EQ(cli("show " + cli_data("mlp.graph") + " --backward --memory-budget 1.5"), 2);
  EXPECT_EQ(cli("run " + cli_data("mlp.graph") + " " + mlp_inputs_arg()), 2);  // no --out

  EXPECT_EQ(cli("show " + cli_data("bad_syntax.graph")), 1);
  EXPECT_EQ(err(), cli_data("bad_syntax.graph") + ":3:18: unknown op 'aten.no_such_op.default'\n");

  // Wrong shape: the message names the file and its position.
  EXPECT_EQ(cli("run " + cli_data("mlp.graph") + " --inputs " + f("x.npy") + " " + f("x.npy") +
                " " + f("b.npy") + " " + f("idx.npy") + " --out " + f("o")),
            1);
  EXPECT_NE(err().find(f("x.npy") +
                       " (--inputs position 1): input 1 (%w): expected f32[3, 2], got f32[4, 3]"),
            std::string::npos)
      << err();
  // Wrong count.
  EXPECT_EQ(cli("run " + cli_data("mlp.graph") + " --inputs " + f("x.npy") + " --out " + f("o")),
            1);
  EXPECT_NE(err().find("mlp.graph takes 4 inputs"), std::string::npos) << err();
  // Malformed input file.
  EXPECT_EQ(cli("run " + cli_data("mlp.graph") + " --inputs " + cli_data("mlp.graph") + " " +
                f("w.npy") + " " + f("b.npy") + " " + f("idx.npy") + " --out " + f("o")),
            1);
  EXPECT_NE(err().find("bad magic"), std::string::npos) << err();
  // Unknown partitioner.
  EXPECT_EQ(cli("show " + cli_data("mlp.graph") + " --backward --partition greedy"), 1);
  EXPECT_NE(err().find("unknown partitioner 'greedy'"), std::string::npos) << err();
}

TEST_F(CliBinary, MatchesPyTorchOnARecordedGraph) {
  // Recorded by tools/export_torch_graph.py from PyTorch's make_fx: graph, inputs, the output
  // tangent, and PyTorch's outputs and input gradients.
  std::string d = std::string(AOTGRAD_TEST_DATA) + "/torch/linear_addmm/";
  ASSERT_EQ(cli("run " + d + "graph.txt --inputs " + d + "input0.npy " + d + "input1.npy " + d +
                "input2.npy --backward --tangents " + d + "tangent0.npy --out " + f("o")),
            0)
      << err();
  EXPECT_TRUE(allclose(ag::read_npy(f("o/out0.npy")), ag::read_npy(d + "output0.npy"), 1e-6, 1e-5));
  for (const char* g : {"grad0.npy", "grad1.npy", "grad2.npy"})
    EXPECT_TRUE(allclose(ag::read_npy(f("o/") + g), ag::read_npy(d + g), 1e-6, 1e-5)) << g;
}

// Issue 15.3: --version, per-command help, show --dot.
TEST_F(CliBinary, VersionHelpPerCommandAndDot) {
  ASSERT_EQ(cli("--version"), 0);
  EXPECT_EQ(out(), std::string("aotgrad ") + AOTGRAD_VERSION + "\n");
  ASSERT_EQ(cli("run --help"), 0);
  EXPECT_EQ(out(), ag::cli::kRunUsage);
  ASSERT_EQ(cli("show -h"), 0);
  EXPECT_EQ(out(), ag::cli::kShowUsage);
  ASSERT_EQ(cli("--help"), 0);
  EXPECT_EQ(out(), ag::cli::kUsage);
  EXPECT_EQ(cli("--version extra"), 2);
  EXPECT_NE(err().find("--version takes no arguments"), std::string::npos) << err();
  EXPECT_EQ(cli("run " + cli_data("mlp.graph") + " --dot --out x"), 2);  // show only

  ASSERT_EQ(cli("show " + cli_data("mlp.graph") + " --dot --backward"), 0) << err();
  const std::string dot = out();
  // Three digraphs: the graph as loaded, the partitioned forward and the backward.
  size_t digraphs = 0;
  for (size_t p = dot.find("digraph "); p != std::string::npos; p = dot.find("digraph ", p + 1))
    ++digraphs;
  EXPECT_EQ(digraphs, 3u) << dot;
  EXPECT_NE(dot.find("[shape=box, label=\"aten.mm.default"), std::string::npos) << dot;
  EXPECT_NE(dot.find(" -> n0;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("digraph \"backward\""), std::string::npos) << dot;
}

// Issue 13: show --code prints the cpp compiler's schedule and generated source of each graph.
TEST_F(CliBinary, ShowCodePrintsTheCppScheduleAndSource) {
  ASSERT_EQ(cli("show " + cli_data("mlp.graph") + " --code --backward"), 0) << err();
  const std::string code = out();
  EXPECT_NE(code.find("// forward graph\n// cpp schedule of graph forward"), std::string::npos)
      << code;
  EXPECT_NE(code.find("// backward graph\n// cpp schedule of graph backward"), std::string::npos)
      << code;
  EXPECT_NE(code.find("extern aten.mm.default"), std::string::npos) << code;
}
