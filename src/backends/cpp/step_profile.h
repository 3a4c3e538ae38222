// Where a compiled step's time goes: while profiling is on (AOTGRAD_PROFILE=1 in the environment,
// or set_step_profiling(true)), the cpp runner times each step of every call it runs (wall clock)
// and adds the time to a table keyed by the step's description: graph, kind (gemm / conv with
// post-ops, kernel, extern), op names and result shape, so equal steps of several layers share a
// row. Under AOTGRAD_PROFILE=1 the table goes to stderr when the process exits.
//
// Thread-safe: the table has one mutex, taken only while profiling. Off, a step pays one relaxed
// atomic load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aotgrad::backends::cpp {

struct StepTime {
  std::string label;     // "forward: gemm aten.addmm.default + relu [1024, 1024]"
  bool product = false;  // a matrix product or convolution (a GEMM step or such an extern op)
  double ms = 0;         // summed over calls
  int64_t calls = 0;
};

bool step_profiling();
void set_step_profiling(bool on);

void add_step_time(const std::string& label, bool product, double ms);

// The table, most time first.
std::vector<StepTime> step_profile();
void reset_step_profile();

// The table as text: one line per row (ms, share, calls, label), then the products' share.
std::string step_profile_table();

}  // namespace aotgrad::backends::cpp
