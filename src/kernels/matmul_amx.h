// Intel AMX (tile matrix multiply, Sapphire Rapids and later Xeons) for the panel layout (internal
// to kernels/; matmul.cc is the one dispatch point).
//
// A panel's 8-bit codes are already what an AMX B tile holds: 16 output rows, 4 consecutive
// columns per row, 64 bytes a step (kernels/panels.h), so one TDPBSUD multiplies up to 16
// activation rows (int8, signed) by 16 outputs x 64 columns (codes, unsigned) into 16 x 16
// int32 sums. Other widths are spread to bytes in that order first. A verify pass or a prefill
// chunk of M rows then costs about what one row costs: the rows share every tile of weights.
//
// The int32 sums are exact, and each output's float epilogue (dot x scale x step, plus bias x
// group sum, in group order) is the AVX-512 panel kernel's, instruction for instruction: the
// results equal that kernel's (and so the plain row kernel's) bit for bit, whatever M is. Fewer
// than 8 activation rows (decode, short verifies) run the AVX-512 kernel: a tile would be mostly
// empty and the epilogue, not the products, bounds the time.
#pragma once

#include <cstdint>

#include "kernels/int8_activations.h"
#include "tensor/matrix.h"

namespace mtplx::kernels::amx {

// True when the CPU has AMX-TILE and AMX-INT8, AVX-512 VNNI/VBMI (the single-row path), and the
// kernel lets this process use tile registers (Linux arch_prctl ARCH_REQ_XCOMP_PERM).
bool Supported();

// As avx512::PanelInt8: panel `panel` of a panelled matrix against every int8 activation row.
void PanelInt8(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
               int64_t y_stride);

}  // namespace mtplx::kernels::amx
