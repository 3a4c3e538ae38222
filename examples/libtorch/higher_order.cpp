// Higher-order gradients, LibTorch style: torch::autograd::grad(..., /*create_graph=*/true)
// records the backward pass, so its result can be differentiated again.
//
// 1. A Hessian-vector product of f(x) = x.(A x) / 2 + sum(x^3) / 3, whose Hessian is
//    (A + A^T) / 2 + diag(2 x), checked against that formula.
// 2. WGAN-GP critic steps on an MLP critic (a TORCH_MODULE): the gradient penalty
//    (||d critic / d x||_2 - 1)^2 on points between real and fake samples is part of the loss, so
//    its gradient reaches the critic's weights through the recorded backward. Checked: that
//    gradient against central finite differences (the weights nudged through an accessor).
// 3. The one extra line, torch::aot_module(critic): the first-order (Wasserstein) part compiles
//    and matches eager; the penalty needs the critic's backward differentiated again, which a
//    compiled backward refuses in one line (as PyTorch's AOTAutograd), so it stays eager.
//
//   libtorch-higher_order [--steps N] [--seed S]
//
// Prints "result <key> <values>" lines last, for tests; exits 1 if a check fails.
#include <aotgrad/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct CriticImpl : torch::nn::Module {
  CriticImpl(int64_t in, int64_t hidden)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, 1))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::tanh(fc1(x))).squeeze(1); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Critic);

struct Flags {
  int64_t steps = 5;
  uint64_t seed = 0;
};

Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    char* end = nullptr;
    double value = std::strtod(argv[i + 1], &end);
    if (*end != '\0' || value < 0) {
      std::fprintf(stderr, "higher_order: %s expects a non-negative number\n", flag.c_str());
      std::exit(2);
    }
    if (flag == "--steps")
      flags.steps = static_cast<int64_t>(value);
    else if (flag == "--seed")
      flags.seed = static_cast<uint64_t>(value);
    else {
      std::fprintf(stderr, "higher_order: unknown flag %s (--steps, --seed)\n", flag.c_str());
      std::exit(2);
    }
  }
  return flags;
}

// The largest |Hv - H v| over the entries, H from the formula.
double hessian_vector_product_error() {
  const int64_t n = 5;
  torch::Tensor a = torch::randn({n, n}, torch::kDouble);
  torch::Tensor x = torch::randn({n}, torch::dtype(torch::kDouble).requires_grad(true));
  torch::Tensor v = torch::randn({n}, torch::kDouble);
  torch::Tensor f = (x * torch::matmul(a, x)).sum() * 0.5 + x.pow(3).sum() / 3;
  torch::Tensor g = torch::autograd::grad({f}, {x}, {}, /*retain_graph=*/true,
                                          /*create_graph=*/true)[0];
  torch::Tensor hv = torch::autograd::grad({(g * v).sum()}, {x})[0];

  torch::Tensor expected = torch::matmul((a + a.t()) * 0.5, v) + 2 * x.detach() * v;
  double err = (hv - expected).abs().amax({0}).item<double>();
  std::printf("Hessian-vector product: max |Hv - formula| = %.3g\n", err);
  return err;
}

// (||d critic / d x|| - 1)^2 averaged over the points real * t + fake * (1 - t).
template <typename Forward>
torch::Tensor gradient_penalty(Forward&& critic, const torch::Tensor& real,
                               const torch::Tensor& fake, const torch::Tensor& t) {
  torch::Tensor mixed = (real * t + fake * (1 - t)).detach().requires_grad_(true);
  torch::Tensor score = critic(mixed);
  torch::Tensor g = torch::autograd::grad({score}, {mixed}, {torch::ones_like(score)},
                                          /*retain_graph=*/true, /*create_graph=*/true)[0];
  return (g.norm(2, 1) - 1).pow(2).mean();
}

// The largest relative difference between d(penalty)/d(fc1.weight) from the recorded backward
// and central finite differences, over a few entries of the weight.
double penalty_gradient_error(Critic& critic, const torch::Tensor& real, const torch::Tensor& fake,
                              const torch::Tensor& t) {
  torch::Tensor weight = critic->fc1->weight;
  torch::Tensor analytic =
      torch::autograd::grad({gradient_penalty(critic, real, fake, t)}, {weight})[0];
  auto w = weight.accessor<double, 2>();  // nudges the weight in place
  auto d = analytic.accessor<double, 2>();
  const double h = 1e-6;
  double worst = 0;
  for (int64_t i = 0; i < std::min<int64_t>(w.size(0), 4); ++i)
    for (int64_t j = 0; j < w.size(1); ++j) {
      const double saved = w[i][j];  // (the penalty needs grad mode: no NoGradGuard here)
      w[i][j] = saved + h;
      double up = gradient_penalty(critic, real, fake, t).item<double>();
      w[i][j] = saved - h;
      double down = gradient_penalty(critic, real, fake, t).item<double>();
      w[i][j] = saved;
      double numeric = (up - down) / (2 * h);
      worst = std::max(worst, std::abs(numeric - d[i][j]) / std::max(1e-3, std::abs(numeric)));
    }
  std::printf("gradient penalty: max relative |recorded - finite difference| = %.3g\n", worst);
  return worst;
}

// Mean seconds per first-order critic step (the Wasserstein loss) through `critic`.
template <typename Forward>
double time_steps(Forward&& critic, torch::optim::SGD& optimizer, int reps) {
  auto step = [&] {
    torch::Tensor real = torch::randn({64, 2}, torch::kDouble) * 0.3 + 1;
    torch::Tensor fake = torch::randn({64, 2}, torch::kDouble);
    optimizer.zero_grad();
    (critic(fake).mean() - critic(real).mean()).backward();
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
  double hvp_error = hessian_vector_product_error();

  Critic critic(2, 16);
  critic->to(torch::kDouble);
  torch::optim::SGD optimizer(critic->parameters(), 0.01);
  const double lambda = 10;
  double smallest_share = INFINITY;
  for (int64_t step = 0; step < flags.steps; ++step) {
    torch::Tensor real = torch::randn({32, 2}, torch::kDouble) * 0.3 + 1;
    torch::Tensor fake = torch::randn({32, 2}, torch::kDouble);
    torch::Tensor t = torch::rand({32, 1}, torch::kDouble);
    torch::Tensor penalty = gradient_penalty(critic, real, fake, t);
    // The penalty's own share of fc1.weight's gradient: zero would mean nothing was recorded.
    torch::Tensor share_grad = torch::autograd::grad({penalty * lambda}, {critic->fc1->weight}, {},
                                                     /*retain_graph=*/true)[0];
    double share = share_grad.pow(2).sum().item<double>();
    smallest_share = std::min(smallest_share, share);
    torch::Tensor loss = critic(fake).mean() - critic(real).mean() + lambda * penalty;
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    std::printf("result step %lld %.6f %.6f\n", static_cast<long long>(step), loss.item<double>(),
                penalty.item<double>());
  }
  torch::Tensor real = torch::randn({16, 2}, torch::kDouble) * 0.3 + 1;
  torch::Tensor fake = torch::randn({16, 2}, torch::kDouble);
  torch::Tensor t = torch::rand({16, 1}, torch::kDouble);
  double fd_error = penalty_gradient_error(critic, real, fake, t);

  auto compiled = torch::aot_module(critic);  // the one extra line
  // First order: the Wasserstein term's output compiles and matches eager.
  double compiled_diff = (compiled(fake) - critic(fake)).abs().amax({0}).item<double>();
  // Second order: differentiating the compiled backward again is refused in one line.
  std::string refusal;
  try {
    auto compiled_forward = [&](const torch::Tensor& x) { return compiled(x); };
    gradient_penalty(compiled_forward, real, fake, t).backward();
  } catch (const std::exception& e) {
    refusal = e.what();
  }
  std::printf("compiled gradient penalty: %s\n", refusal.empty() ? "(ran)" : refusal.c_str());
  double eager_s = time_steps(critic, optimizer, 10);
  double compiled_s = time_steps(compiled, optimizer, 10);
  std::printf("critic step time (first order): eager %.1f us, compiled %.1f us\n", eager_s * 1e6,
              compiled_s * 1e6);

  bool refused = refusal.find("double backward") != std::string::npos;
  bool ok = hvp_error < 1e-10 && fd_error < 1e-4 && smallest_share > 0 && compiled_diff < 1e-12 &&
            refused;
  std::printf("result hvp_error %.3g\nresult fd_error %.3g\nresult penalty_share %.6g\n", hvp_error,
              fd_error, smallest_share);
  std::printf("result compiled_diff %.3g\nresult compiled_refused %d\n", compiled_diff,
              refused ? 1 : 0);
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
