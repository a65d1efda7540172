#include "kernels/int8_activations.h"

#include <algorithm>
#include <cmath>

#include "kernels/matmul_avx512.h"

namespace mtplx::kernels {

void QuantizeActivationsPortable(const float* x, int64_t rows, int64_t cols, int group_size,
                                 int8_t* x8, float* steps) {
  const int64_t stride = X8Stride(cols), groups = cols / group_size;
  for (int64_t m = 0; m < rows; ++m) {
    int8_t* out = x8 + m * stride;
    std::fill(out + cols, out + stride, int8_t{0});
    for (int64_t g = 0; g < groups; ++g) {
      const float* xg = x + m * cols + g * group_size;
      float amax = 0.0f;
      for (int k = 0; k < group_size; ++k) amax = std::max(amax, std::fabs(xg[k]));
      const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
      steps[m * groups + g] = amax / 127.0f;
      for (int k = 0; k < group_size; ++k) {
        out[g * group_size + k] = static_cast<int8_t>(std::lrintf(xg[k] * inverse));
      }
    }
  }
}

void QuantizeActivations(const float* x, int64_t rows, int64_t cols, int group_size, int8_t* x8,
                         float* steps) {
  static const bool fast = avx512::Supported();
  if (fast) return avx512::QuantizeActivationsAvx512(x, rows, cols, group_size, x8, steps);
  QuantizeActivationsPortable(x, rows, cols, group_size, x8, steps);
}

void SumX8Groups(const int8_t* x8, int64_t rows, int64_t cols, int group_size, int32_t* sums) {
  const int64_t groups = cols / group_size, stride = X8Stride(cols);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t g = 0; g < groups; ++g) {
      const int8_t* column = x8 + m * stride + g * group_size;
      int32_t sum = 0;
      for (int64_t k = 0; k < group_size; ++k) sum += column[k];
      sums[m * groups + g] = sum;
    }
}

}  // namespace mtplx::kernels
