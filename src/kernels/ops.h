// Element-wise and normalisation operations on f32 activations. All statistics are computed in
// f32, matching the reference implementations run in float32.
#pragma once

#include <bit>
#include <cstdint>

namespace mtplx::kernels {

// exp(x) in f32 without branches or library calls, so that loops over it vectorize: Cody-Waite
// reduction x = n ln2 + r, |r| <= ln2 / 2, a degree-7 Taylor polynomial for e^r (truncation
// error below 2e-8 relative) and 2^n assembled in the exponent bits. Within 2 ulp of expf on
// [-87.3, 88.3]; 0 below (where expf is subnormal or 0), NaN stays NaN. Inputs above 88.3 are
// clamped: no caller (sigmoid, silu, softmax, decay) uses them.
inline float ExpF32(float x) {
  const float clamped = x > 88.3f ? 88.3f : (x < -87.3f ? -87.3f : x);
  // Round to nearest by the 1.5 * 2^23 trick (exact for |v| < 2^22; no rounding-mode calls).
  constexpr float kShift = 12582912.0f;
  const float shifted = clamped * 1.44269504089f + kShift;
  const float n = shifted - kShift;
  const float r = (clamped - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n from the integer in the low mantissa bits of `shifted`, as ExpF64 does: a float-to-int
  // conversion of n would be undefined for a NaN input (clang's UBSan reports it).
  const uint32_t ni = std::bit_cast<uint32_t>(shifted) - std::bit_cast<uint32_t>(kShift);
  const float scale = std::bit_cast<float>((ni + 127u) << 23);
  return x < -87.3f ? 0.0f : p * scale;
}

// exp(x) in f64, branch-free like ExpF32: a degree-12 Taylor polynomial after Cody-Waite reduction
// (truncation error below 1e-15 relative); 0 below -708, inputs above 709 are clamped.
inline double ExpF64(double x) {
  const double clamped = x > 709.0 ? 709.0 : (x < -708.0 ? -708.0 : x);
  constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  const double shifted = clamped * 1.4426950408889634 + kShift;
  const double n = shifted - kShift;
  const double r = (clamped - n * 0.6931471803691238) - n * 1.9082149292705877e-10;
  double p = 1.0 / 479001600.0;
  constexpr double kInverseFactorials[12] = {
      1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0,
      1.0 / 120.0,      1.0 / 24.0,      1.0 / 6.0,      0.5,           1.0,          1.0};
  for (double c : kInverseFactorials) p = p * r + c;
  // The integer n sits in the low mantissa bits of `shifted` (its ulp is 1): integer lanes only,
  // no double-to-int64 conversion (which AVX-512F lacks), so the loop vectorizes.
  const int64_t ni = std::bit_cast<int64_t>(shifted) - std::bit_cast<int64_t>(kShift);
  const double scale = std::bit_cast<double>((ni + 1023) << 52);
  return x < -708.0 ? 0.0 : p * scale;
}

// sum_i ExpF64(x[i] - shift), vectorized (partial sums in 8 lanes, then a fixed order).
double SumExpShifted(const double* x, int64_t n, double shift);
// sum_i ExpF32(x[i] * scale - shift) in float arithmetic (partial sums of 32 terms, then a double
// total): within about 1e-6 relative, at four times the speed of the double version.
double SumExpScaledF32(const float* x, int64_t n, float scale, float shift);

// The largest of x[0..n), n >= 1 (exact: max does not depend on order).
float MaxF32(const float* x, int64_t n);
// The first i in [from, n) with x[i] > bound, or n (AVX-512: 16 compares a step). NaN is never
// above. FirstAboveReference is its plain twin.
int64_t FirstAbove(const float* x, int64_t from, int64_t n, float bound);
int64_t FirstAboveReference(const float* x, int64_t from, int64_t n, float bound);

inline float SiluScalar(float x) { return x / (1.0f + ExpF32(-x)); }
inline float SigmoidScalar(float x) { return 1.0f / (1.0f + ExpF32(-x)); }

// out = x / sqrt(mean(x^2) + eps) * gain   (gain already holds 1 + w for zero-centred norms).
void RmsNorm(const float* x, const float* gain, int64_t n, float eps, float* out);

// Gated RMSNorm of the Gated DeltaNet output: rmsnorm(x) * weight * silu(z).
void GatedRmsNorm(const float* x, const float* z, const float* weight, int64_t n, float eps,
                  float* out);

// In place: x / sqrt(sum(x^2) + eps).
void L2Normalize(float* x, int64_t n, float eps);

// In place NeoX ("rotate half") RoPE on the first rotary_dim dims of one head.
// inv_freq has rotary_dim / 2 entries.
void ApplyRope(float* head, int64_t rotary_dim, const float* inv_freq, int64_t position);

void SoftmaxInPlace(float* x, int64_t n);

float SoftplusScalar(float x);

// out[i] = silu(gate[i]) * up[i]
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);

}  // namespace mtplx::kernels
