#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/simd.h"

namespace mtplx::kernels {

namespace {

// sum of x[i]^2 in 16 interleaved partial sums, then a fixed tree (vectorizes; a single running
// sum would be a chain of dependent adds).
MTPLX_TARGET_CLONES float SumOfSquares(const float* x, int64_t n) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j] * x[i + j];
  for (int j = 0; i < n; ++i, ++j) acc[j] += x[i] * x[i];
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
  return acc[0];
}

}  // namespace

MTPLX_TARGET_CLONES void RmsNorm(const float* x, const float* gain, int64_t n, float eps,
                                 float* out) {
  const float sum = SumOfSquares(x, n);
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * gain[i];
}

MTPLX_TARGET_CLONES void GatedRmsNorm(const float* x, const float* z, const float* weight,
                                      int64_t n, float eps, float* out) {
  const float sum = SumOfSquares(x, n);
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i] * SiluScalar(z[i]);
}

void L2Normalize(float* x, int64_t n, float eps) {
  const float sum = SumOfSquares(x, n);
  const float inv = 1.0f / std::sqrt(sum + eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void ApplyRope(float* head, int64_t rotary_dim, const float* inv_freq, int64_t position) {
  const int64_t half = rotary_dim / 2;
  for (int64_t j = 0; j < half; ++j) {
    const float angle = static_cast<float>(position) * inv_freq[j];
    const float c = std::cos(angle);
    const float s = std::sin(angle);
    const float a = head[j];
    const float b = head[j + half];
    head[j] = a * c - b * s;
    head[j + half] = b * c + a * s;
  }
}

MTPLX_TARGET_CLONES void SoftmaxInPlace(float* x, int64_t n) {
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  for (int64_t i = 0; i < n; ++i) x[i] = ExpF32(x[i] - max);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

float SoftplusScalar(float x) {
  // PyTorch's softplus (beta 1, threshold 20) returns x above the threshold.
  return x > 20.0f ? x : std::log1p(std::exp(x));
}

namespace {

constexpr int kExpLanes = 8;

// lanes[i % 8] += ExpF64(x[i] - shift) for i < n, n a multiple of 8 except on the last call.
MTPLX_TARGET_CLONES void AccumulateExp(const double* x, int64_t n, double shift, double* lanes) {
  int64_t i = 0;
  for (; i + kExpLanes <= n; i += kExpLanes)
    for (int j = 0; j < kExpLanes; ++j) lanes[j] += ExpF64(x[i + j] - shift);
  for (int j = 0; i < n; ++i, ++j) lanes[j] += ExpF64(x[i] - shift);
}

double SumLanes(const double* lanes) {
  double sum = 0.0;
  for (int j = 0; j < kExpLanes; ++j) sum += lanes[j];
  return sum;
}

MTPLX_TARGET_CLONES void ScaleToDouble(const float* __restrict x, int64_t n, double scale,
                                       double* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(x[i]) * scale;
}

}  // namespace

double SumExpShifted(const double* x, int64_t n, double shift) {
  double lanes[kExpLanes] = {};
  AccumulateExp(x, n, shift, lanes);
  return SumLanes(lanes);
}

double SumExpScaled(const float* x, int64_t n, double scale, double shift) {
  constexpr int64_t kBlock = 512;  // a multiple of the lane count: element i stays in lane i % 8
  double lanes[kExpLanes] = {}, block[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t count = std::min(kBlock, n - i);
    ScaleToDouble(x + i, count, scale, block);
    AccumulateExp(block, count, shift, lanes);
  }
  return SumLanes(lanes);
}

MTPLX_TARGET_CLONES void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = SiluScalar(gate[i]) * up[i];
}

}  // namespace mtplx::kernels
