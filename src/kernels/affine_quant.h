// MLX affine quantization (mode "affine"): codes packed LSB-first into a little-endian uint32
// bit stream per row, one (scale, bias) pair per group of `group_size` columns.
// Dequantization: w = scale * q + bias. Quantization follows current MLX exactly so that the
// synthetic checkpoints we write are bit-identical to what mlx.core.quantize would produce.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/dtype.h"
#include "tensor/matrix.h"

namespace mtplx::kernels {

bool IsSupportedAffineBits(int bits);
bool IsSupportedGroupSize(int group_size);

// Code of element k in a packed row.
inline uint32_t UnpackCode(const uint32_t* row_words, int64_t k, int bits) {
  const uint64_t bit = static_cast<uint64_t>(k) * bits;
  const uint64_t word = bit >> 5;
  const uint32_t shift = bit & 31u;
  uint64_t value = row_words[word] >> shift;
  if (shift + bits > 32) value |= static_cast<uint64_t>(row_words[word + 1]) << (32 - shift);
  return static_cast<uint32_t>(value) & ((1u << bits) - 1u);
}

// Quantizes one row of `cols` floats. Writes cols*bits/32 words and cols/group_size scales and
// biases, each rounded to `scale_dtype` (F32, BF16 or F16) and stored as raw bits in
// scales/biases (4 or 2 bytes per entry).
// group_size: 32, 64 or 128.
void AffineQuantizeRow(const float* row, int64_t cols, int bits, int group_size, DType scale_dtype,
                       uint32_t* packed, void* scales, void* biases);
// The plain code the fast one must equal bit for bit (one code at a time, std::nearbyint).
void AffineQuantizeRowReference(const float* row, int64_t cols, int bits, int group_size,
                                DType scale_dtype, uint32_t* packed, void* scales, void* biases);

// Dequantizes row `r` of a quantized or dense matrix into f32 (`cols` values).
void DequantizeRow(const Matrix& m, int64_t r, float* out);
// Its plain twin (one code at a time), equal bit for bit.
void DequantizeRowReference(const Matrix& m, int64_t r, float* out);

// Scale / bias entry `i` of a scale array as f32.
float LoadScalar(const void* base, int64_t i, DType dtype);

}  // namespace mtplx::kernels
