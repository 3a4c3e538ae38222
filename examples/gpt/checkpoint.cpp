#include "checkpoint.h"

#include <charconv>
#include <memory>
#include <stdexcept>

#include "corpus.h"

namespace gpt {
namespace {

namespace ag = aotgrad;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  std::string name;
  for (char c : path.substr(0, 160)) name += c >= 0x20 && c < 0x7f ? c : '?';
  throw FileError("aotgrad-gpt: checkpoint '" + name + "': " + problem);
}

const std::string kFormat = "aotgrad-gpt 1";

int64_t metadata_int(const ag::StringPairs& meta, const std::string& key, const std::string& path,
                     int64_t lo, int64_t hi) {
  for (const auto& [k, v] : meta)
    if (k == key) {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi)
        fail(path, "metadata \"" + key + "\" must be an integer from " + std::to_string(lo) +
                       " to " + std::to_string(hi));
      return n;
    }
  fail(path, "metadata has no \"" + key + "\"");
}

const ag::Tensor& find(const Checkpoint& c, const std::string& name, const std::string& path,
                       const ag::Tensor& like) {
  for (const auto& [n, t] : c.contents.tensors)
    if (n == name) {
      if (t.sizes() != like.sizes() || t.dtype() != like.dtype())
        fail(path, "tensor '" + name + "' is " + std::string(ag::dtype_name(t.dtype())) +
                       ag::shape_to_string(t.sizes()) + ", the model expects " +
                       std::string(ag::dtype_name(like.dtype())) +
                       ag::shape_to_string(like.sizes()));
      return t;
    }
  fail(path, "has no tensor '" + name + "'");
}

}  // namespace

void save_checkpoint(const std::string& path, Gpt& model, const ag::optim::AdamW& opt,
                     const std::string& vocab, int64_t step) {
  ag::NamedTensorList tensors;
  ag::nn::NamedTensors params = model.named_parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    tensors.emplace_back(params[i].first, params[i].second.detach());
    auto it = opt.state().find(ag::optim::param_key(params[i].second));
    if (it != opt.state().end()) {
      const auto& s = static_cast<const ag::optim::AdamWParamState&>(*it->second);
      tensors.emplace_back("optimizer." + params[i].first + ".exp_avg", s.exp_avg());
      tensors.emplace_back("optimizer." + params[i].first + ".exp_avg_sq", s.exp_avg_sq());
    }
  }
  std::vector<int64_t> bytes;
  for (char c : vocab) bytes.push_back(static_cast<unsigned char>(c));
  tensors.emplace_back("vocab", ag::from_vector(bytes, {static_cast<int64_t>(bytes.size())}));
  const GptConfig& c = model.config;
  ag::StringPairs meta = {{"format", kFormat},
                          {"step", std::to_string(step)},
                          {"block_size", std::to_string(c.block_size)},
                          {"n_layer", std::to_string(c.n_layer)},
                          {"n_head", std::to_string(c.n_head)},
                          {"n_embd", std::to_string(c.n_embd)}};
  ag::write_safetensors(path, tensors, meta);
}

Checkpoint read_checkpoint(const std::string& path) {
  Checkpoint c;
  try {
    c.contents = ag::read_safetensors(path);
  } catch (const std::invalid_argument& e) {
    throw FileError(std::string("aotgrad-gpt: ") + e.what());
  }
  const ag::StringPairs& meta = c.contents.metadata;
  bool ours = false;
  for (const auto& [k, v] : meta) ours = ours || (k == "format" && v == kFormat);
  if (!ours)
    fail(path,
         "not an aotgrad-gpt checkpoint (its metadata has no \"format\": \"" + kFormat + "\")");
  c.step = metadata_int(meta, "step", path, 0, INT64_MAX);
  c.config.block_size = metadata_int(meta, "block_size", path, 2, 4096);
  c.config.n_layer = metadata_int(meta, "n_layer", path, 1, 64);
  c.config.n_head = metadata_int(meta, "n_head", path, 1, 64);
  c.config.n_embd = metadata_int(meta, "n_embd", path, 1, 4096);
  if (c.config.n_embd % c.config.n_head != 0) fail(path, "n_embd is not a multiple of n_head");
  for (const auto& [n, t] : c.contents.tensors)
    if (n == "vocab") {
      if (t.dtype() != ag::DType::i64 || t.dim() != 1 || t.numel() < 1 || t.numel() > 256)
        fail(path, "tensor 'vocab' must be i64 with 1 to 256 entries");
      for (int64_t b : t.to_vector<int64_t>()) {
        if (b < 0 || b > 255) fail(path, "tensor 'vocab' holds a value outside 0..255");
        c.vocab += static_cast<char>(b);
      }
    }
  if (c.vocab.empty()) fail(path, "has no tensor 'vocab'");
  c.config.vocab_size = static_cast<int64_t>(c.vocab.size());
  return c;
}

void restore(const Checkpoint& c, const std::string& path, Gpt& model, ag::optim::AdamW& opt) {
  ag::NoGradGuard no_grad;
  ag::nn::NamedTensors params = model.named_parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    auto& [name, p] = params[i];
    p.copy_(find(c, name, path, p));
    if (c.step == 0) continue;
    auto s = std::make_unique<ag::optim::AdamWParamState>();
    s->step(c.step);
    s->exp_avg(find(c, "optimizer." + name + ".exp_avg", path, p).clone());
    s->exp_avg_sq(find(c, "optimizer." + name + ".exp_avg_sq", path, p).clone());
    opt.state()[ag::optim::param_key(p)] = std::move(s);
  }
}

}  // namespace gpt
