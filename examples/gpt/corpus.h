// The training text: read, mapped to token ids (one per distinct byte), split into a training
// part and a held-out part, and cut into batches.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/tensor.h"

namespace gpt {

// A file that cannot be used as a corpus or checkpoint: one line naming it (exit status 1).
struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where the default corpus comes from: base-files puts the license texts here on every Debian
// system, so the demo needs no download and the repository ships no prose.
inline constexpr const char* kDefaultCorpusDir = "/usr/share/common-licenses";

struct Corpus {
  std::string description;               // "/usr/share/common-licenses (14 files)" or the path
  std::string vocab;                     // the distinct bytes, sorted; a token id indexes it
  std::vector<int64_t> train, held_out;  // token ids: the first 90% and the last 10%
  size_t bytes = 0;
};

// Reads `path` (or, when absent, every license text under kDefaultCorpusDir, each file once).
// With a non-empty `vocab` (a resumed checkpoint's), every byte of the text must be in it.
// Throws FileError naming the file for a missing, unreadable, empty or too short text.
Corpus load_corpus(const std::optional<std::string>& path, int64_t block,
                   const std::string& vocab = "");

// `batch` random windows of block + 1 tokens from `ids`: inputs [batch, block] and the same
// windows shifted by one, the targets. The windows depend only on (seed, step), so a resumed run
// sees the batches an uninterrupted one would have.
std::pair<aotgrad::Tensor, aotgrad::Tensor> make_batch(const std::vector<int64_t>& ids,
                                                       int64_t batch, int64_t block, uint64_t seed,
                                                       uint64_t step);

}  // namespace gpt
