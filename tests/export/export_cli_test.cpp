// `aotgrad export` end to end: the real binary on a graph file with a parameter, a buffer it
// writes and a user input; the written joint graph loaded back against eager autograd, the
// signature read back from signature.json; usage and export errors as exit statuses 2 and 1.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "aotgrad/aotgrad.h"
#include "aotgrad/export.h"
#include "aotgrad/graph_program.h"
#include "cli_args.h"
#include "export_command.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;
using ag::testing::allclose;
using ag::testing::contains;

namespace {

// A linear layer with a step counter: the counter is a buffer the graph writes in place.
const char* const kGraph = R"(graph net(
    %w: f32[3,2],  # param(layer.weight)
    %steps: f32[2],  # buffer(steps)
    %x: f32[4,3]  # input(0)
) {
  %mm: f32[4,2] = aten.mm.default(%x, %w)
  %tanh: f32[4,2] = aten.tanh.default(%mm)
  %loss: f32[] = aten.sum.default(%tanh)
  %bumped: f32[2] = aten.add_.Scalar(%steps, other=1.0)
  return (%loss)
}
)";

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ExportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("aotgrad_export_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "net.graph") << kGraph;
  }
  void TearDown() override { fs::remove_all(dir_); }

  int cli(const std::string& args) {
    std::string cmd = std::string(AOTGRAD_CLI_PATH) + " " + args + " >" +
                      (dir_ / "stdout").string() + " 2>" + (dir_ / "stderr").string();
    int r = std::system(cmd.c_str());
    return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
  }
  std::string err() const { return read_text(dir_ / "stderr"); }
  std::string f(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::vector<ag::Tensor> inputs() {
  ag::manual_seed(3);
  return {ag::randn({3, 2}), ag::zeros({2}), ag::randn({4, 3})};
}

}  // namespace

TEST_F(ExportCli, JointExportLoadsBackAndMatchesEager) {
  ASSERT_EQ(cli("export " + f("net.graph") + " --out " + f("out") + " --joint"), 0) << err();
  for (const char* name : {"joint.txt", "forward.txt", "backward.txt", "signature.json"})
    EXPECT_TRUE(fs::is_regular_file(dir_ / "out" / name)) << name;

  ag::GraphSignature s = ag::signature_from_json(read_text(dir_ / "out" / "signature.json"));
  EXPECT_EQ(s.parameters, std::vector<std::string>{"layer.weight"});
  EXPECT_EQ(s.buffers, std::vector<std::string>{"steps"});
  ASSERT_EQ(s.buffers_to_mutate.size(), 1u);
  EXPECT_EQ(s.buffers_to_mutate[0].second, "steps");
  ASSERT_TRUE(s.backward_signature.has_value());
  ASSERT_EQ(s.backward_signature->gradients_to_parameters.size(), 1u);
  EXPECT_EQ(s.backward_signature->gradients_to_parameters[0].second, "layer.weight");
  EXPECT_EQ(s.backward_signature->loss_output, s.user_outputs.at(0));

  // joint.txt: (w, steps, x) -> (steps + 1, loss, dloss/dw).
  ag::GraphProgram joint = ag::GraphProgram::load(f("out/joint.txt"));
  std::vector<ag::Tensor> in = inputs();
  ag::GraphRunResult r = joint.run(in);
  ASSERT_EQ(r.outputs.size(), 3u);
  ag::Tensor w = in[0].detach().requires_grad_();
  ag::Tensor loss = ag::tanh(ag::mm(in[2], w)).sum();
  loss.backward();
  EXPECT_TRUE(allclose(r.outputs[0], ag::ones({2})));
  EXPECT_TRUE(allclose(r.outputs[1], loss, 1e-5, 1e-5));
  EXPECT_TRUE(allclose(r.outputs[2], w.grad(), 1e-5, 1e-5));
  EXPECT_EQ(ag::signature_of_graph(read_text(dir_ / "out" / "joint.txt"), 1), s);
}

TEST_F(ExportCli, InferenceExportWritesTheForwardGraph) {
  ASSERT_EQ(cli("export " + f("net.graph") + " --out " + f("out")), 0) << err();
  EXPECT_TRUE(fs::is_regular_file(dir_ / "out" / "inference.txt"));
  EXPECT_FALSE(fs::exists(dir_ / "out" / "joint.txt"));
  ag::GraphSignature s = ag::signature_from_json(read_text(dir_ / "out" / "signature.json"));
  EXPECT_FALSE(s.backward_signature.has_value());
  ag::GraphRunResult r = ag::GraphProgram::load(f("out/inference.txt")).run(inputs());
  ASSERT_EQ(r.outputs.size(), 2u);  // the new steps, the loss
  EXPECT_TRUE(allclose(r.outputs[0], ag::ones({2})));
}

TEST_F(ExportCli, MistakesExitWithOneLine) {
  EXPECT_EQ(cli("export " + f("net.graph")), 2);
  EXPECT_TRUE(contains(err(), "export needs --out DIR")) << err();
  EXPECT_EQ(cli("export " + f("net.graph") + " --out " + f("o") + " --loss-output 0"), 2);
  EXPECT_TRUE(contains(err(), "--loss-output needs --joint")) << err();
  EXPECT_EQ(cli("export " + f("net.graph") + " --out " + f("o") + " --joint --loss-output 3"), 1);
  EXPECT_TRUE(contains(err(), "output_loss_index is 3, but the forward returns 1 outputs"))
      << err();
  EXPECT_EQ(cli("export " + f("missing.graph") + " --out " + f("o")), 1);
  EXPECT_TRUE(contains(err(), "missing.graph: not a readable graph file")) << err();
  std::ofstream(dir_ / "bad.graph")
      << "graph g(%x: f32[2]) {\n  %y: f32[2] = aten.nope.default(%x)\n";
  EXPECT_EQ(cli("export " + f("bad.graph") + " --out " + f("o")), 1);
  EXPECT_TRUE(contains(err(), "bad.graph:2:16: unknown op 'aten.nope.default'")) << err();
  EXPECT_EQ(cli("export --help"), 0);
}

TEST(ExportCliArgs, ParsesFlags) {
  ag::cli::ExportArgs a =
      ag::cli::parse_export_args({"g.txt", "--joint", "--out", "d", "--loss-output", "2"});
  EXPECT_EQ(a.graph, "g.txt");
  EXPECT_EQ(a.out, "d");
  EXPECT_TRUE(a.joint);
  EXPECT_EQ(a.loss_output, 2u);
  struct Case {
    std::vector<std::string> args;
    std::string part;
  };
  std::vector<Case> cases = {
      {{}, "missing GRAPH after 'export'"},
      {{"g", "--out"}, "--out needs a value"},
      {{"g", "--out", "d", "--out", "e"}, "--out is given twice"},
      {{"g", "--out", "d", "--joint", "--inference"}, "give one of --joint and --inference"},
      {{"g", "--out", "d", "--joint", "--loss-output", "-1"}, "--loss-output takes an output"},
      {{"g", "--out", "d", "--bogus\x01"}, "unknown flag '--bogus\\x01'"},
      {{"g", "h", "--out", "d"}, "unexpected argument 'h'"},
  };
  for (const Case& c : cases) {
    std::string m =
        ag::testing::error_of<ag::cli::UsageError>([&] { ag::cli::parse_export_args(c.args); });
    EXPECT_TRUE(contains(m, c.part)) << m;
  }
}
