// Eager time of each op the reference models run, at the models' shapes, against PyTorch 1.13
// measured in the same run:
//
//   bench/ops_peer.sh            (runs bench/torch_ops.py, then this with TORCH_OPS_JSON set)
//   ./build/ops_bench [samples]  (our times only)
//
// Every case has the name bench/torch_ops.py gives the same PyTorch call; ops PyTorch reaches
// only through autograd (gelu_backward, native_layer_norm_backward, ...) are called through the
// op table here and through torch.ops.aten there. A sample times enough back-to-back calls to
// fill about 2 ms; the table prints min and median over the samples (min: the least disturbed
// on a shared machine) in microseconds per call, and PyTorch's min / ours (above 1 we are
// faster). Results are dropped as they come, as in a training step.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/indexing.h"
#include "ops/op.h"
#include "torch_peer.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

struct Case {
  std::string name;
  std::function<void()> run;
};

std::vector<Tensor> call(const char* op, ag::ops::OpArgs args) {
  return ag::ops::dispatch(ag::ops::lookup(op), std::move(args));
}

void add_linear_cases(std::vector<Case>& cases, const std::string& prefix, int64_t rows,
                      int64_t n_in, int64_t n_out) {
  Tensor x = ag::randn({rows, n_in}), w = ag::randn({n_out, n_in}), b = ag::randn({n_out});
  Tensor g = ag::randn({rows, n_out});
  cases.push_back({prefix + "linear", [=] { ag::linear(x, w, b); }});
  cases.push_back({prefix + "mm_grad_input", [=] { ag::mm(g, w); }});
  cases.push_back({prefix + "mm_grad_weight", [=] { ag::mm(ag::t(g), x); }});
}

std::vector<Case> model_cases() {
  std::vector<Case> c;
  // MLP: 4 x Linear(1024, 1024), batch 64.
  Tensor x = ag::randn({64, 1024}), g = ag::randn({64, 1024});
  add_linear_cases(c, "mlp.", 64, 1024, 1024);
  c.push_back({"mlp.sum_bias_grad", [=] { ag::sum(g, {0}); }});
  c.push_back({"mlp.gelu", [=] { ag::gelu(x); }});
  c.push_back({"mlp.gelu_backward", [=] {
                 call("aten.gelu_backward.default", {g, x, std::string("none")});
               }});
  c.push_back({"mlp.mse_loss", [=] { ag::mse_loss(x, g); }});
  Tensor one = ag::ones({});
  c.push_back({"mlp.mse_loss_backward", [=] {
                 call("aten.mse_loss_backward.default", {one, x, g, int64_t{1}});
               }});
  // Transformer block: tokens 8 x 128, d 256, 4 heads of 64, MLP 1024.
  Tensor x3 = ag::randn({8, 128, 256}), lw = ag::randn({256}), lb = ag::randn({256});
  Tensor g3 = ag::randn({8, 128, 256});
  auto [ln, mean, rstd] = ag::native_layer_norm(x3, {256}, lw, lb, 1e-5);
  c.push_back({"block.layer_norm", [=] { ag::native_layer_norm(x3, {256}, lw, lb, 1e-5); }});
  c.push_back({"block.layer_norm_backward", [=] {
                 call("aten.native_layer_norm_backward.default",
                      {g3, x3, ag::IntList{256}, mean, rstd, lw, lb, ag::IntList{1, 1, 1}});
               }});
  add_linear_cases(c, "block.", 1024, 256, 768);
  c.back().name += "_qkv";
  c[c.size() - 2].name += "_qkv";
  c[c.size() - 3].name += "_qkv";
  for (auto [name, n_in, n_out] : {std::tuple<const char*, int64_t, int64_t>{"proj", 256, 256},
                                   {"fc1", 256, 1024},
                                   {"fc2", 1024, 256}}) {
    add_linear_cases(c, "block.", 1024, n_in, n_out);
    for (size_t k = c.size() - 3; k < c.size(); ++k) c[k].name += std::string("_") + name;
  }
  Tensor gq = ag::randn({1024, 768});
  c.push_back({"block.sum_bias_grad", [=] { ag::sum(gq, {0}); }});
  Tensor qkv = ag::randn({8, 128, 768});
  Tensor q = ag::transpose(ag::view(ag::split(qkv, 256, 2)[0], {8, 128, 4, 64}), 1, 2);
  c.push_back({"block.heads_copy", [=] { ag::contiguous(q); }});
  c.push_back({"block.heads_t_copy", [=] { ag::contiguous(ag::transpose(q, -2, -1)); }});
  Tensor qc = ag::randn({32, 128, 64}), kc = ag::randn({32, 64, 128});
  c.push_back({"block.bmm_qk", [=] { ag::bmm(qc, kc); }});
  Tensor att = ag::randn({8, 4, 128, 128});
  std::vector<bool> future(128 * 128);
  for (int64_t i = 0; i < 128; ++i)
    for (int64_t j = 0; j < 128; ++j) future[static_cast<size_t>(i * 128 + j)] = j > i;
  Tensor mask = ag::from_vector(future, {128, 128});
  const double inf = std::numeric_limits<double>::infinity();
  c.push_back({"block.mul_scale", [=] { ag::mul(att, 0.125); }});
  c.push_back({"block.masked_fill", [=] { ag::masked_fill(att, mask, -inf); }});
  Tensor p = ag::_softmax(ag::masked_fill(att, mask, -inf), -1), ga = ag::randn({8, 4, 128, 128});
  c.push_back({"block.softmax", [=] { ag::_softmax(att, -1); }});
  c.push_back({"block.softmax_backward", [=] {
                 call("aten._softmax_backward_data.default", {ga, p, int64_t{-1}, ag::DType::f32});
               }});
  Tensor pc = ag::randn({32, 128, 128}), vc = ag::randn({32, 128, 64});
  c.push_back({"block.bmm_av", [=] { ag::bmm(pc, vc); }});
  Tensor y = ag::randn({8, 4, 128, 64});
  c.push_back({"block.merge_heads_copy", [=] { ag::contiguous(ag::transpose(y, 1, 2)); }});
  c.push_back({"block.add_residual", [=] { ag::add(x3, g3); }});
  Tensor h = ag::randn({1024, 1024}), gh = ag::randn({1024, 1024});
  c.push_back({"block.gelu", [=] { ag::gelu(h); }});
  c.push_back({"block.gelu_backward", [=] {
                 call("aten.gelu_backward.default", {gh, h, std::string("none")});
               }});
  // Copies and reductions of issue 11 items 3 and 4 beyond the models.
  Tensor w = ag::randn({1024, 1024});
  c.push_back({"copy.transpose_1024", [=] { ag::contiguous(ag::t(w)); }});
  c.push_back({"copy.contiguous_1024", [=] { ag::clone(w); }});
  c.push_back({"reduce.sum_rows_1024", [=] { ag::sum(h, {-1}); }});
  c.push_back({"reduce.sum_cols_1024", [=] { ag::sum(h, {0}); }});
  c.push_back({"reduce.sum_all_1024", [=] { ag::sum(h); }});
  c.push_back({"reduce.amax_rows_1024", [=] { ag::amax(h, {-1}); }});
  c.push_back({"reduce.var_rows_1024", [=] { ag::var(h, ag::IntList{-1}); }});
  c.push_back({"nn.log_softmax_1024", [=] { ag::_log_softmax(h, -1); }});
  std::vector<int64_t> labels(1024);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 7919) % 1024);
  Tensor tgt = ag::from_vector(labels, {1024});
  c.push_back({"nn.cross_entropy_1024", [=] { ag::cross_entropy(h, tgt); }});
  return c;
}

// {min, median} milliseconds per call over `samples` samples of about 2 ms each.
std::pair<double, double> time_ms(const std::function<void()>& fn, int samples) {
  fn();
  double t0 = torch_peer::now_ms();
  fn();
  const double once = torch_peer::now_ms() - t0;
  const int inner = std::max(1, static_cast<int>(2.0 / std::max(once, 1e-4)));
  std::vector<double> times;
  for (int s = 0; s < samples; ++s) {
    t0 = torch_peer::now_ms();
    for (int i = 0; i < inner; ++i) fn();
    times.push_back((torch_peer::now_ms() - t0) / inner);
  }
  return {torch_peer::min_of(times), torch_peer::median_of(times)};
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::max(5, std::atoi(argv[1])) : 15;
  const torch_peer::NumberTable torch = torch_peer::NumberTable::from_env("TORCH_OPS_JSON");
  ag::manual_seed(0);
  ag::NoGradGuard no_grad;
  std::printf("%-30s %21s %21s %11s   (%d threads; us per call)\n", "op", "ours: min (median)",
              "pytorch: min (median)", "torch/ours", omp_get_max_threads());
  for (const Case& c : model_cases()) {
    const auto [lo, med] = time_ms(c.run, samples);
    const auto tlo = torch.get(c.name + ".ms_min"), tmed = torch.get(c.name + ".ms_median");
    char peer[48] = "-", ratio[16] = "-";
    if (tlo && tmed) {
      std::snprintf(peer, sizeof peer, "%9.1f (%9.1f)", *tlo * 1e3, *tmed * 1e3);
      std::snprintf(ratio, sizeof ratio, "%.2f", *tlo / lo);
    }
    std::printf("%-30s %9.1f (%9.1f) %21s %11s\n", c.name.c_str(), lo * 1e3, med * 1e3, peer,
                ratio);
  }
  return 0;
}
