#include <gtest/gtest.h>

#include "aotgrad/tensor.h"

TEST(Smoke, MakeTensor) {
  auto t = aotgrad::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(t.to_vector<float>()[3], 4.0f);
}
