#include "base/uninit_array.h"

#include <gtest/gtest.h>

#include <numeric>

namespace mtplx {
namespace {

TEST(UninitArrayTest, HoldsWhatIsWritten) {
  UninitArray<float> a(5);
  ASSERT_EQ(a.size(), 5);
  std::iota(a.begin(), a.end(), 1.0f);
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[4], 5.0f);
  EXPECT_EQ(a.end() - a.begin(), 5);
  const UninitArray<float>& view = a;
  EXPECT_EQ(view.data()[2], 3.0f);
}

TEST(UninitArrayTest, NothingForZeroOrNegativeSizes) {
  for (const int64_t n : {int64_t{0}, int64_t{-3}}) {
    UninitArray<int32_t> a(n);
    EXPECT_EQ(a.size(), 0);
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.begin(), a.end());
  }
  EXPECT_EQ(UninitArray<float>().size(), 0);
}

TEST(UninitArrayTest, MovesItsStorage) {
  UninitArray<float> a(3);
  a[1] = 7.0f;
  const float* storage = a.data();
  UninitArray<float> b = std::move(a);
  EXPECT_EQ(b.data(), storage);
  EXPECT_EQ(b.size(), 3);
  EXPECT_EQ(b[1], 7.0f);
  EXPECT_EQ(a.size(), 0);  // NOLINT(bugprone-use-after-move): the moved-from array is empty
  a = std::move(b);
  EXPECT_EQ(a.data(), storage);
  EXPECT_EQ(b.size(), 0);  // NOLINT(bugprone-use-after-move)
}

}  // namespace
}  // namespace mtplx
