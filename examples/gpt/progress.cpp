#include "progress.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace gpt {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string clock_time(double seconds) {
  auto s = static_cast<long long>(std::max(0.0, seconds) + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

void Progress::start(int64_t first_step, int64_t total_steps, int64_t tokens_per_step,
                     double time_limit) {
  time_limit_ = time_limit;
  first_ = last_step_ = first_step;
  total_ = total_steps;
  tokens_per_step_ = tokens_per_step;
  start_ = last_draw_ = Clock::now();
  recent_.clear();
  recent_.push_back(start_);
}

std::string Progress::line(int64_t step, double loss) const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  // The rate over the last steps (up to 20): the first step includes the compile.
  const double window = std::chrono::duration<double>(recent_.back() - recent_.front()).count();
  const double steps_per_s = window > 0 ? static_cast<double>(recent_.size() - 1) / window : 0.0;
  std::string text =
      "step " + std::to_string(step) + "/" + std::to_string(total_) + "  loss " + fixed(loss, 3);
  if (steps_per_s > 0) {
    text +=
        "  " + fixed(steps_per_s * static_cast<double>(tokens_per_step_) / 1e3, 1) + "k tokens/s";
  }
  text += "  elapsed " + clock_time(elapsed);
  if (steps_per_s > 0 && step < total_) {
    double eta = static_cast<double>(total_ - step) / steps_per_s;
    if (time_limit_ > 0) eta = std::min(eta, std::max(0.0, time_limit_ - elapsed));
    text += "  ETA " + clock_time(eta);
  }
  return text;
}

void Progress::step_done(int64_t step, double loss) {
  last_step_ = step;
  last_loss_ = loss;
  const Clock::time_point now = Clock::now();
  recent_.push_back(now);
  if (recent_.size() > 21) recent_.pop_front();
  if (in_place_) {
    if (step == total_ || now - last_draw_ >= std::chrono::milliseconds(100) || !drawn_) {
      out_ << "\r\x1b[K" << line(step, loss) << std::flush;
      last_draw_ = now;
      drawn_ = true;
    }
    return;
  }
  const int64_t every = std::max<int64_t>(1, (total_ - first_) / 20);
  if ((step - first_) % every == 0 || step == total_ || step == first_ + 1)
    out_ << line(step, loss) << "\n" << std::flush;
}

void Progress::message(const std::string& text) {
  if (in_place_ && drawn_) {
    out_ << "\r\x1b[K" << text << "\n" << line(last_step_, last_loss_) << std::flush;
    return;
  }
  out_ << text << "\n" << std::flush;
}

void Progress::finish() {
  if (in_place_ && drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

}  // namespace gpt
