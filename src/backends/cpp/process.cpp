#include "backends/cpp/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <thread>

namespace aotgrad::backends::cpp {

ProcessResult run_process(const std::vector<std::string>& argv, bool with_stderr,
                          std::chrono::milliseconds limit) {
  ProcessResult result;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return result;
  if (fds[1] <= 2) {  // this process had a standard stream closed: keep the pipe off 0-2
    const int moved = ::fcntl(fds[1], F_DUPFD_CLOEXEC, 3);
    ::close(fds[1]);
    if (moved < 0) {
      ::close(fds[0]);
      return result;
    }
    fds[1] = moved;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  if (with_stderr)
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  else
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;  // the child starts with no signal blocked, whatever this thread blocks
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    return result;
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::array<char, 4096> buf;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buf.data(), buf.size());
    if (n > 0)
      result.output.append(buf.data(), static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR)
      break;  // end of output: every writer has exited
  }
  ::close(fds[0]);
  if (result.timed_out) ::kill(pid, SIGKILL);
  // A child that closed its output may still run: it gets what is left of `limit` too.
  int status = 0;
  for (auto pause = std::chrono::microseconds(100);;) {
    const pid_t done = ::waitpid(pid, &status, result.timed_out ? 0 : WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return result;
    if (done == 0 && std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
    } else if (done == 0) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
  }
  if (result.timed_out) return result;
  if (WIFEXITED(status)) result.status = WEXITSTATUS(status);
  return result;
}

}  // namespace aotgrad::backends::cpp
