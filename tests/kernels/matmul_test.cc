// MatMul against its scalar reference on odd sizes for every weight format, and the
// batch-invariance guarantee: a row's result never depends on how many rows run with it.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/float16.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "kernels/affine_quant.h"

namespace mtplx::kernels {
namespace {

// Owns the storage behind a Matrix.
struct TestMatrix {
  std::vector<uint8_t> dense;
  std::vector<uint32_t> packed;
  std::vector<uint16_t> scales, biases;
  Matrix m;
};

std::vector<float> RandomValues(int64_t n, uint64_t seed, float scale = 1.0f) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.Uniform(-1.0, 1.0)) * scale;
  return v;
}

TestMatrix MakeDense(int64_t rows, int64_t cols, DType dtype, uint64_t seed) {
  TestMatrix t;
  const auto values = RandomValues(rows * cols, seed);
  t.dense.resize(rows * cols * DTypeSize(dtype));
  for (int64_t i = 0; i < rows * cols; ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(t.dense.data() + 4 * i, &values[i], 4);
    } else {
      const uint16_t b = dtype == DType::kBF16 ? F32ToBf16(values[i]) : F32ToF16(values[i]);
      std::memcpy(t.dense.data() + 2 * i, &b, 2);
    }
  }
  t.m = Matrix::Dense(rows, cols, dtype, t.dense.data());
  return t;
}

TestMatrix MakeQuantized(int64_t rows, int64_t cols, int bits, int group, uint64_t seed) {
  TestMatrix t;
  const auto values = RandomValues(rows * cols, seed);
  const int64_t words = cols * bits / 32, groups = cols / group;
  t.packed.resize(rows * words);
  t.scales.resize(rows * groups);
  t.biases.resize(rows * groups);
  for (int64_t r = 0; r < rows; ++r)
    AffineQuantizeRow(values.data() + r * cols, cols, bits, group, DType::kBF16,
                      t.packed.data() + r * words, t.scales.data() + r * groups,
                      t.biases.data() + r * groups);
  t.m.rows = rows;
  t.m.cols = cols;
  t.m.quantized = true;
  t.m.quant =
      AffineQuant{bits, group, t.packed.data(), t.scales.data(), t.biases.data(), DType::kBF16};
  return t;
}

void ExpectCloseToReference(const Matrix& w, int64_t m_rows, ThreadPool* pool) {
  const auto x = RandomValues(m_rows * w.cols, 99);
  std::vector<float> got(m_rows * w.rows), want(m_rows * w.rows);
  MatMul(w, x.data(), m_rows, got.data(), pool);
  MatMulReference(w, x.data(), m_rows, want.data());
  for (size_t i = 0; i < got.size(); ++i) {
    // f32 accumulation of cols products of magnitude <= 1: error grows like sqrt(cols) * eps.
    const float tolerance = 1e-5f * std::sqrt(static_cast<float>(w.cols)) * 4.0f;
    ASSERT_NEAR(got[i], want[i], tolerance) << w.Describe() << " element " << i;
  }
}

TEST(MatMulTest, DenseFormatsMatchReferenceOnOddSizes) {
  ThreadPool pool(2);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
    for (int64_t rows : {1, 7, 33})
      for (int64_t cols : {1, 15, 17, 130})
        for (int64_t m : {1, 3, 16}) {
          auto t = MakeDense(rows, cols, dtype, rows * 1000 + cols);
          ExpectCloseToReference(t.m, m, &pool);
        }
}

TEST(MatMulTest, QuantizedFormatsMatchReference) {
  ThreadPool pool(2);
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int group : {32, 64, 128})
      for (int64_t rows : {1, 19}) {
        auto t = MakeQuantized(rows, 3 * 128, bits, group, bits * 31 + group);
        ExpectCloseToReference(t.m, 5, &pool);
      }
}

TEST(MatMulTest, RowResultsDoNotDependOnBatchSizeOrThreads) {
  ThreadPool pool(2);
  std::vector<TestMatrix> formats;
  formats.push_back(MakeDense(37, 200, DType::kBF16, 1));
  formats.push_back(MakeDense(37, 200, DType::kF32, 2));
  formats.push_back(MakeDense(37, 200, DType::kF16, 3));
  for (int bits : {2, 3, 4, 5, 6, 8}) formats.push_back(MakeQuantized(37, 256, bits, 64, bits));
  formats.push_back(MakeQuantized(37, 256, 4, 32, 7));
  formats.push_back(MakeQuantized(37, 256, 6, 128, 8));
  for (const auto& t : formats) {
    const auto x = RandomValues(16 * t.m.cols, 5);
    std::vector<std::vector<float>> single(16, std::vector<float>(t.m.rows));
    for (int r = 0; r < 16; ++r) MatMul(t.m, x.data() + r * t.m.cols, 1, single[r].data(), nullptr);
    for (int m = 1; m <= 16; ++m) {
      std::vector<float> batch(m * t.m.rows);
      MatMul(t.m, x.data(), m, batch.data(), &pool);
      for (int r = 0; r < m; ++r)
        for (int64_t n = 0; n < t.m.rows; ++n)
          ASSERT_EQ(batch[r * t.m.rows + n], single[r][n]) << t.m.Describe() << " M=" << m;
    }
  }
}

}  // namespace
}  // namespace mtplx::kernels
