// AVX-512 kernels for dense and MLX affine-quantized matrices (internal to kernels/; matmul.cc is
// the one dispatch point). They need AVX512F/BW/VL, VNNI and VBMI (Ice Lake, Zen 4 and later):
// VBMI's byte permute and multishift unpack 64 codes of any width 2..8 in two instructions, VNNI's
// vpdpbusd multiplies 64 codes by 64 int8 activations in one.
//
// Both kernels compute one output row n for a block of activation rows, and each activation row
// runs the same instruction sequence whatever the block holds, so results are batch invariant.
#pragma once

#include <cstdint>

#include "kernels/int8_activations.h"
#include "tensor/matrix.h"

namespace mtplx::kernels::avx512 {

// True when this CPU runs the kernels below.
bool Supported();

// The AVX-512 body of QuantizeActivations (kernels/int8_activations.h); only where Supported().
void QuantizeActivationsAvx512(const float* x, int64_t rows, int64_t cols, int group_size,
                               int8_t* x8, float* steps);

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
// Panels first..first + count - 1 the same way, panel first + j writing y + 16 j: the same bits
// as count calls of PanelInt8, consecutive panels paired from 4 activation rows on.
void PanelRangeInt8(const Matrix& w, int64_t first, int64_t count, const PreparedActivations& act,
                    float* y, int64_t y_stride);

// Dense F32 / BF16 / F16 weights, f32 activations: y[m * y_stride] = W[n] . x[m] for
// m in [0, m_rows), 16-lane FMA accumulation per activation row, then a fixed-order reduction.
void DenseRow(const Matrix& w, int64_t n, const float* x, int64_t m_rows, float* y,
              int64_t y_stride);

}  // namespace mtplx::kernels::avx512
