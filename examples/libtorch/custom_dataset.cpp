// A custom dataset, LibTorch style: a torch::data::datasets::Dataset that reads binary PGM image
// files (no image library: the format is a short text header and the bytes) from a folder per
// class, DIR/<label>/<name>.pgm, as `make-mnist-idx --pgm DIR` writes them. A small classifier
// trains on four fifths of the files through a data loader and is tested on the rest. Then times
// one training step eager and compiled (the one extra line: torch::aot_module(model)).
//
//   libtorch-custom_dataset [--images DIR] [--steps N] [--batch-size N] [--seed S]
//
// Prints "result accuracy <fraction>" last.
#include <aotgrad/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace {

// A grayscale image [1, height, width] in [0, 1] from a binary PGM (P5, maxval < 256) file.
torch::Tensor read_pgm(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::string magic;
  int64_t width = 0, height = 0, maxval = 0;
  in >> magic >> width >> height >> maxval;
  if (!in || magic != "P5" || width <= 0 || height <= 0 || width > 4096 || height > 4096 ||
      maxval <= 0 || maxval > 255)
    throw std::runtime_error(path.string() +
                             ": not a binary 8-bit PGM (expected 'P5 <width> <height> <maxval>')");
  in.get();  // the one whitespace byte before the pixels
  std::vector<unsigned char> bytes(static_cast<size_t>(width * height));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (in.gcount() != static_cast<std::streamsize>(bytes.size()))
    throw std::runtime_error(path.string() + ": truncated (expected " +
                             std::to_string(bytes.size()) + " pixel bytes)");
  std::vector<float> pixels(bytes.begin(), bytes.end());
  return torch::from_vector(pixels, {1, height, width}) / static_cast<double>(maxval);
}

// The images under root/<label>/, split by position: every fifth file is the test set.
class ImageFolder : public torch::data::datasets::Dataset<ImageFolder> {
 public:
  ImageFolder(const std::filesystem::path& root, bool train) {
    std::vector<std::pair<std::filesystem::path, int64_t>> files;
    for (int64_t label = 0; label < 10; ++label) {
      std::filesystem::path dir = root / std::to_string(label);
      if (!std::filesystem::is_directory(dir)) continue;
      for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".pgm") files.emplace_back(entry.path(), label);
    }
    if (files.empty())
      throw std::runtime_error("no <label>/*.pgm images under " + root.string() +
                               " (write them with make-mnist-idx --pgm " + root.string() + ")");
    std::sort(files.begin(), files.end());
    for (size_t i = 0; i < files.size(); ++i)
      if ((i % 5 != 0) == train) files_.push_back(files[i]);
  }

  torch::data::Example<> get(size_t index) override {
    const auto& [path, label] = files_.at(index);
    return {read_pgm(path), torch::tensor({label}).squeeze()};
  }
  std::optional<size_t> size() const override { return files_.size(); }

 private:
  std::vector<std::pair<std::filesystem::path, int64_t>> files_;
};

// Two nn::Linear holders registered by name: parameters "fc1.weight", ..., "fc2.bias".
struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
      : fc1(register_module("fc1", torch::nn::Linear(784, 64))),
        fc2(register_module("fc2", torch::nn::Linear(64, 10))) {}
  torch::Tensor forward(const torch::Tensor& images) {
    return fc2->forward(torch::relu(fc1->forward(images.flatten(1))));
  }
  torch::nn::Linear fc1, fc2;
};

struct Flags {
  std::string images = "data/images";
  int64_t steps = 100, batch_size = 32;
  uint64_t seed = 1;
};

Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], text = argv[i + 1];
    if (flag == "--images") {
      flags.images = text;
      continue;
    }
    char* end = nullptr;
    long long value = std::strtoll(text.c_str(), &end, 10);
    if (*end != '\0' || value < 0) {
      std::fprintf(stderr, "custom_dataset: %s expects a non-negative integer\n", flag.c_str());
      std::exit(2);
    }
    if (flag == "--steps")
      flags.steps = value;
    else if (flag == "--batch-size")
      flags.batch_size = std::max<long long>(value, 1);
    else if (flag == "--seed")
      flags.seed = static_cast<uint64_t>(value);
    else {
      std::fprintf(stderr,
                   "custom_dataset: unknown flag %s (--images, --steps, --batch-size, --seed)\n",
                   flag.c_str());
      std::exit(2);
    }
  }
  return flags;
}

// Trains for up to `steps` batches (cycling through epochs); returns seconds per step.
template <typename Forward, typename Loader>
double train(Forward&& forward, Loader& loader, torch::optim::Adam& optimizer, int64_t steps) {
  auto start = std::chrono::steady_clock::now();
  int64_t step = 0;
  while (step < steps) {
    for (auto& batch : loader) {
      if (step++ >= steps) break;
      optimizer.zero_grad();
      torch::Tensor loss = torch::cross_entropy(forward(batch.data), batch.target);
      loss.backward();
      optimizer.step();
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds / static_cast<double>(std::max<int64_t>(steps, 1));
}

// The accuracy on the held-out fifth of the images.
double evaluate(ClassifierImpl& model, const std::string& root) {
  torch::NoGradGuard no_grad;
  auto test_set = ImageFolder(root, /*train=*/false).map(torch::data::transforms::Stack<>());
  std::vector<size_t> indices(test_set.size().value());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  torch::data::Example<> all = test_set.get_batch(indices);
  torch::Tensor predicted = model.forward(all.data).argmax(1);
  double accuracy = predicted.eq(all.target).to(torch::kFloat).mean().item<double>();
  std::printf("Test accuracy on %zu images: %.3f\n", indices.size(), accuracy);
  return accuracy;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Flags flags = parse_flags(argc, argv);
    torch::manual_seed(flags.seed);
    auto model = std::make_shared<ClassifierImpl>();
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
    auto loader = torch::data::make_data_loader(
        ImageFolder(flags.images, /*train=*/true).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions().batch_size(flags.batch_size).workers(2));

    double eager_s = train([&](const torch::Tensor& x) { return model->forward(x); }, *loader,
                           optimizer, flags.steps);

    double accuracy = evaluate(*model, flags.images);
    auto compiled = torch::aot_module(model);  // the one extra line
    double compiled_s = train(compiled, *loader, optimizer, std::min<int64_t>(flags.steps, 20));
    std::printf("step time: eager %.2f ms, compiled %.2f ms (the step that compiles included)\n",
                eager_s * 1e3, compiled_s * 1e3);
    std::printf("result accuracy %.4f\n", accuracy);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "custom_dataset: %s\n", e.what());
    return 1;
  }
}
