// The caching CPU allocator against the C library's malloc (AOTGRAD_ALLOCATOR=system): training
// step time and minor page faults per step, measured in one run, printed as ratios.
//
//   ./build/alloc_bench [rounds]        (default 5)
//
// The allocator mode is fixed per process (read once from AOTGRAD_ALLOCATOR), so this program
// re-runs itself as a child in each mode, alternating modes round after round so both see the same
// machine noise, and keeps each mode's best round. A child builds the model, warms up, then times
// `steps` training steps (zero_grad, forward, MSE loss, backward, SGD update) and counts the minor
// page faults (getrusage ru_minflt) they take.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/memory.h"
#include "aotgrad/nn.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Tensor;

namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

struct Sample {
  double ms = std::numeric_limits<double>::infinity();  // median step time
  double faults = 0;                                    // minor page faults per step
  double cached_mb = 0;                                 // what the cache held at the end
};

std::shared_ptr<nn::Module> make_model(const std::string& name) {
  auto m = std::make_shared<nn::SequentialImpl>();
  if (name == "mlp") {
    for (int i = 0; i < 4; ++i) {
      m->push_back(std::make_shared<nn::LinearImpl>(1024, 1024));
      if (i < 3) m->push_back(std::make_shared<nn::GELUImpl>());
    }
  } else {
    m->push_back(std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024));
  }
  return m;
}

// Runs in the child: prints "ms faults cached_mb".
int child(const std::string& name, int steps) {
  ag::manual_seed(0);
  auto model = make_model(name);
  Tensor x = name == "mlp" ? ag::randn({64, 1024}) : ag::randn({8, 128, 256});
  Tensor target = ag::randn(x.sizes());
  ag::optim::SGD opt(model->parameters(), 1e-4);
  auto step = [&] {
    opt.zero_grad();
    ag::mse_loss(model->forward(x), target).backward();
    opt.step();
  };
  for (int i = 0; i < 3; ++i) step();
  std::vector<double> ms;
  long f0 = minor_faults();
  for (int i = 0; i < steps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  long f1 = minor_faults();
  std::sort(ms.begin(), ms.end());
  std::printf("%.4f %.2f %.2f\n", ms[ms.size() / 2], static_cast<double>(f1 - f0) / steps,
              static_cast<double>(ag::memory_stats().bytes_cached) / (1 << 20));
  return 0;
}

Sample run_child(const std::string& self, const std::string& mode, const std::string& name, int steps) {
  std::string cmd = "AOTGRAD_ALLOCATOR=" + mode + " '" + self + "' --child " + name + " " + std::to_string(steps);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    std::perror("alloc_bench: popen");
    std::exit(1);
  }
  Sample s;
  if (std::fscanf(p, "%lf %lf %lf", &s.ms, &s.faults, &s.cached_mb) != 3) {
    std::fprintf(stderr, "alloc_bench: child '%s' printed no result\n", cmd.c_str());
    std::exit(1);
  }
  pclose(p);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "--child") == 0) return child(argv[2], std::atoi(argv[3]));
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) {
    std::perror("alloc_bench: readlink /proc/self/exe");
    return 1;
  }
  self[len] = '\0';

  struct Model {
    const char* name;
    const char* label;
    int steps;
  };
  const Model models[] = {{"mlp", "MLP 4x Linear(1024)+GELU, batch 64", 20},
                          {"block", "transformer block d=256, seq 128, batch 8", 10}};
  std::printf("%-44s %10s %10s %9s %12s %12s %9s %10s\n", "training step (fwd+bwd+SGD)", "caching ms",
              "system ms", "sys/cache", "faults/step", "faults/step", "sys/cache", "cached MB");
  std::printf("%-44s %10s %10s %9s %12s %12s %9s %10s\n", "", "", "", "time", "caching", "system",
              "faults", "");
  for (const Model& m : models) {
    Sample best_c, best_s;
    for (int r = 0; r < rounds; ++r) {
      Sample c = run_child(self, "caching", m.name, m.steps);
      Sample s = run_child(self, "system", m.name, m.steps);
      if (c.ms < best_c.ms) best_c = c;
      if (s.ms < best_s.ms) best_s = s;
    }
    std::printf("%-44s %10.2f %10.2f %9.2f %12.1f %12.1f %9.1f %10.1f\n", m.label, best_c.ms, best_s.ms,
                best_s.ms / best_c.ms, best_c.faults, best_s.faults,
                best_s.faults / std::max(best_c.faults, 0.1), best_c.cached_mb);
  }
  std::printf("(best of %d alternating rounds; each round the median step of one child process per mode)\n",
              rounds);
  return 0;
}
