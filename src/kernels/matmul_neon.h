// NEON int8-activation panel kernel for MLX affine matrices on 64-bit ARM (internal to kernels/;
// matmul.cc is the one dispatch point). It needs the dot-product extension (ARMv8.2 DotProd:
// Cortex-A76 / Neoverse N1 and later, Apple M1 and later); ARM CPUs without it run the portable
// path.
//
// sdot multiplies signed bytes, four per 32-bit lane, and panels hold 16 output rows x 4 columns
// per 64 bytes (kernels/panels.h), so one sdot by four broadcast activations gives the partial
// dots of 4 output rows. Codes of up to 6 bits are already non-negative signed bytes; 8-bit codes
// are shifted to c - 128 and each group's dot is corrected by 128 * sum(x8), exactly. The int32
// group dots are therefore the integers VNNI computes, and the float steps per lane are the
// AVX-512 kernel's: on panelled rows the result equals it, and the plain row kernel
// (kernels/matmul_plain.h), bit for bit, and never depends on how many rows run together.
#pragma once

#include <cstdint>

#include "kernels/int8_activations.h"
#include "tensor/matrix.h"

namespace mtplx::kernels::neon {

// True when this CPU runs the kernel below (AArch64 with the dot-product extension).
bool Supported();

// Panel `panel` of a panelled matrix (any width 2-8) against every int8 activation row:
// y[m * y_stride + i] for output row 16 * panel + i.
void PanelInt8(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
               int64_t y_stride);

}  // namespace mtplx::kernels::neon
