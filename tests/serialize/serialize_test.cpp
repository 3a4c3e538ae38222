// torch::save / torch::load (serialize.h): round trips are bit-exact, a restored GAN-style
// training run continues bit for bit, and every damaged or mismatched file is one line naming
// the file and the first entry at fault, with the target left as it was.
#include "aotgrad/serialize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "aotgrad/optim/optimizers.h"
#include "aotgrad/safetensors.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;
using ag::Tensor;

namespace {

// batch norm -> linear -> relu -> linear: parameters and buffers (running stats, an i64
// counter). fc1 is registered first so that `hidden` changes the first parameter's shape.
class Net : public ag::nn::Module {
 public:
  explicit Net(int64_t hidden = 2)
      : fc1(std::make_shared<ag::nn::LinearImpl>(16, hidden)),
        bn(std::make_shared<ag::nn::BatchNorm2dImpl>(1)),
        fc2(std::make_shared<ag::nn::LinearImpl>(hidden, 1)) {
    register_module("fc1", fc1);
    register_module("bn", bn);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) {
    Tensor h = (*bn)(x);
    return (*fc2)(ag::relu((*fc1)(h.reshape({h.size(0), 16}))));
  }
  std::shared_ptr<ag::nn::LinearImpl> fc1;
  std::shared_ptr<ag::nn::BatchNorm2dImpl> bn;
  std::shared_ptr<ag::nn::LinearImpl> fc2;
};

// Every parameter and buffer's bytes, for bit-exact comparisons.
std::vector<std::vector<double>> values_of(const ag::nn::Module& m) {
  std::vector<std::vector<double>> out;
  for (const auto& [n, t] : m.named_parameters()) out.push_back(t.to_vector<double>());
  for (const auto& [n, t] : m.named_buffers()) out.push_back(t.to_vector<double>());
  return out;
}

// The optimizer's state and options, flattened, for comparisons.
std::vector<double> state_of(const ag::optim::Optimizer& opt) {
  std::vector<double> out;
  for (const auto& group : opt.param_groups()) {
    for (const auto& [name, v] : group.options().values()) out.push_back(v);
    for (const Tensor& p : group.params()) {
      auto it = opt.state().find(ag::optim::param_key(p));
      if (it == opt.state().end()) continue;
      ag::optim::StateSlots slots = it->second->slots();
      for (auto& [name, counter] : slots.counters) out.push_back(static_cast<double>(*counter));
      for (auto& slot : slots.tensors)
        if (slot.tensor->defined())
          for (double v : slot.tensor->to_vector<double>()) out.push_back(v);
    }
  }
  return out;
}

class Serialize : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("aotgrad_serialize_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // One training step of `net` with `opt` on a fixed batch.
  static void train_step(Net& net, ag::optim::Optimizer& opt, int k) {
    ag::manual_seed(100 + k);
    Tensor x = ag::randn({4, 1, 4, 4});
    Tensor y = ag::randn({4, 1});
    opt.zero_grad();
    ag::mse_loss(net.forward(x), y).backward();
    opt.step();
  }

  fs::path dir_;
};

// The message of what `f` throws (std::invalid_argument), or "" when it throws nothing.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_file(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

}  // namespace

TEST_F(Serialize, TensorAndTensorListRoundTripBitExact) {
  ag::manual_seed(1);
  Tensor a = ag::randn({3, 4}).transpose(0, 1);  // not contiguous
  Tensor b = ag::randn({5}, ag::DType::f64);
  Tensor c = ag::from_vector(std::vector<int64_t>{1, -2, 3}, {3});
  ag::save(a, path("a.pt"));
  Tensor got;
  ag::load(got, path("a.pt"));
  EXPECT_EQ(got.sizes(), (ag::IntList{4, 3}));
  EXPECT_EQ(got.to_vector<float>(), a.to_vector<float>());

  ag::save(std::vector<Tensor>{a, b, c}, path("list.pt"));
  std::vector<Tensor> list = {ag::ones({1})};
  ag::load(list, path("list.pt"));
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(list[1].dtype(), ag::DType::f64);
  EXPECT_EQ(list[1].to_vector<double>(), b.to_vector<double>());
  EXPECT_EQ(list[2].to_vector<int64_t>(), c.to_vector<int64_t>());
}

TEST_F(Serialize, ModuleRoundTripCopiesInPlaceThroughAHolder) {
  ag::manual_seed(2);
  auto saved = std::make_shared<Net>();
  ag::optim::Adam opt_unused(saved->parameters());  // keep a user of the tensors, as in training
  saved->forward(ag::randn({4, 1, 4, 4}));  // moves the batch-norm buffers off their defaults
  ag::save(saved, path("net.pt"));          // through the shared_ptr, as through a holder

  ag::manual_seed(3);
  auto fresh = std::make_shared<Net>();
  Tensor weight = fresh->fc1->weight;
  ag::load(fresh, path("net.pt"));
  EXPECT_EQ(values_of(*fresh), values_of(*saved));
  EXPECT_TRUE(fresh->fc1->weight.is_same(weight));  // same tensor, new values
  EXPECT_TRUE(fresh->fc1->weight.requires_grad());

  // A file without our metadata (as PyTorch's safetensors writer makes) loads too.
  ag::NamedTensorList plain = saved->state_dict();
  ag::write_safetensors(path("plain.safetensors"), plain);
  Net other;
  ag::load(other, path("plain.safetensors"));
  EXPECT_EQ(values_of(other), values_of(*saved));
}

TEST_F(Serialize, OptimizerRoundTripForEveryKind) {
  auto check = [&](auto make) {
    ag::manual_seed(4);
    Net a;
    auto opt_a = make(a);
    for (int k = 0; k < 2; ++k) train_step(a, *opt_a, k);
    opt_a->param_groups()[0].options().set_lr(0.0125);  // as a scheduler would
    ag::save(*opt_a, path("opt.pt"));
    Net b;
    auto opt_b = make(b);
    ag::load(*opt_b, path("opt.pt"));
    EXPECT_EQ(state_of(*opt_b), state_of(*opt_a)) << opt_a->type_name();
    EXPECT_EQ(opt_b->param_groups()[0].options().get_lr(), 0.0125);
  };
  using namespace ag::optim;  // NOLINT
  check(
      [](Net& n) { return std::make_unique<SGD>(n.parameters(), SGDOptions(0.1).momentum(0.9)); });
  check([](Net& n) {
    return std::make_unique<Adam>(n.parameters(),
                                  AdamOptions(2e-4).betas({0.5, 0.5}).amsgrad(true));
  });
  check([](Net& n) { return std::make_unique<AdamW>(n.parameters()); });
  check([](Net& n) {
    return std::make_unique<RMSprop>(n.parameters(), RMSpropOptions().momentum(0.5).centered(true));
  });
  check([](Net& n) { return std::make_unique<Adagrad>(n.parameters()); });
}

// Train a generator and discriminator 3 steps, save both models and both optimizers, load them
// into fresh objects: the next step is bit-identical to continuing the original run.
TEST_F(Serialize, GanStyleRestoreContinuesBitForBit) {
  using ag::optim::Adam;
  using ag::optim::AdamOptions;
  ag::manual_seed(5);
  Net gen(3), disc(2);
  Adam gen_opt(gen.parameters(), AdamOptions(2e-4).betas({0.5, 0.5}));
  Adam disc_opt(disc.parameters(), AdamOptions(5e-4).betas({0.5, 0.5}));
  for (int k = 0; k < 3; ++k) {
    train_step(gen, gen_opt, k);
    train_step(disc, disc_opt, 10 + k);
  }
  ag::save(gen, path("gen.pt"));
  ag::save(gen_opt, path("gen_opt.pt"));
  ag::save(disc, path("disc.pt"));
  ag::save(disc_opt, path("disc_opt.pt"));
  train_step(gen, gen_opt, 3);
  train_step(disc, disc_opt, 13);

  ag::manual_seed(6);
  Net gen2(3), disc2(2);
  Adam gen_opt2(gen2.parameters(), AdamOptions(2e-4).betas({0.5, 0.5}));
  Adam disc_opt2(disc2.parameters(), AdamOptions(5e-4).betas({0.5, 0.5}));
  ag::load(gen2, path("gen.pt"));
  ag::load(gen_opt2, path("gen_opt.pt"));
  ag::load(disc2, path("disc.pt"));
  ag::load(disc_opt2, path("disc_opt.pt"));
  train_step(gen2, gen_opt2, 3);
  train_step(disc2, disc_opt2, 13);
  EXPECT_EQ(values_of(gen2), values_of(gen));
  EXPECT_EQ(values_of(disc2), values_of(disc));
  EXPECT_EQ(state_of(gen_opt2), state_of(gen_opt));
}

// Each damaged or mismatched file: one line naming the file and the entry, target untouched.
TEST_F(Serialize, BadFilesNameTheEntryAndLeaveTheTargetUntouched) {
  ag::manual_seed(7);
  Net saved;
  ag::optim::Adam saved_opt(saved.parameters());
  train_step(saved, saved_opt, 0);
  ag::save(saved, path("net.pt"));
  ag::save(saved_opt, path("opt.pt"));
  const std::string good = read_file(path("net.pt"));

  Net target;
  ag::optim::Adam target_opt(target.parameters());
  train_step(target, target_opt, 1);
  const auto before = values_of(target);
  const auto opt_before = state_of(target_opt);
  auto expect_refused = [&](const std::string& file, const std::string& want) {
    std::string e = error_of([&] { ag::load(target, path(file)); });
    EXPECT_NE(e.find(path(file)), std::string::npos) << e;
    EXPECT_NE(e.find(want), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_EQ(values_of(target), before) << file;
  };

  write_file(path("truncated.pt"), good.substr(0, good.size() - 3));
  expect_refused("truncated.pt", "safetensors file");
  std::string flipped = good;
  // Byte 10 is the first '_' of "__metadata__", the header's first key: it becomes DEL (0x7f),
  // which the message shows escaped.
  flipped[10] = static_cast<char>(flipped[10] ^ 0x20);
  write_file(path("flipped.pt"), flipped);
  expect_refused("flipped.pt", "tensor '\\x7f_metadata__' has no \"dtype\"");

  Net wide(3);  // fc1 and fc2 have other shapes
  ag::save(wide, path("wide.pt"));
  expect_refused("wide.pt", "tensor 'fc1.weight' is f32[3, 16] but the module's is f32[2, 16]");

  ag::NamedTensorList entries = saved.state_dict();
  ag::NamedTensorList missing(entries.begin() + 1, entries.end());
  ag::write_safetensors(path("missing.pt"), missing);
  expect_refused("missing.pt", "has no tensor '" + entries.front().first + "'");
  ag::NamedTensorList extra = entries;
  extra.emplace_back("head.weight", ag::ones({1}));
  ag::write_safetensors(path("extra.pt"), extra);
  expect_refused("extra.pt", "unexpected tensor 'head.weight'");
  expect_refused("opt.pt", "is an optimizer checkpoint, expected a module checkpoint");
  expect_refused("absent.pt", "safetensors file");

  // The optimizer: another kind, another model, a damaged option; its state stays.
  auto expect_opt_refused = [&](const std::string& file, const std::string& want) {
    std::string e = error_of([&] { ag::load(target_opt, path(file)); });
    EXPECT_NE(e.find(path(file)), std::string::npos) << e;
    EXPECT_NE(e.find(want), std::string::npos) << e;
    EXPECT_EQ(state_of(target_opt), opt_before) << file;
  };
  expect_opt_refused("net.pt", "is a module checkpoint, expected an optimizer checkpoint");
  ag::optim::SGD sgd(saved.parameters(), ag::optim::SGDOptions(0.1).momentum(0.9));
  train_step(saved, sgd, 2);
  ag::save(sgd, path("sgd.pt"));
  expect_opt_refused("sgd.pt", "holds the state of 'SGD', this optimizer is 'Adam'");
  ag::optim::Adam wide_opt(wide.parameters());
  train_step(wide, wide_opt, 3);
  ag::save(wide_opt, path("wide_opt.pt"));
  expect_opt_refused(
      "wide_opt.pt",
      "tensor 'state.0.0.exp_avg' is f32[3, 16] but parameter 0 of group 0 is f32[2, 16]");
  ag::SafetensorsContents c = ag::read_safetensors(path("opt.pt"));
  for (auto& [k, v] : c.metadata)
    if (k == "group.0.amsgrad") v = "2";
  ag::write_safetensors(path("bad_option.pt"), c.tensors, c.metadata);
  expect_opt_refused("bad_option.pt", "'group.0.amsgrad' is 2, expected 0 or 1");
  c = ag::read_safetensors(path("opt.pt"));
  c.tensors.erase(c.tensors.begin());
  ag::write_safetensors(path("no_state.pt"), c.tensors, c.metadata);
  expect_opt_refused("no_state.pt", "has no tensor 'state.");
}
