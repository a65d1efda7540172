#include "kernels/matmul.h"

#include <vector>

#include "kernels/affine_quant.h"

namespace mtplx::kernels {

float DotF32(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += a[k + j] * b[k + j];
  for (int j = 0; k < n; ++k, ++j) acc[j] += a[k] * b[k];
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
  return acc[0];
}

void MatMul(const Matrix& w, const float* x, int64_t m_rows, float* y, ThreadPool* pool) {
  const int64_t cols = w.cols;
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> row(cols);
    for (int64_t n = begin; n < end; ++n) {
      DequantizeRow(w, n, row.data());
      for (int64_t m = 0; m < m_rows; ++m) y[m * w.rows + n] = DotF32(row.data(), x + m * cols, cols);
    }
  };
  if (pool) {
    pool->ParallelFor(w.rows, 16, run);
  } else {
    run(0, w.rows);
  }
}

void MatMulReference(const Matrix& w, const float* x, int64_t m_rows, float* y) {
  std::vector<float> row(w.cols);
  for (int64_t n = 0; n < w.rows; ++n) {
    DequantizeRow(w, n, row.data());
    for (int64_t m = 0; m < m_rows; ++m) {
      double sum = 0.0;
      for (int64_t k = 0; k < w.cols; ++k) sum += static_cast<double>(row[k]) * x[m * w.cols + k];
      y[m * w.rows + n] = static_cast<float>(sum);
    }
  }
}

}  // namespace mtplx::kernels
