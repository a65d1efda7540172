// Activations as every quantized matmul kernel reads them (internal to kernels/): prepared once
// per MatMul call, shared by all output rows and threads, and the same bytes on every CPU, so the
// AVX-512, AVX2, NEON and plain kernels all start from identical int8 inputs.
#pragma once

#include <cstdint>

namespace mtplx::kernels {

struct PreparedActivations {
  int64_t rows = 0;
  int64_t groups = 0;                 // per activation row, = w.cols / group_size
  const float* x = nullptr;           // [rows, cols] f32 (exact path)
  const float* group_sums = nullptr;  // [rows, groups]: sum of x over each group (exact, f32)
  // Int8 path: x ≈ x8 * step per group, in column order; rows padded with zeros to a multiple of
  // 64 columns.
  const int8_t* x8_columns = nullptr;  // [rows, x8_stride]
  int64_t x8_stride = 0;
  const float* steps = nullptr;  // [rows, groups]
  // [rows, groups]: sum of x8 over each group (the AVX2 8-bit kernel multiplies codes - 128 and
  // adds 128 times this back).
  const int32_t* x8_sums = nullptr;
};

// Quantizes `rows` activation rows to int8 per group: step = max|x| / 127, x8 = round-to-nearest-
// even(x * 127 / max|x|). Every CPU gets the same bytes (the AVX-512 path equals the portable
// twin). x8 holds rows * X8Stride(cols) bytes (zero padded); steps rows * cols / group_size
// floats, columns in order.
void QuantizeActivations(const float* x, int64_t rows, int64_t cols, int group_size, int8_t* x8,
                         float* steps);
// The plain scalar twin (what QuantizeActivations runs on CPUs without the AVX-512 kernels).
void QuantizeActivationsPortable(const float* x, int64_t rows, int64_t cols, int group_size,
                                 int8_t* x8, float* steps);
// Sums of the quantized activations over each group: sums holds rows * cols / group_size.
void SumX8Groups(const int8_t* x8, int64_t rows, int64_t cols, int group_size, int32_t* sums);
inline int64_t X8Stride(int64_t cols) { return (cols + 63) / 64 * 64; }

}  // namespace mtplx::kernels
