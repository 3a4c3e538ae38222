// Uses an installed aotgrad: compiles a small loss with aot_function, runs backward, checks the
// gradient against its closed form, and round-trips it through a safetensors file. Prints
// "consumer: ok" and exits 0 when every check holds.
#include <aotgrad/aotgrad.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace ag = aotgrad;

int main() {
  ag::Tensor x = ag::from_vector(std::vector<float>{0.5f, -1.0f, 2.0f, 0.25f}, {2, 2});
  ag::Tensor w = ag::from_vector(std::vector<float>{1.0f, 2.0f, -0.5f, 0.0f}, {2, 2});
  w.requires_grad_();
  // loss = sum(tanh(x @ w)); d loss / d w = x^T (1 - tanh(x @ w)^2)
  auto step = ag::aot_function(
      [](const ag::Tensor& a, const ag::Tensor& b) { return ag::matmul(a, b).tanh().sum(); },
      ag::AotConfig{.partitioner = "min_cut", .name = "consumer_loss"});
  ag::Tensor loss = step(x, w);
  loss.backward();

  std::vector<float> xv = x.to_vector<float>(), wv = w.detach().to_vector<float>();
  std::vector<float> grad = w.grad().to_vector<float>();
  bool ok = true;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      double expect = 0;
      for (int r = 0; r < 2; ++r) {
        double z = xv[r * 2 + 0] * wv[0 * 2 + j] + xv[r * 2 + 1] * wv[1 * 2 + j];
        expect += xv[r * 2 + i] * (1 - std::tanh(z) * std::tanh(z));
      }
      ok = ok && std::abs(grad[i * 2 + j] - expect) < 1e-5;
    }

  const std::string path = "consumer_grad.safetensors";
  ag::write_safetensors(path, {{"w.grad", w.grad()}}, {{"made_by", "examples/consumer"}});
  ag::SafetensorsContents back = ag::read_safetensors(path);
  std::remove(path.c_str());
  ok = ok && back.tensors.size() == 1 && back.tensors[0].second.to_vector<float>() == grad;

  std::printf("consumer: loss %.6f, compiled %zu graph(s), gradient %s\n", loss.item<double>(),
              step.num_compilations(), ok ? "matches its closed form" : "WRONG");
  std::printf("consumer: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
