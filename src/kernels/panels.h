// The panel layout: how MLX affine matrices (2-8 bits) are stored for the int8-activation (VNNI)
// kernel.
//
// In the MLX layout each output row's codes are contiguous, so a kernel computing one output at a
// time pays, per output and per activation row, a horizontal reduction and a shuffle of its group
// scales. For the narrow matrices of small models that overhead, not the weights, is most of the
// time, and it grows with the number of rows M, which is what a verify pass adds. In the panel
// layout 16 consecutive output rows are interleaved 4 columns at a time (8 for 4-bit: two nibbles
// per byte): one vpdpbusd multiplies 16 rows by 4 broadcast activations, the 16 lanes of the
// accumulator are 16 outputs, and each group needs one vector of scales. No reduction at all.
// Widths other than 4 and 8 keep the 8-bit order as a bit stream, which VBMI spreads to bytes.
//
// Repacking is in place and keeps every byte where its rows were: panel p occupies exactly the
// codes, scales and biases of rows 16p..16p+15 in the MLX layout. Rows after the last whole panel
// keep the MLX layout and run through the row kernel. Within panel p (G = group size):
//   codes,  8-bit: group g, step s (columns gG+4s..+3): 64 bytes, byte 4i+j = code(16p+i, gG+4s+j)
//   codes,  4-bit: group g, step s (columns gG+8s..+7): 64 bytes, byte 4i+j holds
//                  code(16p+i, gG+8s+j) in the low nibble and code(16p+i, gG+8s+4+j) in the high
//   codes, other widths (2, 3, 5, 6): the panel is one little-endian bit stream, code (16p+i, k)
//                  at index (k / 4) * 64 + 4i + k % 4 (the 8-bit order at `bits` bits a code)
//   scales, biases: entry 16g+i of the panel belongs to row 16p+i, group g.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "tensor/matrix.h"

namespace mtplx::kernels {

constexpr int64_t kPanelRows = 16;

// How far ahead the panel kernels prefetch a streamed matrix's codes, every line (one line a step,
// into L2 for two or more rows on AVX-512 and into L1 otherwise: see PrefetchAhead in
// matmul_avx512.cc and matmul_avx2.cc; the NEON kernel still asks in bursts, not yet measured on an
// ARM core): the hardware prefetcher alone falls behind once the core is busy with two or more rows
// (AVX-512, 4-bit 16384 x 4096 from DRAM on 2 threads: 1.28-1.43 ms at M = 2 without, 0.76-0.96 ms
// with; every other line loses most of it). 12 KiB rather than 6: a 16384 x 4096 matrix, which at 4
// and 6 bits partly stays in L3 between calls as a small model's layers do, timed at both distances
// in alternation (Zen 5, 2 threads) ran 4-12 % faster at 4 bits, 1-8 % at 6, 0-6 % at 8, M = 1 and
// 4 alike (AVX2 kernels: 3-9 % at M = 1); from DRAM alone (65536 x 4096) the two tie within 2 %. 16
// KiB tied with 12; 20 KiB lost a little. (Those were bursts into L1; one line a step into L2 at 6,
// 12 and 24 KiB ties within 3 %, Zen 4.)
constexpr int64_t kPanelPrefetchBytes = 12288;

// Quantized (2-8 bits), at least one whole panel, still in the MLX layout.
bool PanelEligible(const Matrix& m);

// Rows held in panels (0 for the MLX layout); rows from here on keep the MLX layout.
inline int64_t PanelledRows(const Matrix& m) {
  return m.quantized && m.quant.panels ? m.rows / kPanelRows * kPanelRows : 0;
}

// True when weights of this many bytes cannot stay in the last-level cache between uses (more
// than half its size; 32 MiB when the system does not say): mark their matrices
// AffineQuant::streamed so the panel kernel prefetches their codes. The engine's default cycle
// costs also take such a model as memory-bound.
bool WeightsStreamFromMemory(uint64_t weight_bytes);

// Rewrites the codes, scales and biases of `m` in place into the panel layout and marks it.
// They must be writable memory that the caller owns and that no other matrix reads in the MLX
// layout. Requires PanelEligible(m).
void RepackToPanels(Matrix& m, ThreadPool* pool = nullptr);

// Where panel `panel` of a panelled matrix of `bits`-bit codes keeps its data: group g's codes
// start at codes + g * group_bytes, its 16 scales and biases at entry scale_base + 16 g.
struct PanelSpan {
  const uint8_t* codes;
  int64_t group_bytes;
  int64_t scale_base;
};
inline PanelSpan PanelAt(const Matrix& w, int64_t panel, int bits) {
  const int64_t groups = w.GroupsPerRow(), group_bytes = 16 * w.quant.group_size * bits / 8;
  return {reinterpret_cast<const uint8_t*>(w.quant.packed) + panel * groups * group_bytes,
          group_bytes, panel * kPanelRows * groups};
}

// The 64 codes of one 4-column step of a panel of a width other than 4 and 8, spread to bytes in
// the 8-bit order: they are 64 consecutive codes of the panel's bit stream starting at `stream`.
void UnpackPanelStep(const uint8_t* stream, int bits, uint8_t* out);

// The calling thread's buffer for one panel of `cols` columns spread to bytes (16 * cols bytes,
// the 8-bit step order), reused by its later calls. The kernels spread a panel of 2, 3, 5 or 6
// bits into it once, then run their 8-bit steps on it for every block of activation rows, instead
// of spreading every step again for each block (and, without VBMI, each half) of rows.
uint8_t* PanelBytesBuffer(int64_t cols);

// Code of row r, column k, and the index of the (scale, bias) entry of row r, group g, in either
// layout.
uint32_t CodeAt(const Matrix& m, int64_t r, int64_t k);
int64_t ScaleIndex(const Matrix& m, int64_t r, int64_t g);

}  // namespace mtplx::kernels
