// The MNIST reader over IDX files written here: values, any image count and size, and one clear
// line for each malformed file.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "aotgrad/data.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using data::datasets::MNIST;
using testing::contains;
using testing::error_of;

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string images_file(uint32_t n, uint32_t rows, uint32_t cols) {
  std::string s = be32(0x803) + be32(n) + be32(rows) + be32(cols);
  for (uint32_t i = 0; i < n * rows * cols; ++i) s += static_cast<char>((i * 7) % 256);
  return s;
}

std::string labels_file(uint32_t n) {
  std::string s = be32(0x801) + be32(n);
  for (uint32_t i = 0; i < n; ++i) s += static_cast<char>(i % 10);
  return s;
}

class MnistFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("aotgrad_mnist_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  std::string root() const { return dir_.string(); }
  std::filesystem::path dir_;
};

TEST_F(MnistFiles, ReadsImagesScaledAndLabels) {
  write("train-images-idx3-ubyte", images_file(5, 3, 4));
  write("train-labels-idx1-ubyte", labels_file(5));
  MNIST mnist(root());
  EXPECT_TRUE(mnist.is_train());
  EXPECT_EQ(*mnist.size(), 5u);
  EXPECT_EQ(mnist.images().sizes(), (IntList{5, 1, 3, 4}));
  data::Example<> e = mnist.get(2);
  EXPECT_EQ(e.target.item<int64_t>(), 2);
  std::vector<float> px = testing::values(e.data);
  ASSERT_EQ(px.size(), 12u);
  EXPECT_FLOAT_EQ(px[0], static_cast<float>((24 * 7) % 256) / 255.0f);
  EXPECT_FLOAT_EQ(px[11], static_cast<float>((35 * 7) % 256) / 255.0f);

  write("t10k-images-idx3-ubyte", images_file(2, 28, 28));
  write("t10k-labels-idx1-ubyte", labels_file(2));
  MNIST test(root(), MNIST::Mode::kTest);
  EXPECT_FALSE(test.is_train());
  EXPECT_EQ(test.images().sizes(), (IntList{2, 1, 28, 28}));

  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
      MNIST(root()).map(data::transforms::Normalize<>(0.5, 0.25)).map(data::transforms::Stack<>()),
      data::DataLoaderOptions().batch_size(4).workers(1));
  std::vector<int64_t> sizes;
  for (auto& batch : *loader) sizes.push_back(batch.data.sizes()[0]);
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 1}));
}

TEST_F(MnistFiles, MalformedFilesAreOneClearLine) {
  auto error = [&](const std::string& images, const std::string& labels) {
    write("train-images-idx3-ubyte", images);
    write("train-labels-idx1-ubyte", labels);
    return error_of([&] { MNIST m(root()); });
  };
  std::string good = images_file(3, 2, 2);
  EXPECT_TRUE(contains(error(good.substr(0, 10), labels_file(3)), "truncated header: 10 bytes"));
  EXPECT_TRUE(contains(error(good.substr(0, good.size() - 1), labels_file(3)),
                       "the header says 3x2x2 but 11 data bytes follow it (truncated?)"));
  EXPECT_TRUE(contains(error(good + "x", labels_file(3)), "but 13 data bytes"));
  EXPECT_TRUE(contains(error(labels_file(20), labels_file(3)),
                       "magic number 0x00000801, expected 0x00000803 (IDX images)"));
  EXPECT_TRUE(contains(error(good, labels_file(4)), "4 labels for 3 images"));
  std::string huge = be32(0x803) + be32(0xffffffff) + be32(0xffffffff) + be32(0xffffffff);
  EXPECT_TRUE(contains(error(huge, labels_file(3)), "4294967295x4294967295x4294967295"));
  // Zero images of an enormous size: no data bytes, but strides that would overflow (fuzz find).
  std::string empty_huge = be32(0x803) + be32(0) + be32(0xf8f7fee3) + be32(0xffffffe3);
  EXPECT_TRUE(contains(error(empty_huge, labels_file(0)), "0x4177002211x4294967267 are too large"));
  std::string message = error_of([&] { MNIST m(root() + "/nowhere\x01"); });
  EXPECT_TRUE(contains(message, "nowhere\\x01/train-images-idx3-ubyte': cannot open the file"));
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace aotgrad
