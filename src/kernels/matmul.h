// Matrix multiplication of weights by activation rows: y[m, n] = sum_k W[n, k] * x[m, k].
//
// Batch invariance: every output element is computed by the same sequence of floating-point
// operations whatever M is and however the work is split across threads, so row m of a K+1-row
// verify pass is bit-identical to the same row run alone. The fast path reads each weight row
// once for all M activation rows.
#pragma once

#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "tensor/matrix.h"

namespace mtplx::kernels {

// How activations meet quantized weights.
//   kF32:  exact f32 activations (the reference numerics; what the model-reference tests check).
//   kInt8: activations rounded to int8 per weight group (step = max|x| / 127) and multiplied by
//          the codes in integer arithmetic (AVX-512 VNNI, AVX2, or ARM's sdot), like llama.cpp's
//          Q8 activations: about 4x fewer instructions per weight, at a relative error of ~1e-3
//          per dot product. Where the CPU has none of these kernels it falls back to kF32.
// Dense (bf16/f16/f32) weights always use f32 activations.
enum class Activations { kF32, kInt8 };

// x: [m_rows, w.cols] row-major; y: [m_rows, w.rows] row-major. pool may be null.
void MatMul(const Matrix& w, const float* x, int64_t m_rows, float* y, ThreadPool* pool,
            Activations activations = Activations::kF32);

// Several matrices applied to the same activations (the q/k/v projections, the DeltaNet input
// projections, the MLP's gate and up): with int8 activations on the AVX-512 kernels and matrices
// of equal columns and groups, the activations are quantized once and the panels of all the
// matrices run as one parallel loop (one pool hand-off instead of one per matrix). ys[i] is
// bit for bit what MatMul(*ws[i], ...) gives.
void MatMulSameInput(std::span<const Matrix* const> ws, const float* x, int64_t m_rows,
                     std::span<float* const> ys, ThreadPool* pool,
                     Activations activations = Activations::kF32);

// The portable kernel the dispatcher falls back to on CPUs without the AVX-512 kernels; public
// so tests can check it on any machine.
void MatMulPortable(const Matrix& w, const float* x, int64_t m_rows, float* y, ThreadPool* pool);

// True when MatMul runs panelled matrices (kernels/panels.h) through the int8 panel kernel. Any
// other path dequantizes them row by row, so repack only when this holds and activations are
// kInt8.
bool PanelKernelAvailable();

// Name of the int8 kernel family this CPU runs ("avx512-vnni", "avx2", "neon-dotprod" or
// "portable").
const char* QuantKernelName();

// True when the int8 kernel multiplies with a dot-product instruction (AMX, VNNI, NEON dotprod).
// Without one (AVX2's nibble path, portable code) every row of a verify costs real arithmetic,
// so a verify is no longer nearly free beside the weight stream.
bool QuantKernelHasDotProduct();

// True when the int8 kernel is AVX2's and this CPU runs each 256-bit instruction as two 128-bit
// halves (AMD Zen and Zen+, Hygon Dhyana): a verify row then costs about half a step of
// arithmetic, even beside the weight stream.
bool QuantKernelSplitsWideVectors();

// Plain scalar reference (double accumulation), for tests.
void MatMulReference(const Matrix& w, const float* x, int64_t m_rows, float* y);

// Dot product with a fixed summation order (16 interleaved partial sums, then a fixed tree).
float DotF32(const float* a, const float* b, int64_t n);

}  // namespace mtplx::kernels
