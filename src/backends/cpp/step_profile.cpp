#include "backends/cpp/step_profile.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>

namespace aotgrad::backends::cpp {
namespace {

struct Row {
  bool product = false;
  double ms = 0;
  int64_t calls = 0;
};

bool from_environment() {
  const char* e = std::getenv("AOTGRAD_PROFILE");
  return e && *e && std::string(e) != "0";
}

struct Table {
  std::mutex mu;
  std::map<std::string, Row> rows;
};

void print_at_exit() {
  try {
    if (!step_profile().empty()) std::cerr << step_profile_table();
  } catch (...) {  // nothing to report with at exit
  }
}

// Never destroyed: a thread or a static destructor may still run a compiled step at exit.
Table& table() {
  static Table* t = [] {
    if (from_environment()) std::atexit(print_at_exit);
    return new Table;
  }();
  return *t;
}

std::atomic<bool>& enabled() {
  static std::atomic<bool> on{from_environment()};
  return on;
}

}  // namespace

bool step_profiling() {
  return enabled().load(std::memory_order_relaxed);
}

void set_step_profiling(bool on) {
  enabled().store(on, std::memory_order_relaxed);
}

void add_step_time(const std::string& label, bool product, double ms) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  Row& r = t.rows[label];
  r.product = product;
  r.ms += ms;
  ++r.calls;
}

std::vector<StepTime> step_profile() {
  Table& t = table();
  std::vector<StepTime> out;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    for (const auto& [label, r] : t.rows) out.push_back({label, r.product, r.ms, r.calls});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const StepTime& a, const StepTime& b) { return a.ms > b.ms; });
  return out;
}

void reset_step_profile() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.rows.clear();
}

std::string step_profile_table() {
  const std::vector<StepTime> rows = step_profile();
  double total = 0, products = 0;
  for (const StepTime& r : rows) {
    total += r.ms;
    if (r.product) products += r.ms;
  }
  std::string out = "aotgrad step profile (cpp compiler; ms summed over calls, share, calls):\n";
  char line[64];
  for (const StepTime& r : rows) {
    std::snprintf(line, sizeof line, "%11.3f ms %5.1f%% %8lld  ", r.ms,
                  total > 0 ? 100 * r.ms / total : 0.0, static_cast<long long>(r.calls));
    out += line + r.label + "\n";
  }
  std::snprintf(line, sizeof line, "%11.3f ms %5.1f%%", products,
                total > 0 ? 100 * products / total : 0.0);
  out += std::string(line) + "  matrix products and convolutions\n";
  return out;
}

}  // namespace aotgrad::backends::cpp
