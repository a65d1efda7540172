// bfloat16 and IEEE half conversions. Rounding is round-to-nearest-even, as in PyTorch and MLX.
#pragma once

#include <cstdint>
#include <cstring>

namespace mtplx {

inline float Bf16ToF32(uint16_t bits) {
  const uint32_t word = static_cast<uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &word, sizeof(out));
  return out;
}

inline uint16_t F32ToBf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  if ((word & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((word >> 16) | 0x40u);  // NaN
  const uint32_t rounding = 0x7fffu + ((word >> 16) & 1u);
  return static_cast<uint16_t>((word + rounding) >> 16);
}

// Rounds a float to the nearest bf16 value and returns it as float.
inline float RoundToBf16(float value) { return Bf16ToF32(F32ToBf16(value)); }

float F16ToF32(uint16_t bits);
uint16_t F32ToF16(float value);

inline float RoundToF16(float value) { return F16ToF32(F32ToF16(value)); }

}  // namespace mtplx
