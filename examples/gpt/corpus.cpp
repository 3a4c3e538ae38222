#include "corpus.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

namespace gpt {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMaxCorpusBytes = 512ull << 20;

std::string shown(const std::string& path) {
  std::string out;
  for (char c : path.substr(0, 160)) {
    auto b = static_cast<unsigned char>(c);
    out += b >= 0x20 && b < 0x7f ? std::string(1, c) : "?";
  }
  return out;
}

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw FileError("aotgrad-gpt: --data '" + shown(path) + "': " + problem);
}

std::string read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail(path, std::string("cannot open it: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file (a directory, device or pipe)");
  if (static_cast<uint64_t>(st.st_size) > kMaxCorpusBytes)
    fail(path, std::to_string(st.st_size) + " bytes; aotgrad-gpt reads at most 512 MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open it: ") + std::strerror(errno));
  std::string text(static_cast<size_t>(st.st_size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (static_cast<size_t>(in.gcount()) != text.size()) fail(path, "read failed");
  return text;
}

// Every regular file under the license directory, each once (GPL is a link to GPL-3), in name
// order, so the corpus is the same on every machine with the same base-files.
std::string read_default_corpus(std::string& description) {
  std::error_code ec;
  std::vector<fs::path> files;
  std::set<fs::path> seen;
  for (const auto& entry : fs::directory_iterator(kDefaultCorpusDir, ec)) {
    fs::path real = fs::canonical(entry.path(), ec);
    if (ec || !fs::is_regular_file(real, ec) || !seen.insert(real).second) continue;
    files.push_back(real);
  }
  if (files.empty())
    throw FileError(std::string("aotgrad-gpt: no text to train on: ") + kDefaultCorpusDir +
                    " is missing or empty (it comes with Debian's base-files); pass --data FILE");
  std::sort(files.begin(), files.end());
  std::string text;
  for (const fs::path& f : files) text += read_file(f.string()) + "\n";
  description = std::string(kDefaultCorpusDir) + " (" + std::to_string(files.size()) + " files)";
  return text;
}

}  // namespace

Corpus load_corpus(const std::optional<std::string>& path, int64_t block,
                   const std::string& vocab) {
  Corpus c;
  std::string text = path ? read_file(*path) : read_default_corpus(c.description);
  if (path) c.description = shown(*path);
  const std::string& name = path ? *path : std::string(kDefaultCorpusDir);
  // Both parts need at least one window of block + 1 tokens.
  const uint64_t need = static_cast<uint64_t>(10 * (block + 2));
  if (text.size() < need)
    fail(name, std::to_string(text.size()) + " bytes is too short for --block " +
                   std::to_string(block) + "; it needs at least " + std::to_string(need));
  c.bytes = text.size();
  if (vocab.empty()) {
    std::set<unsigned char> distinct(text.begin(), text.end());
    c.vocab.assign(distinct.begin(), distinct.end());
  } else {
    c.vocab = vocab;
  }
  int64_t id_of[256];
  std::fill(std::begin(id_of), std::end(id_of), -1);
  for (size_t i = 0; i < c.vocab.size(); ++i)
    id_of[static_cast<unsigned char>(c.vocab[i])] = static_cast<int64_t>(i);
  std::vector<int64_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    int64_t id = id_of[static_cast<unsigned char>(text[i])];
    if (id < 0)
      fail(name,
           "byte " + std::to_string(static_cast<unsigned char>(text[i])) + " at offset " +
               std::to_string(i) +
               " is not in the checkpoint's vocabulary; resume with the text it was trained on");
    ids[i] = id;
  }
  size_t split = ids.size() / 10 * 9;
  c.train.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(split));
  c.held_out.assign(ids.begin() + static_cast<std::ptrdiff_t>(split), ids.end());
  return c;
}

std::pair<aotgrad::Tensor, aotgrad::Tensor> make_batch(const std::vector<int64_t>& ids,
                                                       int64_t batch, int64_t block, uint64_t seed,
                                                       uint64_t step) {
  // SplitMix-style mixing of (seed, step) into one seed: nearby steps get unrelated streams.
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + step + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  std::mt19937_64 rng(z ^ (z >> 31));
  std::uniform_int_distribution<size_t> start(0, ids.size() - static_cast<size_t>(block) - 1);
  std::vector<int64_t> x(static_cast<size_t>(batch * block)), y(x.size());
  for (int64_t b = 0; b < batch; ++b) {
    size_t s = start(rng);
    auto first = ids.begin() + static_cast<std::ptrdiff_t>(s);
    std::copy(first, first + block, x.begin() + b * block);
    std::copy(first + 1, first + block + 1, y.begin() + b * block);
  }
  return {aotgrad::from_vector(x, {batch, block}), aotgrad::from_vector(y, {batch, block})};
}

}  // namespace gpt
