#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu.h"
#include "kernels/simd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MTPLX_OPS_AVX512 1
#endif

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

// sum of ExpF32(x[i] * scale - shift) over one block: 16 float lanes (lane i % 16), then a double
// total of the lanes in order.
MTPLX_TARGET_CLONES double BlockSumExpF32(const float* x, int64_t n, float scale, float shift) {
  float lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) lanes[j] += ExpF32(x[i + j] * scale - shift);
  for (int j = 0; i < n; ++i, ++j) lanes[j] += ExpF32(x[i] * scale - shift);
  double total = 0.0;
  for (float lane : lanes) total += lane;
  return total;
}

}  // namespace

double SumExpShifted(const double* x, int64_t n, double shift) {
  double lanes[kExpLanes] = {};
  AccumulateExp(x, n, shift, lanes);
  return SumLanes(lanes);
}

double SumExpScaledF32(const float* x, int64_t n, float scale, float shift) {
  constexpr int64_t kBlock = 512;  // float lanes sum at most 32 terms before joining the double
  double total = 0.0;
  for (int64_t i = 0; i < n; i += kBlock)
    total += BlockSumExpF32(x + i, std::min(kBlock, n - i), scale, shift);
  return total;
}

MTPLX_TARGET_CLONES float MaxF32(const float* x, int64_t n) {
  float lanes[16];
  for (float& lane : lanes) lane = x[0];
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; ++j) lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  float max = lanes[0];
  for (float lane : lanes) max = lane > max ? lane : max;
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}

int64_t FirstAboveReference(const float* x, int64_t from, int64_t n, float bound) {
  int64_t i = from;
  while (i < n && !(x[i] > bound)) ++i;
  return i;
}

#ifdef MTPLX_OPS_AVX512
// 16 comparisons a step into one mask; the compiler turns the portable loop into scalar compares.
__attribute__((target("avx512f"))) static int64_t FirstAboveAvx512(const float* x, int64_t from,
                                                                   int64_t n, float bound) {
  const __m512 b = _mm512_set1_ps(bound);
  int64_t i = from;
  for (; i + 16 <= n; i += 16) {
    const __mmask16 above = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), b, _CMP_GT_OQ);
    if (above) return i + __builtin_ctz(above);
  }
  return FirstAboveReference(x, i, n, bound);
}
#endif

int64_t FirstAbove(const float* x, int64_t from, int64_t n, float bound) {
#ifdef MTPLX_OPS_AVX512
  static const bool fast = Avx512FKernelsEnabled();
  if (fast) return FirstAboveAvx512(x, from, n, bound);
#endif
  return FirstAboveReference(x, from, n, bound);
}

MTPLX_TARGET_CLONES void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = SiluScalar(gate[i]) * up[i];
}

}  // namespace mtplx::kernels
