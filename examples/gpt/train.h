// The whole aotgrad-gpt job: load the corpus (and a checkpoint), train with a compiled step,
// estimate held-out loss, checkpoint, plot, sample, and measure compiled against eager.
//
// Reading guide: Trainer::run() is the straight line; train_steps() is the loop, one compiled
// call per step (aot_module over Gpt::forward(idx, targets), partitioner min_cut), backward, and
// AdamW. Everything printed goes to the stream given; a terminal gets one progress line rewritten
// in place, anything else gets plain log lines.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "options.h"

namespace gpt {

struct RunReport {
  std::vector<std::pair<int64_t, double>> train_loss;  // (step, loss) of every step run
  std::vector<std::pair<int64_t, double>> held_out;    // (step, loss) of every estimate
  std::string checkpoint;                              // the path written
  std::string samples;                                 // the sampled text
  double compiled_tokens_per_s = 0, eager_tokens_per_s = 0;
  size_t saved_bytes_min_cut = 0, saved_bytes_default = 0;
};

// Throws FileError for a corpus or checkpoint that cannot be read or an output that cannot be
// written (main prints its one line and exits with 1).
RunReport run_gpt(const Options& options, std::ostream& out, bool terminal);

}  // namespace gpt
