// An MNIST convnet, LibTorch style: two convolutions and two linear layers trained with SGD
// (momentum) from the IDX files in --data (written by make-mnist-idx: no data set can be
// downloaded here) through torch::data (MNIST, Normalize, Stack, make_data_loader), then the
// test set's loss and accuracy. Then times one training step of the same model eager and
// compiled (the one extra line: torch::aot_module(model)).
//
//   libtorch-mnist [--data DIR] [--epochs N] [--steps N] [--batch-size N] [--seed S]
//
// --steps caps the training batches per epoch. Prints "result accuracy <fraction>" last.
#include <aotgrad/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// The layers are LibTorch's holders, registered by name, so the parameters are
// "conv1.weight", ..., "fc2.bias" as in a LibTorch program (and PyTorch's state dicts).
struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 5)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 5)))),
        fc1(register_module("fc1", torch::nn::Linear(256, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 10))) {}

  torch::Tensor forward(const torch::Tensor& input) {
    torch::Tensor x = torch::relu(torch::max_pool2d(conv1->forward(input), 2));
    x = torch::relu(torch::max_pool2d(conv2->forward(x), 2));
    x = x.view({-1, 256});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, 0.25, is_training());
    return torch::log_softmax(fc2->forward(x), 1);
  }

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
};

struct Flags {
  std::string data = "data";
  int64_t epochs = 1, steps = 150, batch_size = 32;
  uint64_t seed = 1;
};

Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], text = argv[i + 1];
    if (flag == "--data") {
      flags.data = text;
      continue;
    }
    char* end = nullptr;
    long long value = std::strtoll(text.c_str(), &end, 10);
    if (*end != '\0' || value < 0) {
      std::fprintf(stderr, "mnist: %s expects a non-negative integer\n", flag.c_str());
      std::exit(2);
    }
    if (flag == "--epochs")
      flags.epochs = value;
    else if (flag == "--steps")
      flags.steps = value;
    else if (flag == "--batch-size")
      flags.batch_size = value;
    else if (flag == "--seed")
      flags.seed = static_cast<uint64_t>(value);
    else {
      std::fprintf(stderr,
                   "mnist: unknown flag %s (--data, --epochs, --steps, --batch-size, --seed)\n",
                   flag.c_str());
      std::exit(2);
    }
  }
  if (flags.batch_size == 0) flags.batch_size = 1;
  return flags;
}

constexpr double kMean = 0.1307, kStddev = 0.3081;

template <typename Forward, typename Loader>
void train(int64_t epoch, Forward&& forward, Loader& loader, torch::optim::Optimizer& optimizer,
           int64_t max_steps) {
  int64_t step = 0;
  for (auto& batch : loader) {
    if (step++ >= max_steps) break;
    optimizer.zero_grad();
    torch::Tensor loss = torch::nll_loss(forward(batch.data), batch.target);
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();
    if (step % 50 == 0)
      std::printf("Train Epoch: %lld step %lld  Loss: %.4f\n", static_cast<long long>(epoch),
                  static_cast<long long>(step), loss.template item<float>());
  }
}

// The test set's mean loss and accuracy.
double test(NetImpl& model, const std::string& root) {
  torch::NoGradGuard no_grad;
  model.eval();
  auto dataset = torch::data::datasets::MNIST(root, torch::data::datasets::MNIST::Mode::kTest)
                     .map(torch::data::transforms::Normalize<>(kMean, kStddev))
                     .map(torch::data::transforms::Stack<>());
  size_t size = dataset.size().value();
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(dataset), torch::data::DataLoaderOptions().batch_size(256));
  double loss = 0;
  int64_t correct = 0;
  for (const auto& batch : *loader) {
    torch::Tensor output = model.forward(batch.data);
    loss += torch::nll_loss(output, batch.target, "sum").item<double>();
    correct += output.argmax(1).eq(batch.target).sum().item<int64_t>();
  }
  model.train();
  double accuracy = static_cast<double>(correct) / static_cast<double>(size);
  std::printf("Test set: Average loss: %.4f | Accuracy: %.3f\n", loss / static_cast<double>(size),
              accuracy);
  return accuracy;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Flags flags = parse_flags(argc, argv);
    torch::manual_seed(flags.seed);
    auto model = std::make_shared<NetImpl>();
    auto train_set = torch::data::datasets::MNIST(flags.data)
                         .map(torch::data::transforms::Normalize<>(kMean, kStddev))
                         .map(torch::data::transforms::Stack<>());
    auto loader = torch::data::make_data_loader(
        std::move(train_set), torch::data::DataLoaderOptions().batch_size(flags.batch_size));
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.5));

    auto start = std::chrono::steady_clock::now();
    for (int64_t epoch = 1; epoch <= flags.epochs; ++epoch)
      train(
          epoch, [&](const torch::Tensor& x) { return model->forward(x); }, *loader, optimizer,
          flags.steps);
    double eager_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double accuracy = test(*model, flags.data);

    // The same training, compiled: one more epoch of at most 20 steps, timed per step.
    auto compiled = torch::aot_module(model);  // the one extra line
    int64_t timed = std::min<int64_t>(flags.steps, 20);
    start = std::chrono::steady_clock::now();
    train(flags.epochs + 1, compiled, *loader, optimizer, timed);
    double compiled_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "step time: eager %.2f ms, compiled %.2f ms (%zu compile(s), first included)\n",
        eager_s * 1e3 / static_cast<double>(std::max<int64_t>(1, flags.epochs * flags.steps)),
        compiled_s * 1e3 / static_cast<double>(std::max<int64_t>(1, timed)),
        compiled.num_compilations());
    std::printf("result accuracy %.4f\n", accuracy);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist: %s\n", e.what());
    return 1;
  }
}
