// AVX-512 kernels for dense and MLX affine-quantized matrices (internal to kernels/; matmul.cc is
// the one dispatch point). They need AVX512F/BW/VL, VNNI and VBMI (Ice Lake, Zen 4 and later):
// VBMI's byte permute and multishift unpack 64 codes of any width 2..8 in two instructions, VNNI's
// vpdpbusd multiplies 64 codes by 64 int8 activations in one.
//
// Both kernels compute one output row n for a block of activation rows, and each activation row
// runs the same instruction sequence whatever the block holds, so results are batch invariant.
#pragma once

#include <cstdint>

#include "tensor/matrix.h"

namespace mtplx::kernels::avx512 {

// True when this CPU runs the kernels below.
bool Supported();

// Activations prepared once per MatMul call, shared by all output rows and threads.
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
inline int64_t X8Stride(int64_t cols) { return (cols + 63) / 64 * 64; }

// y[m * y_stride] for m in [0, act.rows): the dot of quantized row n (MLX layout) with every
// activation row, exact activations, f32 accumulation (16 lanes per group, then scaled). (Int8
// activations on rows outside panels run the plain row kernel, kernels/matmul_plain.h, whose
// results every panel kernel equals.)
void QuantRowF32(const Matrix& w, int64_t n, const PreparedActivations& act, float* y,
                 int64_t y_stride);

// Panel `panel` of a panelled matrix (kernels/panels.h) against every int8
// activation row (act.x8_columns): y[m * y_stride + i] for output row 16 * panel + i, i < 16.
// Per group, int32 dot products for 16 outputs at once, then res += dot * scale * step in f32.
void PanelInt8(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
               int64_t y_stride);

// Dense F32 / BF16 / F16 weights, f32 activations: y[m * y_stride] = W[n] . x[m] for
// m in [0, m_rows), 16-lane FMA accumulation per activation row, then a fixed-order reduction.
void DenseRow(const Matrix& w, int64_t n, const float* x, int64_t m_rows, float* y,
              int64_t y_stride);

}  // namespace mtplx::kernels::avx512
