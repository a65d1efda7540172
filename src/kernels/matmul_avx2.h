// AVX2 int8-activation kernels for MLX affine matrices (internal to kernels/; matmul.cc is the one
// dispatch point). For CPUs without the AVX-512 kernels (Zen 2/3, Intel client cores): AVX2, FMA
// and F16C (Haswell, Zen 1 and later), on 256-bit registers.
//
// Where the CPU has vpdpbusd on 256-bit registers (AVX-VNNI: Intel client cores from Alder Lake;
// AVX512-VNNI with VL: Cascade Lake, whose missing VBMI keeps it off the AVX-512 kernel), the
// group dots are one vpdpbusd a step and row. Plain AVX2 has no vpdpbusd, and vpmaddubsw (u8 x s8,
// pairs summed into int16) saturates once a code exceeds 4 bits, so every code is split into
// nibbles (x = 16 h + l) and each nibble product stays far from the int16 limit; int16 partial sums
// are widened to int32 before they could overflow. The int32 dot product of a group is therefore
// the same exact integer as VNNI's, and the float steps after it are the AVX-512 panel kernel's,
// lane for lane: on panelled rows both kernels give bit-identical results, and a row's result never
// depends on how many rows run (batch invariance).
#pragma once

#include <cstdint>

#include "kernels/int8_activations.h"
#include "tensor/matrix.h"

namespace mtplx::kernels::avx2 {

// How a kernel forms the int32 dot products of 4 unsigned codes and 4 signed activations.
enum class Dot {
  kMaddubs,     // vpmaddubsw widened through int16 (plain AVX2): 4-bit codes a nibble at a time,
                // 8-bit ones as code - 128 with its sign moved onto the activation
  kAvxVnni,     // vpdpbusd, VEX-encoded (AVX-VNNI)
  kAvx512Vnni,  // vpdpbusd on 256-bit registers, EVEX-encoded (AVX512-VNNI and AVX512-VL)
};

// True when this CPU runs the kernels below (AVX2, FMA, F16C).
bool Supported();
// And their instructions for `dot`.
bool Supported(Dot dot);

// Panel `panel` of a panelled matrix (any width 2-8; kernels/panels.h) against every int8
// activation row: y[m * y_stride + i] for output row 16 * panel + i. All three dots give the
// same bits. Requires Supported(D).
template <Dot D>
void PanelInt8(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
               int64_t y_stride);

// The rows after a matrix's last whole panel run the plain row kernel (kernels/matmul_plain.h).

}  // namespace mtplx::kernels::avx2
