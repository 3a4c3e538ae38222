// Higher-order gradients in eager mode, the two ways they are used most:
//
// 1. A Hessian-vector product: grad(<grad f(x), v>, x) with create_graph=true on the first grad,
//    checked against the analytic Hessian of f(x) = x^T A x / 2 + sum(sin x), which is
//    (A + A^T) / 2 - diag(sin x).
// 2. A WGAN-GP critic step: the gradient penalty (||d critic / d x||_2 - 1)^2 on points between
//    real and fake samples is part of the loss, so its gradient reaches the critic's weights
//    through the recorded backward pass. Printed: the loss, the penalty, and how much of the
//    weights' gradient the penalty contributes.
//
//   ./build/higher_order        exits 1 if the Hessian-vector product or the penalty is wrong
//
// aot_function's compiled backward cannot be differentiated again (as PyTorch's AOTAutograd), so
// the critic here runs eagerly.
#include <cmath>
#include <cstdio>
#include <vector>

#include "aotgrad/aotgrad.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::autograd::grad;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// Returns the largest error of the Hessian-vector product against the analytic Hessian.
double hessian_vector_product() {
  const int64_t n = 4;
  Tensor a = ag::randn({n, n}, ag::DType::f64);
  Tensor x = ag::randn({n}, ag::DType::f64).requires_grad_();
  Tensor v = ag::randn({n}, ag::DType::f64);
  Tensor f = (x * ag::matmul(a, x)).sum() * 0.5 + ag::sin(x).sum();
  Tensor g = grad({f}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  Tensor hv = grad({(g * v).sum()}, {x})[0];

  std::vector<double> av = a.to_vector<double>(), xv = x.to_vector<double>();
  std::vector<double> h(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      h[i * n + j] = (av[i * n + j] + av[j * n + i]) / 2 - (i == j ? std::sin(xv[i]) : 0.0);
  Tensor expected = ag::matmul(ag::from_vector(h, {n, n}), v);
  double err = max_abs_diff(hv, expected);
  std::printf("Hessian-vector product: max |Hv - analytic| = %.3g\n", err);
  return err;
}

struct Critic {
  Tensor w1 = (ag::randn({16, 2}) * 0.5).requires_grad_();
  Tensor b1 = ag::zeros({16}).requires_grad_();
  Tensor w2 = (ag::randn({1, 16}) * 0.5).requires_grad_();
  Tensor b2 = ag::zeros({1}).requires_grad_();

  Tensor operator()(const Tensor& x) const {
    return ag::linear(ag::tanh(ag::linear(x, w1, b1)), w2, b2).squeeze(1);
  }
  std::vector<Tensor> params() const { return {w1, b1, w2, b2}; }
};

// (||d critic / d x|| - 1)^2 averaged over points between real and fake.
Tensor gradient_penalty(const Critic& critic, const Tensor& real, const Tensor& fake) {
  Tensor t = ag::rand({real.sizes()[0], 1});
  Tensor mixed = (real * t + fake * (1.0 - t)).detach().requires_grad_();
  Tensor score = critic(mixed);
  Tensor g = grad({score}, {mixed}, {ag::ones_like(score)}, std::nullopt,
                  /*create_graph=*/true)[0];
  Tensor norm = ag::sqrt(ag::sum(g * g, {1}) + 1e-12);
  return ag::mean((norm - 1.0) * (norm - 1.0));
}

// A few critic steps; returns false if the penalty did not reach the weights' gradient.
bool wgan_gp_steps() {
  Critic critic;
  const double lambda = 10.0, lr = 0.01;
  bool contributes = true;
  for (int step = 0; step < 5; ++step) {
    Tensor real = ag::randn({32, 2}) * 0.3 + 1.0;
    Tensor fake = ag::randn({32, 2});
    Tensor wasserstein = ag::mean(critic(fake)) - ag::mean(critic(real));
    Tensor penalty = gradient_penalty(critic, real, fake);
    // The penalty's own share of w1's gradient: zero would mean the backward was not recorded.
    Tensor penalty_grad = grad({penalty * lambda}, {critic.w1}, {}, /*retain_graph=*/true)[0];
    double share = ag::sum(penalty_grad * penalty_grad).item<float>();
    contributes = contributes && share > 0;
    Tensor loss = wasserstein + penalty * lambda;
    loss.backward();
    {
      ag::NoGradGuard no_grad;
      for (Tensor& p : critic.params()) {
        p.add_(p.grad(), -lr);
        p.set_grad(Tensor());
      }
    }
    std::printf("step %d: loss %.4f  penalty %.4f  |d(penalty)/d w1|^2 %.4g\n", step,
                loss.item<float>(), penalty.item<float>(), share);
  }
  return contributes;
}

}  // namespace

int main() {
  ag::manual_seed(0);
  bool ok = hessian_vector_product() < 1e-10;
  ok = wgan_gp_steps() && ok;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
