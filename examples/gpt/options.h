// aotgrad-gpt's command line: the flags, their defaults and ranges, and the help text.
//
// parse_options never throws and never exits: a bad flag comes back as one line in
// ParseResult::error (main prints it and exits with status 2), so tests can check every message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpt {

struct Options {
  std::optional<std::string> data;    // --data FILE; default: the license texts every Debian has
  std::optional<std::string> resume;  // --resume CHECKPOINT
  std::string out_dir = "aotgrad-gpt-out";
  int64_t steps = 1000;    // total optimizer steps (a resumed run continues up to this many)
  int64_t stop_after = 0;  // stop this run after that many steps (0: run to --steps)
  double time_limit =
      90;  // seconds of training; 0: none. The schedule ends at whichever comes first
  int64_t batch = 16;
  int64_t block = 64;  // context length
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t embd = 128;
  double lr = 3e-3;  // peak; warmup then cosine decay to lr / 10
  int64_t eval_every = 100;
  int64_t eval_batches = 8;
  int64_t compare_steps = 10;  // eager vs compiled steps timed at the end
  int64_t sample_lines = 8;
  double temperature = 0.8;
  int64_t top_k = 10;
  uint64_t seed = 1337;
  int64_t threads = 0;   // 0: OMP_NUM_THREADS if set, else 1
  bool progress = true;  // --no-progress: plain log lines even on a terminal
  bool png = true;       // --no-png: the SVG only, no converter run
  bool help = false;
};

struct ParseResult {
  Options options;
  std::string error;  // empty on success; else one line for stderr
};

// `args` excludes the program name.
ParseResult parse_options(const std::vector<std::string>& args);
std::string usage_text();

}  // namespace gpt
