// Element-wise and normalisation operations on f32 activations. All statistics are computed in
// f32, matching the reference implementations run in float32.
#pragma once

#include <cstdint>

namespace mtplx::kernels {

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

float SiluScalar(float x);
float SigmoidScalar(float x);
float SoftplusScalar(float x);

// out[i] = silu(gate[i]) * up[i]
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);

}  // namespace mtplx::kernels
