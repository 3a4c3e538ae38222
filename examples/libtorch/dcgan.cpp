// A DCGAN, LibTorch style, on the MNIST-format digits in --data (make-mnist-idx writes them): a
// generator of transposed convolutions with batch norm and ReLU, a discriminator of strided
// convolutions with batch norm and LeakyReLU, both trained with Adam on binary cross-entropy.
// Every --checkpoint-every steps it writes generator, discriminator and both optimizers with
// torch::save (one file each, in --out); --restore loads them and continues from the step they
// were written at. Each step seeds the generator from (seed, step), so a restored run repeats the
// steps of the run that wrote the checkpoint. Then times one training step eager and compiled
// (the one extra line per model: torch::aot_module).
//
//   libtorch-dcgan [--data DIR] [--steps N] [--batch-size N] [--checkpoint-every N]
//                  [--out DIR] [--restore] [--seed S]
//
// Prints "result step <k> <d_loss> <g_loss>" per step, for tests.
#include <aotgrad/serialize.h>
#include <aotgrad/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

constexpr int64_t kNoise = 16;

using torch::nn::BatchNorm2d;
using torch::nn::Conv2d;
using torch::nn::Conv2dOptions;
using torch::nn::ConvTranspose2d;
using torch::nn::ConvTranspose2dOptions;

// DCGAN's initialisation: convolution weights ~ N(0, 0.02).
template <typename Holder>
Holder normal_weights(Holder conv) {
  torch::nn::init::normal_(conv->weight, 0.0, 0.02);
  return conv;
}

// z [N, kNoise, 1, 1] -> image [N, 1, 28, 28] in (-1, 1). The layers are LibTorch holders
// registered by name, so the state is "conv1.weight", "batch_norm1.running_mean", ... as in
// LibTorch's DCGAN.
struct GeneratorImpl : torch::nn::Module {
  GeneratorImpl()
      : conv1(register_module("conv1", normal_weights(ConvTranspose2d(
                                           ConvTranspose2dOptions(kNoise, 32, 7).bias(false))))),
        batch_norm1(register_module("batch_norm1", BatchNorm2d(32))),
        conv2(register_module(
            "conv2", normal_weights(ConvTranspose2d(
                         ConvTranspose2dOptions(32, 16, 4).stride(2).padding(1).bias(false))))),
        batch_norm2(register_module("batch_norm2", BatchNorm2d(16))),
        conv3(register_module(
            "conv3", normal_weights(ConvTranspose2d(
                         ConvTranspose2dOptions(16, 1, 4).stride(2).padding(1).bias(false))))) {}
  torch::Tensor forward(const torch::Tensor& z) {
    torch::Tensor x = torch::relu(batch_norm1->forward(conv1->forward(z)));
    x = torch::relu(batch_norm2->forward(conv2->forward(x)));
    return torch::tanh(conv3->forward(x));
  }
  ConvTranspose2d conv1;
  BatchNorm2d batch_norm1;
  ConvTranspose2d conv2;
  BatchNorm2d batch_norm2;
  ConvTranspose2d conv3;
};

// image [N, 1, 28, 28] -> probability of being real [N].
struct DiscriminatorImpl : torch::nn::Module {
  DiscriminatorImpl()
      : conv1(register_module(
            "conv1",
            normal_weights(Conv2d(Conv2dOptions(1, 16, 4).stride(2).padding(1).bias(false))))),
        conv2(register_module(
            "conv2",
            normal_weights(Conv2d(Conv2dOptions(16, 32, 4).stride(2).padding(1).bias(false))))),
        batch_norm2(register_module("batch_norm2", BatchNorm2d(32))),
        conv3(register_module("conv3",
                              normal_weights(Conv2d(Conv2dOptions(32, 1, 7).bias(false))))) {}
  torch::Tensor forward(const torch::Tensor& image) {
    torch::Tensor x = torch::leaky_relu(conv1->forward(image), 0.2);
    x = torch::leaky_relu(batch_norm2->forward(conv2->forward(x)), 0.2);
    return torch::sigmoid(conv3->forward(x)).view({-1});
  }
  Conv2d conv1, conv2;
  BatchNorm2d batch_norm2;
  Conv2d conv3;
};

struct Flags {
  std::string data = "data", out = ".";
  int64_t steps = 60, batch_size = 32, checkpoint_every = 20;
  uint64_t seed = 1;
  bool restore = false;
};

Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--restore") {
      flags.restore = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "dcgan: %s needs a value\n", flag.c_str());
      std::exit(2);
    }
    std::string text = argv[++i];
    if (flag == "--data" || flag == "--out") {
      (flag == "--data" ? flags.data : flags.out) = text;
      continue;
    }
    char* end = nullptr;
    long long value = std::strtoll(text.c_str(), &end, 10);
    if (*end != '\0' || value < 0) {
      std::fprintf(stderr, "dcgan: %s expects a non-negative integer\n", flag.c_str());
      std::exit(2);
    }
    if (flag == "--steps")
      flags.steps = value;
    else if (flag == "--batch-size")
      flags.batch_size = std::max<long long>(value, 2);
    else if (flag == "--checkpoint-every")
      flags.checkpoint_every = value;
    else if (flag == "--seed")
      flags.seed = static_cast<uint64_t>(value);
    else {
      std::fprintf(stderr,
                   "dcgan: unknown flag %s (--data, --steps, --batch-size, --checkpoint-every, "
                   "--out, --restore, --seed)\n",
                   flag.c_str());
      std::exit(2);
    }
  }
  return flags;
}

struct Gan {
  std::shared_ptr<GeneratorImpl> generator = std::make_shared<GeneratorImpl>();
  std::shared_ptr<DiscriminatorImpl> discriminator = std::make_shared<DiscriminatorImpl>();
  torch::optim::Adam g_optimizer{generator->parameters(),
                                 torch::optim::AdamOptions(2e-4).betas({0.5, 0.5})};
  torch::optim::Adam d_optimizer{discriminator->parameters(),
                                 torch::optim::AdamOptions(2e-4).betas({0.5, 0.5})};
};

// One step on the real images `real`: the discriminator on real and fake, then the generator.
// Returns {d_loss, g_loss}.
template <typename G, typename D>
std::pair<double, double> train_step(Gan& gan, G&& generator, D&& discriminator,
                                     const torch::Tensor& real) {
  int64_t n = real.size(0);
  gan.d_optimizer.zero_grad();
  // Label smoothing on the real side, as the LibTorch example does.
  torch::Tensor real_labels = torch::empty({n}).uniform_(0.8, 1.0);
  torch::Tensor d_loss_real = torch::binary_cross_entropy(discriminator(real), real_labels);
  d_loss_real.backward();
  torch::Tensor fake = generator(torch::randn({n, kNoise, 1, 1}));
  torch::Tensor fake_labels = torch::zeros({n});
  torch::Tensor d_loss_fake =
      torch::binary_cross_entropy(discriminator(fake.detach()), fake_labels);
  d_loss_fake.backward();
  gan.d_optimizer.step();

  gan.g_optimizer.zero_grad();
  torch::Tensor g_loss = torch::binary_cross_entropy(discriminator(fake), torch::ones({n}));
  g_loss.backward();
  gan.g_optimizer.step();
  return {(d_loss_real + d_loss_fake).item<double>(), g_loss.item<double>()};
}

// A batch of real images in (-1, 1) drawn with the step's generator.
torch::Tensor real_batch(const torch::Tensor& images, int64_t batch_size) {
  torch::Tensor index = torch::randint(0, images.size(0), {batch_size});
  return torch::index_select(images, 0, index) * 2 - 1;
}

void save_checkpoint(Gan& gan, const std::string& dir, int64_t step) {
  torch::save(*gan.generator, dir + "/generator-checkpoint.pt");
  torch::save(*gan.discriminator, dir + "/discriminator-checkpoint.pt");
  torch::save(gan.g_optimizer, dir + "/generator-optimizer-checkpoint.pt");
  torch::save(gan.d_optimizer, dir + "/discriminator-optimizer-checkpoint.pt");
  torch::save(torch::tensor({step}), dir + "/step-checkpoint.pt");
  std::printf("-> checkpoint after step %lld\n", static_cast<long long>(step));
}

int64_t restore_checkpoint(Gan& gan, const std::string& dir) {
  torch::load(*gan.generator, dir + "/generator-checkpoint.pt");
  torch::load(*gan.discriminator, dir + "/discriminator-checkpoint.pt");
  torch::load(gan.g_optimizer, dir + "/generator-optimizer-checkpoint.pt");
  torch::load(gan.d_optimizer, dir + "/discriminator-optimizer-checkpoint.pt");
  torch::Tensor step = torch::zeros({1}, torch::kLong);
  torch::load(step, dir + "/step-checkpoint.pt");
  std::printf("restored the checkpoint written after step %lld\n",
              static_cast<long long>(step.item<int64_t>()));
  return step.item<int64_t>();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Flags flags = parse_flags(argc, argv);
    torch::manual_seed(flags.seed);
    Gan gan;
    torch::Tensor images = torch::data::datasets::MNIST(flags.data).images();
    int64_t first = flags.restore ? restore_checkpoint(gan, flags.out) + 1 : 1;
    auto eager_g = [&](const torch::Tensor& z) { return gan.generator->forward(z); };
    auto eager_d = [&](const torch::Tensor& x) { return gan.discriminator->forward(x); };
    for (int64_t step = first; step <= flags.steps; ++step) {
      torch::manual_seed(flags.seed * 1000003 + static_cast<uint64_t>(step));
      auto [d_loss, g_loss] =
          train_step(gan, eager_g, eager_d, real_batch(images, flags.batch_size));
      std::printf("result step %lld %.6f %.6f\n", static_cast<long long>(step), d_loss, g_loss);
      if (flags.checkpoint_every > 0 && step % flags.checkpoint_every == 0)
        save_checkpoint(gan, flags.out, step);
    }

    // Step time, eager and compiled (the compiled models share the eager ones' parameters).
    auto compiled_g = torch::aot_module(gan.generator);  // the one extra line, per model
    auto compiled_d = torch::aot_module(gan.discriminator);
    auto time_steps = [&](auto&& g, auto&& d) {
      train_step(gan, g, d, real_batch(images, flags.batch_size));  // warm-up (compiles)
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < 5; ++i) train_step(gan, g, d, real_batch(images, flags.batch_size));
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 5;
    };
    double eager_s = time_steps(eager_g, eager_d);
    double compiled_s = time_steps(compiled_g, compiled_d);
    std::printf("step time: eager %.2f ms, compiled %.2f ms\n", eager_s * 1e3, compiled_s * 1e3);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dcgan: %s\n", e.what());
    return 1;
  }
}
