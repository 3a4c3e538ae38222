// torch::save / torch::load for optimizers. The file holds, besides the "format" key:
//   metadata "optimizer" = type_name(), "param_groups" = N, "group.G.params" = size of group G,
//   "group.G.<option>" = each option of OptimizerOptions::values(), "state.G.J" = "1" when
//   parameter J of group G has state, "state.G.J.<counter>" = each integer counter of it;
//   tensors "state.G.J.<slot>" = each defined tensor of that state.
// Numbers are written shortest-round-trip (std::to_chars), so they read back bit for bit.
// Loading builds the new options and states completely, checking every entry against the
// optimizer's groups and parameters, before it replaces anything.
#include <charconv>
#include <set>
#include <stdexcept>
#include <system_error>

#include "aotgrad/safetensors.h"
#include "aotgrad/serialize.h"
#include "serialize/checkpoint_common.h"

namespace aotgrad {
namespace {

using checkpoint::fail;
using checkpoint::quoted;

std::string number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string slot_prefix(size_t g, size_t j) {
  return "state." + std::to_string(g) + "." + std::to_string(j);
}

// The metadata of one file, with the keys a load has used, so that leftovers can be named.
class Metadata {
 public:
  Metadata(const SafetensorsContents& c, const std::string& path) : c_(c), path_(path) {}

  const std::string* find(const std::string& key) {
    const std::string* v = checkpoint::find_metadata(c_, key);
    if (v) used_.insert(key);
    return v;
  }
  const std::string& get(const std::string& key) {
    const std::string* v = find(key);
    if (!v) fail(path_, "has no metadata entry " + quoted(key));
    return *v;
  }
  template <typename T>
  T number_at(const std::string& key) {
    const std::string& text = get(key);
    T value{};
    auto r = std::from_chars(text.data(), text.data() + text.size(), value);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size())
      fail(path_, "metadata entry " + quoted(key) + " is " +
                      quoted(text.size() > 40 ? text.substr(0, 40) + "..." : text) +
                      ", expected a number");
    return value;
  }
  // The first key no load step asked for.
  const std::string* unused() const {
    for (const auto& [k, v] : c_.metadata)
      if (!used_.count(k)) return &k;
    return nullptr;
  }

 private:
  const SafetensorsContents& c_;
  const std::string& path_;
  std::set<std::string> used_;
};

struct LoadedGroup {
  std::unique_ptr<optim::OptimizerOptions> options;
  std::vector<std::pair<std::string, std::unique_ptr<optim::OptimizerParamState>>> states;
};

// Reads the state of parameter j of group g into a fresh state object.
std::unique_ptr<optim::OptimizerParamState> load_state(const optim::Optimizer& opt,
                                                       const SafetensorsContents& c, Metadata& meta,
                                                       std::vector<bool>& used,
                                                       const std::string& path, size_t g, size_t j,
                                                       const Tensor& param) {
  std::unique_ptr<optim::OptimizerParamState> state = opt.make_state();
  const std::string prefix = slot_prefix(g, j);
  optim::StateSlots slots = state->slots();
  for (auto& [name, counter] : slots.counters)
    *counter = meta.number_at<int64_t>(prefix + "." + name);
  for (const optim::StateSlots::TensorSlot& slot : slots.tensors) {
    const std::string key = prefix + "." + slot.name;
    size_t i = 0;
    while (i < c.tensors.size() && c.tensors[i].first != key) ++i;
    if (i == c.tensors.size()) {
      if (slot.required)
        fail(path, "has no tensor " + quoted(key) + " (the " + opt.type_name() +
                       " state of parameter " + std::to_string(j) + " of group " +
                       std::to_string(g) + ", " + checkpoint::describe(param) + ")");
      continue;
    }
    const std::string owner = "parameter " + std::to_string(j) + " of group " + std::to_string(g);
    checkpoint::check_like(path, key, c.tensors[i].second, param, owner.c_str());
    *slot.tensor = c.tensors[i].second;
    used[i] = true;
  }
  return state;
}

LoadedGroup load_group(const optim::Optimizer& opt, const SafetensorsContents& c, Metadata& meta,
                       std::vector<bool>& used, const std::string& path, size_t g) {
  const optim::OptimizerParamGroup& group = opt.param_groups()[g];
  const std::string prefix = "group." + std::to_string(g) + ".";
  auto size = meta.number_at<int64_t>(prefix + "params");
  if (size != static_cast<int64_t>(group.params().size()))
    fail(path, "param group " + std::to_string(g) + " has " + std::to_string(size) +
                   " parameters in the file, " + std::to_string(group.params().size()) +
                   " in the optimizer");
  LoadedGroup out;
  out.options = group.options().clone();
  for (const auto& [name, current] : out.options->values()) {
    double v = meta.number_at<double>(prefix + name);
    if (!out.options->set_value(name, v))
      fail(path, "metadata entry " + quoted(prefix + name) + " is " + number(v) +
                     ", expected 0 or 1 (a bool option)");
  }
  try {
    opt.check_options(*out.options);
  } catch (const std::invalid_argument& e) {
    fail(path, "param group " + std::to_string(g) + ": " + e.what());
  }
  for (size_t j = 0; j < group.params().size(); ++j) {
    if (!meta.find(slot_prefix(g, j))) continue;
    const Tensor& p = group.params()[j];
    out.states.emplace_back(optim::param_key(p), load_state(opt, c, meta, used, path, g, j, p));
  }
  return out;
}

}  // namespace

void save(const optim::Optimizer& optimizer, const std::string& path) {
  NamedTensorList tensors;
  StringPairs meta = {{checkpoint::kFormatKey, std::string(checkpoint::kOptimizerFormat)},
                      {"optimizer", optimizer.type_name()},
                      {"param_groups", std::to_string(optimizer.param_groups().size())}};
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    const optim::OptimizerParamGroup& group = optimizer.param_groups()[g];
    const std::string prefix = "group." + std::to_string(g) + ".";
    meta.emplace_back(prefix + "params", std::to_string(group.params().size()));
    for (const auto& [name, v] : group.options().values())
      meta.emplace_back(prefix + name, number(v));
    for (size_t j = 0; j < group.params().size(); ++j) {
      auto it = optimizer.state().find(optim::param_key(group.params()[j]));
      if (it == optimizer.state().end()) continue;
      const std::string state = slot_prefix(g, j);
      meta.emplace_back(state, "1");
      optim::StateSlots slots = it->second->slots();
      for (const auto& [name, counter] : slots.counters)
        meta.emplace_back(state + "." + name, std::to_string(*counter));
      for (const optim::StateSlots::TensorSlot& slot : slots.tensors)
        if (slot.tensor->defined())
          tensors.emplace_back(state + "." + slot.name, slot.tensor->detach());
    }
  }
  write_safetensors(path, tensors, meta);
}

void load(optim::Optimizer& optimizer, const std::string& path) {
  SafetensorsContents c = checkpoint::read(path, checkpoint::kOptimizerFormat, "an optimizer");
  Metadata meta(c, path);
  meta.get(checkpoint::kFormatKey);
  const std::string& type = meta.get("optimizer");
  if (type != optimizer.type_name())
    fail(path, "holds the state of " + quoted(type) + ", this optimizer is " +
                   quoted(optimizer.type_name()));
  auto groups = meta.number_at<int64_t>("param_groups");
  if (groups != static_cast<int64_t>(optimizer.param_groups().size()))
    fail(path, "has " + std::to_string(groups) + " param groups, the optimizer has " +
                   std::to_string(optimizer.param_groups().size()));
  std::vector<bool> used(c.tensors.size(), false);
  std::vector<LoadedGroup> loaded;
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g)
    loaded.push_back(load_group(optimizer, c, meta, used, path, g));
  for (size_t i = 0; i < c.tensors.size(); ++i)
    if (!used[i])
      fail(path, "unexpected tensor " + quoted(c.tensors[i].first) +
                     ": no state slot of this optimizer has that name");
  if (const std::string* key = meta.unused())
    fail(path, "unexpected metadata entry " + quoted(*key));

  // Everything checked: replace the options and the whole state.
  optimizer.state().clear();
  for (size_t g = 0; g < loaded.size(); ++g) {
    optimizer.param_groups()[g].set_options(std::move(loaded[g].options));
    for (auto& [key, state] : loaded[g].states) optimizer.state()[key] = std::move(state);
  }
}

}  // namespace aotgrad
