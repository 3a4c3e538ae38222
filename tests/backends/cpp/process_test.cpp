// run_process (backends/cpp/process.h): how the cpp backend starts the C++ compiler.
#include "backends/cpp/process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace cpp = aotgrad::backends::cpp;
using std::chrono::milliseconds;

TEST(RunProcess, CollectsStdoutAndTheExitStatusWithoutAShell) {
  // The argument reaches the program as one word, quotes and spaces included.
  const cpp::ProcessResult r =
      cpp::run_process({"printf", "%s|", "it's a $HOME `word`"}, false, milliseconds(10000));
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.output, "it's a $HOME `word`|");
  const cpp::ProcessResult failed =
      cpp::run_process({"sh", "-c", "exit 3"}, false, milliseconds(10000));
  EXPECT_EQ(failed.status, 3);
  EXPECT_FALSE(failed.timed_out);
}

TEST(RunProcess, StderrIsCollectedOnlyWhenAskedAndStdinIsEmpty) {
  const std::vector<std::string> argv = {"sh", "-c", "echo out; echo err >&2; cat"};
  const cpp::ProcessResult without = cpp::run_process(argv, false, milliseconds(10000));
  EXPECT_EQ(without.status, 0);
  EXPECT_EQ(without.output, "out\n");  // cat read /dev/null: nothing, and no wait
  const cpp::ProcessResult with = cpp::run_process(argv, true, milliseconds(10000));
  EXPECT_EQ(with.status, 0);
  EXPECT_EQ(with.output, "out\nerr\n");
}

TEST(RunProcess, AProgramThatIsNotThereIsStatusMinusOne) {
  const cpp::ProcessResult r =
      cpp::run_process({"/nonexistent/aotgrad-no-such-compiler"}, true, milliseconds(10000));
  EXPECT_EQ(r.status, -1);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.output.empty());
}

TEST(RunProcess, AChildPastTheLimitIsKilledWhetherOrNotItClosedItsOutput) {
  for (const char* script : {"echo started; exec sleep 100", "exec >&- 2>&-; exec sleep 100"}) {
    const auto t0 = std::chrono::steady_clock::now();
    const cpp::ProcessResult r = cpp::run_process({"sh", "-c", script}, true, milliseconds(300));
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_TRUE(r.timed_out) << script;
    EXPECT_EQ(r.status, -1) << script;
    // Not a timing assertion: a hang would have taken the sleep's 100 s.
    EXPECT_LT(took, std::chrono::seconds(50)) << script;
  }
}

TEST(RunProcess, AChildKilledByASignalIsStatusMinusOne) {
  const cpp::ProcessResult r =
      cpp::run_process({"sh", "-c", "kill -9 $$"}, true, milliseconds(10000));
  EXPECT_EQ(r.status, -1);
  EXPECT_FALSE(r.timed_out);
}

TEST(RunProcess, TheChildStartsWithNoSignalBlockedWhateverTheCallerBlocks) {
  // This thread blocks SIGTERM; the child's mask (SigBlk in /proc/self/status) is empty.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  const cpp::ProcessResult r =
      cpp::run_process({"grep", "^SigBlk:", "/proc/self/status"}, false, milliseconds(10000));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.output, "SigBlk:\t0000000000000000\n");
}

TEST(ConcurrencyRunProcess, ThreadsRunChildrenAtOnceEachGettingItsOwnOutput) {
  std::vector<std::string> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&got, i] {
      got[i] = cpp::run_process({"sh", "-c", "sleep 0.05; echo " + std::to_string(i)}, false,
                                milliseconds(20000))
                   .output;
    });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], std::to_string(i) + "\n");
}
