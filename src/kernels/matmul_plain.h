// The plain int8-activation row kernel (internal to kernels/; matmul.cc is the one dispatch
// point): what every int8 path (AVX-512, AVX2, NEON, portable) runs for the rows of a matrix
// after its last whole panel, and for matrices too small for one. It is also the scalar twin of
// every panel kernel: per group an exact int32 dot of the codes with the int8 activations, then the
// same float steps (res = fma(dot, scale * step, res), bias_term = fma(bias, group_sum, bias_term),
// y = res + bias_term), so a panelled row equals this kernel's result bit for bit.
#pragma once

#include <cstdint>

#include "kernels/int8_activations.h"
#include "tensor/matrix.h"

namespace mtplx::kernels::plain {

// Row n of a quantized matrix, MLX or panel layout, against every int8 activation row:
// y[m * y_stride] for m in [0, act.rows).
void QuantRowInt8(const Matrix& w, int64_t n, const PreparedActivations& act, float* y,
                  int64_t y_stride);

}  // namespace mtplx::kernels::plain
