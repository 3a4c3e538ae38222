// The LibTorch-style example programs (examples/libtorch/) and make-mnist-idx, run as built for a
// handful of steps on tiny generated data: each must show its learning signal (regression below
// its loss threshold, mnist and custom_dataset well above chance, dcgan's losses moving and a
// restored checkpoint repeating the next steps exactly, higher_order's gradients matching their
// checks), and a missing data set is one line.
// The programs are separate executables (built before aotgrad_tests, see CMakeLists.txt); they
// run with OMP_NUM_THREADS=1 so that a loaded machine does not oversubscribe.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "testing/exactness.h"

namespace {

namespace fs = std::filesystem;

struct ProgramRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  // The "result <key> <values...>" lines, key -> values of the last such line.
  std::map<std::string, std::vector<double>> results;
  std::vector<std::vector<double>> steps;  // "result step k d g" lines, in order
};

class LibtorchExamples : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("aotgrad_libtorch_examples_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `program` (a file name in the build directory) with `args` in the test's directory.
  ProgramRun run(const std::string& program, const std::string& args) const {
    std::string command = "cd '" + dir_.string() + "' && OMP_NUM_THREADS=1 '" +
                          (fs::path(AOTGRAD_EXAMPLES_BIN) / program).string() + "' " + args +
                          " 2>&1";
    ProgramRun result;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return result;
    char buffer[4096];
    while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) result.output.append(buffer, n);
    int status = ::pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::istringstream lines(result.output);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string tag, key;
      if (!(words >> tag >> key) || tag != "result") continue;
      std::vector<double> values;
      for (double v; words >> v;) values.push_back(v);
      if (key == "step") result.steps.push_back(values);
      result.results[key] = values;
    }
    return result;
  }

  fs::path dir_;
};

TEST_F(LibtorchExamples, MakeMnistIdxWritesWhatTheMnistDatasetReads) {
  ProgramRun made = run("make-mnist-idx", "--train 30 --test 20 --pgm images --pgm-count 12");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  aotgrad::data::datasets::MNIST train((dir_ / "data").string());
  aotgrad::data::datasets::MNIST test((dir_ / "data").string(),
                                      aotgrad::data::datasets::MNIST::Mode::kTest);
  ASSERT_EQ(train.size(), 30u);
  ASSERT_EQ(test.size(), 20u);
  EXPECT_EQ(train.images().sizes(), (aotgrad::IntList{30, 1, 28, 28}));
  std::vector<int64_t> labels = train.targets().to_vector<int64_t>();
  for (size_t i = 0; i < labels.size(); ++i) EXPECT_EQ(labels[i], static_cast<int64_t>(i % 10));
  // Digits differ by class: a one differs from an eight in many pixels.
  double diff = (train.images()[1] - train.images()[8]).abs().sum().item<double>();
  EXPECT_GT(diff, 20.0);
  EXPECT_TRUE(fs::exists(dir_ / "images" / "3" / "3.pgm"));
  // The same seed writes the same bytes.
  ProgramRun again = run("make-mnist-idx", "--out again --train 30 --test 20");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(fs::file_size(dir_ / "again" / "train-images-idx3-ubyte"), 16u + 30u * 784u);
  ProgramRun bad = run("make-mnist-idx", "--train lots");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--train expects a count"), std::string::npos) << bad.output;
}

TEST_F(LibtorchExamples, RegressionStopsBelowItsThreshold) {
  ProgramRun r = run("libtorch-regression", "--steps 3000 --threshold 0.001");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.results.count("loss"), 1u) << r.output;
  EXPECT_LT(r.results["loss"][0], 0.001);
  EXPECT_LT(r.results["steps"][0], 3000);
}

TEST_F(LibtorchExamples, HigherOrderGradientsMatchTheirChecks) {
  ProgramRun r = run("libtorch-higher_order", "--steps 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.steps.size(), 3u) << r.output;
  EXPECT_LT(r.results["hvp_error"][0], 1e-10) << r.output;  // Hv against (A + A^T) / 2 + diag(2x)
  EXPECT_LT(r.results["fd_error"][0], 1e-4) << r.output;  // penalty gradient vs finite differences
  EXPECT_GT(r.results["penalty_share"][0], 0) << r.output;  // the penalty reaches the weights
  // First order: compiled == eager (bit for bit on the interpreter, to f64 rounding under a fusing
  // default compiler: testing/exactness.h).
  EXPECT_LE(r.results["compiled_diff"][0],
            aotgrad::testing::default_compiler_is_exact() ? 0 : 1e-12)
      << r.output;
  EXPECT_EQ(r.results["compiled_refused"][0], 1) << r.output;
  EXPECT_NE(r.output.find("does not currently support double backward"), std::string::npos)
      << r.output;
  // The critic learns to separate the samples: its loss falls from step to step.
  EXPECT_LT(r.steps[2][1], r.steps[0][1]) << r.output;
}

TEST_F(LibtorchExamples, MnistLearnsWellAboveChance) {
  ASSERT_EQ(run("make-mnist-idx", "--train 640 --test 200").exit_code, 0);
  ProgramRun r = run("libtorch-mnist", "--epochs 4 --steps 20 --batch-size 32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.results.count("accuracy"), 1u) << r.output;
  EXPECT_GT(r.results["accuracy"][0], 0.3) << r.output;  // chance is 0.1
}

TEST_F(LibtorchExamples, MnistWithoutDataIsOneLineNamingTheFile) {
  ProgramRun r = run("libtorch-mnist", "--data nowhere --steps 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("nowhere"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST_F(LibtorchExamples, CustomDatasetLearnsFromPgmFiles) {
  ASSERT_EQ(run("make-mnist-idx", "--train 0 --test 0 --pgm images --pgm-count 200").exit_code, 0);
  ProgramRun r = run("libtorch-custom_dataset", "--images images --steps 60 --batch-size 16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.results.count("accuracy"), 1u) << r.output;
  EXPECT_GT(r.results["accuracy"][0], 0.3) << r.output;
}

TEST_F(LibtorchExamples, DcganLossesMoveAndARestoreRepeatsTheNextSteps) {
  ASSERT_EQ(run("make-mnist-idx", "--train 64 --test 10").exit_code, 0);
  fs::create_directories(dir_ / "a");
  fs::create_directories(dir_ / "b");
  std::string common = "--batch-size 8 --seed 3 ";
  ProgramRun first = run("libtorch-dcgan", common + "--steps 2 --checkpoint-every 2 --out a");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ProgramRun whole = run("libtorch-dcgan", common + "--steps 4 --checkpoint-every 0 --out b");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ProgramRun resumed =
      run("libtorch-dcgan", common + "--steps 4 --checkpoint-every 0 --out a --restore");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  ASSERT_EQ(whole.steps.size(), 4u) << whole.output;
  ASSERT_EQ(resumed.steps.size(), 2u) << resumed.output;
  // The losses move from step to step.
  EXPECT_NE(whole.steps[0][1], whole.steps[3][1]);
  EXPECT_NE(whole.steps[0][2], whole.steps[3][2]);
  // The run that wrote the checkpoint and the uninterrupted one agree up to it...
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(first.steps[i], whole.steps[i]);
  // ...and the restored run repeats steps 3 and 4 (printed to 6 decimals).
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(resumed.steps[i][0], whole.steps[i + 2][0]);
    EXPECT_NEAR(resumed.steps[i][1], whole.steps[i + 2][1], 2e-6);
    EXPECT_NEAR(resumed.steps[i][2], whole.steps[i + 2][2], 2e-6);
  }
  // Without a checkpoint, --restore is one line naming the file.
  ProgramRun missing = run("libtorch-dcgan", common + "--steps 4 --out b --restore");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("generator-checkpoint.pt"), std::string::npos) << missing.output;
}

}  // namespace
