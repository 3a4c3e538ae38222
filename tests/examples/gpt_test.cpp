// aotgrad-gpt (examples/gpt/), driven in-process on a tiny configuration: the loss falls, a run
// interrupted and resumed from its checkpoint ends with the same parameters bit for bit as an
// uninterrupted one, and bad flags and unreadable files give one line each.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "corpus.h"
#include "options.h"
#include "train.h"

namespace gpt {
namespace {

namespace fs = std::filesystem;

class GptDemo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("aotgrad_gpt_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // A small, very regular text: a tiny model learns its next character within a few dozen steps.
    std::ofstream text(path("text.txt"));
    for (int i = 0; i < 300; ++i) text << "the cat sat on the mat. ";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  Options tiny(const std::string& out, int64_t steps) const {
    ParseResult p = parse_options({"--data",
                                   path("text.txt"),
                                   "--out",
                                   path(out),
                                   "--steps",
                                   std::to_string(steps),
                                   "--layers",
                                   "1",
                                   "--heads",
                                   "2",
                                   "--embd",
                                   "16",
                                   "--block",
                                   "16",
                                   "--batch",
                                   "4",
                                   "--lr",
                                   "0.01",
                                   "--eval-every",
                                   "10",
                                   "--eval-batches",
                                   "2",
                                   "--compare-steps",
                                   "1",
                                   "--sample-lines",
                                   "1",
                                   "--threads",
                                   "1",
                                   "--no-png"});
    EXPECT_EQ(p.error, "");
    return p.options;
  }

  fs::path dir_;
};

TEST_F(GptDemo, LossFallsAndTheRunWritesItsFiles) {
  std::ostringstream log;
  RunReport r = run_gpt(tiny("a", 40), log, /*terminal=*/false);
  ASSERT_EQ(r.train_loss.size(), 40u);
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    first += r.train_loss[static_cast<size_t>(i)].second / 5;
    last += r.train_loss[r.train_loss.size() - 1 - static_cast<size_t>(i)].second / 5;
  }
  EXPECT_LT(last, 0.6 * first) << log.str();
  ASSERT_EQ(r.held_out.size(), 5u);  // before step 1, then at 10, 20, 30, 40
  EXPECT_LT(r.held_out.back().second, r.held_out.front().second);
  EXPECT_TRUE(fs::exists(path("a/loss.svg")));
  EXPECT_EQ(r.checkpoint, path("a/checkpoint.safetensors"));
  EXPECT_GT(r.saved_bytes_default, 0u);
  EXPECT_GT(r.saved_bytes_min_cut, 0u);
  EXPECT_NE(log.str().find("held-out loss"), std::string::npos);
  EXPECT_NE(log.str().find("samples (temperature 0.8, top-k 10)"), std::string::npos);
}

TEST_F(GptDemo, ResumingContinuesExactlyWhereTheRunStopped) {
  std::ostringstream log;
  run_gpt(tiny("whole", 12), log, false);
  Options half = tiny("half", 12);
  half.stop_after = 6;  // as if interrupted after the checkpoint at step 6
  run_gpt(half, log, false);
  Options rest = tiny("rest", 12);
  rest.resume = path("half/checkpoint.safetensors");
  RunReport resumed = run_gpt(rest, log, false);
  ASSERT_EQ(resumed.train_loss.size(), 6u);
  EXPECT_EQ(resumed.train_loss.front().first, 7);

  aotgrad::SafetensorsContents whole =
      aotgrad::read_safetensors(path("whole/checkpoint.safetensors"));
  aotgrad::SafetensorsContents again =
      aotgrad::read_safetensors(path("rest/checkpoint.safetensors"));
  ASSERT_EQ(whole.tensors.size(), again.tensors.size());
  EXPECT_EQ(whole.metadata, again.metadata);
  for (size_t i = 0; i < whole.tensors.size(); ++i) {
    const auto& [name, a] = whole.tensors[i];
    const auto& b = again.tensors[i].second;
    EXPECT_EQ(name, again.tensors[i].first);
    ASSERT_EQ(a.sizes(), b.sizes()) << name;
    size_t nbytes = static_cast<size_t>(a.numel()) * aotgrad::itemsize(a.dtype());
    EXPECT_EQ(std::memcmp(a.impl()->data_bytes(), b.impl()->data_bytes(), nbytes), 0) << name;
  }
}

TEST_F(GptDemo, BadFlagsGiveOneLine) {
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  };
  std::vector<Case> cases = {
      {{"--stepz", "3"}, "unknown flag '--stepz'"},
      {{"--steps"}, "--steps needs a value"},
      {{"--steps", "ten"}, "--steps expects an integer from 1 to 10000000, got 'ten'"},
      {{"--steps=0"}, "got '0'"},
      {{"--lr", "nan"}, "--lr expects a number"},
      {{"--temperature", "-1"}, "--temperature expects a number"},
      {{"--embd", "30", "--heads", "4"}, "--embd 30 must be a multiple of --heads 4"},
      {{"--data", ""}, "--data expects a path"},
      {{"book.txt"}, "unexpected argument 'book.txt'"},
      {{"--top-k", "1\x1b[2J"}, "got '1\\x1b[2J'"},
  };
  for (const Case& c : cases) {
    ParseResult p = parse_options(c.args);
    EXPECT_NE(p.error.find(c.expect), std::string::npos) << p.error;
    EXPECT_EQ(p.error.rfind("aotgrad-gpt: ", 0), 0u) << p.error;
    EXPECT_EQ(p.error.find('\n'), std::string::npos) << p.error;
    EXPECT_EQ(p.error.find('\x1b'), std::string::npos) << p.error;
  }
  EXPECT_TRUE(parse_options({"--help"}).options.help);
  EXPECT_EQ(parse_options({"--steps=5", "--no-png"}).options.steps, 5);
}

TEST_F(GptDemo, UnreadableFilesGiveOneLineNamingThem) {
  auto error = [&](Options o) -> std::string {
    std::ostringstream log;
    try {
      run_gpt(o, log, false);
    } catch (const FileError& e) {
      return e.what();
    }
    return "(no error)";
  };
  Options o = tiny("x", 2);
  o.data = path("missing.txt");
  EXPECT_NE(error(o).find("--data '" + path("missing.txt") + "': cannot open it"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(path("x"))) << "a failed start leaves no --out directory behind";
  o.data = dir_.string();
  EXPECT_NE(error(o).find("not a regular file"), std::string::npos);
  std::ofstream(path("short.txt")) << "abc";
  o.data = path("short.txt");
  EXPECT_NE(error(o).find("3 bytes is too short for --block 16"), std::string::npos);
  o = tiny("x", 2);
  std::ofstream(path("junk.safetensors")) << "not a checkpoint";
  o.resume = path("junk.safetensors");
  EXPECT_NE(error(o).find("junk.safetensors': header length"), std::string::npos) << error(o);
  aotgrad::write_safetensors(path("other.safetensors"), {{"w", aotgrad::ones({1})}});
  o.resume = path("other.safetensors");
  EXPECT_NE(error(o).find("not an aotgrad-gpt checkpoint"), std::string::npos);
}

}  // namespace
}  // namespace gpt
