// The drafter's own quantized copies: f16 scales and biases where f16 holds them, f32 where it
// cannot, and rows that dequantize to the source within the quantization step either way.
#include "model/draft_head.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/affine_quant.h"

namespace mtplx::model {
namespace {

// A dense f32 matrix of `rows` x `cols` with values spread over [-scale, scale].
std::vector<float> Values(int64_t rows, int64_t cols, float scale) {
  std::vector<float> v(rows * cols);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = scale * std::sin(0.37f * static_cast<float>(i) + 0.1f * static_cast<float>(i % 7));
  return v;
}

void ExpectRowsClose(const Matrix& source, const Matrix& copy, float scale, int bits) {
  std::vector<float> want(source.cols), got(source.cols);
  // MLX's affine rule stretches a group's step so that zero is a code, so a value may sit up to
  // about a step from its code; the rounding of f16 scales adds far less.
  const float tolerance = 1.5f * 2.0f * scale / static_cast<float>((1 << bits) - 1);
  for (int64_t r = 0; r < source.rows; ++r) {
    kernels::DequantizeRow(source, r, want.data());
    kernels::DequantizeRow(copy, r, got.data());
    for (int64_t k = 0; k < source.cols; ++k)
      ASSERT_NEAR(got[k], want[k], tolerance) << "row " << r << " column " << k;
  }
}

TEST(DraftHeadTest, KeepsF16ScalesWhereTheyFit) {
  const int64_t rows = 37, cols = 256;
  const std::vector<float> values = Values(rows, cols, 0.05f);
  const Matrix source = Matrix::Dense(rows, cols, DType::kF32, values.data());
  auto head = DraftHead::Quantize(source, 4, 64, nullptr);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ((*head)->matrix().quant.scale_dtype, DType::kF16);
  // 4-bit codes and two 2-byte entries a group of 64.
  EXPECT_EQ((*head)->bytes(), static_cast<uint64_t>(rows * cols / 2 + rows * cols / 64 * 4));
  ExpectRowsClose(source, (*head)->matrix(), 0.05f, 4);
}

// Weights beyond f16's range would give infinite biases and NaN drafts: those keep f32.
TEST(DraftHeadTest, FallsBackToF32ScalesBeyondF16Range) {
  const int64_t rows = 16, cols = 128;
  const std::vector<float> values = Values(rows, cols, 1e6f);
  const Matrix source = Matrix::Dense(rows, cols, DType::kF32, values.data());
  auto head = DraftHead::Quantize(source, 4, 64, nullptr);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ((*head)->matrix().quant.scale_dtype, DType::kF32);
  EXPECT_EQ((*head)->bytes(), static_cast<uint64_t>(rows * cols / 2 + rows * cols / 64 * 8));
  ExpectRowsClose(source, (*head)->matrix(), 1e6f, 4);
}

}  // namespace
}  // namespace mtplx::model
