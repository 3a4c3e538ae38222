// Polynomial regression, LibTorch style: fits y = w . [x, x^2, x^3, x^4] + b for a random
// target polynomial with one linear layer and SGD, stopping once the batch loss is below
// --threshold (or after --steps). Then times one training step of the same model eager and
// compiled (the one extra line: torch::aot_module(model)).
//
//   libtorch-regression [--steps N] [--threshold T] [--seed S]
//
// Prints "result loss <value>" and "result steps <n>" last, for tests.
#include <aotgrad/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

constexpr int64_t kDegree = 4;

// [x, x^2, x^3, x^4] for a column x of shape [n, 1].
torch::Tensor make_features(const torch::Tensor& x) {
  std::vector<torch::Tensor> powers;
  for (int64_t i = 1; i <= kDegree; ++i) powers.push_back(x.pow(static_cast<double>(i)));
  return torch::cat(powers, 1);
}

// A batch of (features, targets) under the hidden polynomial.
std::pair<torch::Tensor, torch::Tensor> get_batch(const torch::Tensor& w, const torch::Tensor& b,
                                                  int64_t batch_size) {
  torch::Tensor x = make_features(torch::randn({batch_size, 1}));
  return {x, x.mm(w) + b};
}

struct Flags {
  int64_t steps = 2000;
  double threshold = 1e-3;
  uint64_t seed = 1;
};

Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    char* end = nullptr;
    double value = std::strtod(argv[i + 1], &end);
    if (*end != '\0' || value < 0) {
      std::fprintf(stderr, "regression: %s expects a non-negative number\n", flag.c_str());
      std::exit(2);
    }
    if (flag == "--steps")
      flags.steps = static_cast<int64_t>(value);
    else if (flag == "--threshold")
      flags.threshold = value;
    else if (flag == "--seed")
      flags.seed = static_cast<uint64_t>(value);
    else {
      std::fprintf(stderr, "regression: unknown flag %s (--steps, --threshold, --seed)\n",
                   flag.c_str());
      std::exit(2);
    }
  }
  return flags;
}

// Mean seconds per training step of `forward` over `reps` steps (after one warm-up step).
template <typename Forward>
double time_steps(Forward&& forward, torch::optim::SGD& optimizer, const torch::Tensor& w,
                  const torch::Tensor& b, int reps) {
  auto step = [&] {
    auto [x, y] = get_batch(w, b, 32);
    optimizer.zero_grad();
    torch::Tensor loss = torch::smooth_l1_loss(forward(x), y);
    loss.backward();
    optimizer.step();
  };
  step();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) step();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags = parse_flags(argc, argv);
  torch::manual_seed(flags.seed);
  torch::Tensor w_target = torch::randn({kDegree, 1}) * 0.5;
  torch::Tensor b_target = torch::randn({1}) * 5;

  // One linear layer y = x W^T + b over the polynomial features, LibTorch's default init.
  torch::nn::Linear model(kDegree, 1);
  torch::optim::SGD optimizer(model->parameters(), 0.1);

  double loss = 0;
  int64_t step = 0;
  while (step < flags.steps) {
    auto [x, y] = get_batch(w_target, b_target, 32);
    optimizer.zero_grad();
    torch::Tensor output = torch::smooth_l1_loss(model->forward(x), y);
    loss = output.item<double>();
    output.backward();
    optimizer.step();
    ++step;
    if (loss < flags.threshold) break;
  }
  std::printf("Loss: %.6f after %lld batches\n", loss, static_cast<long long>(step));
  std::cout << "==> Learned weights: " << model->weight.view({-1}) << "\n";
  std::cout << "==> Actual weights:  " << w_target.view({-1}) << std::endl;

  auto compiled = torch::aot_module(model);  // the one extra line
  double eager_s = time_steps([&](const torch::Tensor& x) { return model->forward(x); }, optimizer,
                              w_target, b_target, 20);
  double compiled_s = time_steps([&](const torch::Tensor& x) { return compiled(x); }, optimizer,
                                 w_target, b_target, 20);
  std::printf("step time: eager %.1f us, compiled %.1f us\n", eager_s * 1e6, compiled_s * 1e6);
  std::printf("result loss %.6f\nresult steps %lld\n", loss, static_cast<long long>(step));
  return 0;
}
