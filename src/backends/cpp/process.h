// Running a program and collecting its output, for the cpp backend's calls of the C++ compiler
// (build.cpp): no shell, a time limit, and this process's signal dispositions left alone.
// Safe to call from several threads at once (each call has its own pipe and child).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace aotgrad::backends::cpp {

// What a child process left: its exit status (-1 when it could not be started, was killed by a
// signal or timed out) and what it wrote.
struct ProcessResult {
  int status = -1;
  std::string output;
  bool timed_out = false;  // still running after the limit: killed (SIGKILL) and reaped
};

// Runs argv[0], looked up in $PATH as the shell would, with `argv` and no shell in between:
// stdin from /dev/null, stdout (and stderr too when `with_stderr`, else /dev/null) read through
// a pipe, the child's signal mask empty. Unlike std::system it leaves this process's SIGINT and
// SIGQUIT alone (system ignores them process-wide while the child runs, and the compiler runs
// while the caller's program goes on), and needs no quoting. A child still running after `limit`
// (its output closed or not) is killed and reported as timed out; a grandchild it left (gcc's
// cc1plus) may finish on its own, nobody waits for it.
ProcessResult run_process(const std::vector<std::string>& argv, bool with_stderr,
                          std::chrono::milliseconds limit);

}  // namespace aotgrad::backends::cpp
