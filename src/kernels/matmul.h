// Matrix multiplication of weights by activation rows: y[m, n] = sum_k W[n, k] * x[m, k].
//
// Batch invariance: every output element is computed by the same sequence of floating-point
// operations whatever M is and however the work is split across threads, so row m of a K+1-row
// verify pass is bit-identical to the same row run alone. The fast path reads each weight row
// once for all M activation rows.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "tensor/matrix.h"

namespace mtplx::kernels {

// x: [m_rows, w.cols] row-major; y: [m_rows, w.rows] row-major. pool may be null.
void MatMul(const Matrix& w, const float* x, int64_t m_rows, float* y, ThreadPool* pool);

// Plain scalar reference (double accumulation), for tests.
void MatMulReference(const Matrix& w, const float* x, int64_t m_rows, float* y);

// Dot product with a fixed summation order (16 interleaved partial sums, then a fixed tree).
float DotF32(const float* a, const float* b, int64_t n);

}  // namespace mtplx::kernels
