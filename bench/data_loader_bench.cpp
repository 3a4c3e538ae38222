// Data loader throughput (issue 17 item 4): batches per second of an MNIST-format dataset with
// 0, 1 and 2 worker threads, measured in one run, min time of several epochs per setting, printed
// with the ratio to workers(0).
//
//   ./build/data_loader_bench [epochs]        (default 5)
//
// Two pipelines: MNIST + Normalize + Stack (cheap per example: workers mostly add hand-off
// cost), and the same with a per-example transform that costs about what a small augmentation
// does (three 28x28 matmuls), where worker threads should overlap the work. The IDX files are
// written to a temporary directory first (8192 images).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "aotgrad/aotgrad.h"
#include "aotgrad/data.h"

namespace ag = aotgrad;
namespace data = aotgrad::data;
using ag::Tensor;

namespace {

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

void write_mnist(const std::filesystem::path& dir, uint32_t n) {
  std::string images = be32(0x803) + be32(n) + be32(28) + be32(28);
  for (uint64_t i = 0; i < uint64_t{n} * 784; ++i)
    images += static_cast<char>((i * 2654435761u) >> 24);
  std::string labels = be32(0x801) + be32(n);
  for (uint32_t i = 0; i < n; ++i) labels += static_cast<char>(i % 10);
  std::ofstream(dir / "train-images-idx3-ubyte", std::ios::binary) << images;
  std::ofstream(dir / "train-labels-idx1-ubyte", std::ios::binary) << labels;
}

template <typename Dataset>
double best_seconds(Dataset dataset, size_t workers, int epochs, size_t& batches) {
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
      std::move(dataset), data::DataLoaderOptions().batch_size(64).workers(workers));
  double best = std::numeric_limits<double>::infinity();
  for (int e = 0; e < epochs; ++e) {
    batches = 0;
    double checksum = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (auto& batch : *loader) {
      ++batches;
      checksum += static_cast<double>(batch.target.sizes()[0]);
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (checksum <= 0) std::abort();
    best = std::min(best, s);
  }
  return best;
}

template <typename Make>
void run(const char* name, Make make, int epochs) {
  std::printf("%s\n", name);
  double base = 0;
  for (size_t workers : {0, 1, 2}) {
    size_t batches = 0;
    double s = best_seconds(make(), workers, epochs, batches);
    if (workers == 0) base = s;
    std::printf("  workers %zu: %7.1f batches/s   %.2fx workers(0)\n", workers,
                static_cast<double>(batches) / s, base / s);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("aotgrad_loader_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  write_mnist(dir, 8192);
  std::string root = dir.string();
  std::printf("data_loader_bench: 8192 MNIST-format images, batch 64, min of %d epochs\n", epochs);

  run(
      "MNIST + Normalize + Stack",
      [&] {
        return data::datasets::MNIST(root)
            .map(data::transforms::Normalize<>(0.1307, 0.3081))
            .map(data::transforms::Stack<>());
      },
      epochs);

  Tensor w = ag::randn({28, 28});
  run(
      "MNIST + a per-example transform (three 28x28 matmuls) + Stack",
      [&] {
        return data::datasets::MNIST(root)
            .map(data::transforms::TensorLambda<>([w](Tensor x) {
              Tensor y = x.reshape({28, 28});
              for (int k = 0; k < 3; ++k) y = ag::matmul(y, w).tanh();
              return y.reshape({1, 28, 28});
            }))
            .map(data::transforms::Stack<>());
      },
      epochs);
  std::filesystem::remove_all(dir);
  return 0;
}
