// Training progress: on a terminal one line rewritten in place (step/total, loss, tokens/s,
// elapsed, ETA), at most ten times a second; elsewhere (a pipe, a log file) a plain line every
// twentieth of the run. Messages (held-out losses) go on lines of their own either way.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <string>

namespace gpt {

std::string fixed(double v, int decimals);
std::string clock_time(double seconds);  // "1:05", "1:02:03"

class Progress {
 public:
  Progress(std::ostream& out, bool in_place) : out_(out), in_place_(in_place) {}
  // time_limit: seconds after which training stops whatever the step (0: none), for the ETA.
  void start(int64_t first_step, int64_t total_steps, int64_t tokens_per_step, double time_limit);
  void step_done(int64_t step, double loss);
  void message(const std::string& line);
  void finish();

 private:
  std::string line(int64_t step, double loss) const;

  using Clock = std::chrono::steady_clock;
  std::ostream& out_;
  bool in_place_;
  int64_t first_ = 0, total_ = 0, tokens_per_step_ = 0, last_step_ = 0;
  double last_loss_ = 0, time_limit_ = 0;
  Clock::time_point start_, last_draw_;
  std::deque<Clock::time_point> recent_;  // end times of the last steps, for tokens/s and ETA
  bool drawn_ = false;
};

}  // namespace gpt
