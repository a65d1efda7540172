#include "kernels/matmul_avx512.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "kernels/avx512_common.h"
#include "kernels/bit_widths.h"
#include "kernels/panels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MTPLX_HAVE_AVX512_KERNELS 1
// GCC 12 reports the deliberately undefined pass-through operands inside its own AVX-512 headers
// (_mm512_undefined_*) as uninitialized once they are inlined here.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

namespace mtplx::kernels::avx512 {

#ifdef MTPLX_HAVE_AVX512_KERNELS

bool Supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx512vbmi");
}

// The same values as QuantizeActivationsPortable: max is exact in any order, and cvtps_epi32
// rounds to nearest even like lrintf in the default rounding mode.
MTPLX_AVX512 void QuantizeActivationsAvx512(const float* x, int64_t rows, int64_t cols,
                                            int group_size, int8_t* x8, float* steps) {
  const int64_t stride = X8Stride(cols), groups = cols / group_size;
  for (int64_t m = 0; m < rows; ++m) {
    int8_t* out = x8 + m * stride;
    std::fill(out + cols, out + stride, int8_t{0});
    for (int64_t g = 0; g < groups; ++g) {
      const float* xg = x + m * cols + g * group_size;
      __m512 amax = _mm512_setzero_ps();
      for (int k = 0; k < group_size; k += 16)
        amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_loadu_ps(xg + k)));
      const float top = _mm512_reduce_max_ps(amax);
      const __m512 inverse = _mm512_set1_ps(top > 0.0f ? 127.0f / top : 0.0f);
      steps[m * groups + g] = top / 127.0f;
      for (int k = 0; k < group_size; k += 16) {
        const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xg + k), inverse));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + g * group_size + k),
                         _mm512_cvtepi32_epi8(q));
      }
    }
  }
}

namespace {

MTPLX_AVX512 inline __m512 Lane(__m512 v, int64_t lane) {
  return _mm512_permutexvar_ps(_mm512_set1_epi32(static_cast<int>(lane)), v);
}

// Adds sum over groups of bias[g] * group_sum[m][g] to res[m], 16 groups at a time.
template <int Rows>
MTPLX_AVX512 inline void AddBiasTerms(const Matrix& w, int64_t n, const float* group_sums,
                                      int64_t groups, __m512* res) {
  __m512 acc[Rows];
#pragma GCC unroll 4
  for (int m = 0; m < Rows; ++m) acc[m] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; g += 16) {
    const int64_t count = std::min<int64_t>(16, groups - g);
    const __m512 bias = LoadScales(w.quant.biases, n * groups + g, count, w.quant.scale_dtype);
    const __mmask16 mask = count >= 16 ? __mmask16{0xFFFF} : (__mmask16{1} << count) - 1;
#pragma GCC unroll 4
    for (int m = 0; m < Rows; ++m) {
      acc[m] =
          _mm512_fmadd_ps(bias, _mm512_maskz_loadu_ps(mask, group_sums + m * groups + g), acc[m]);
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < Rows; ++m) res[m] = _mm512_add_ps(res[m], acc[m]);
}

// Exact activations for `Rows` rows starting at `x`: per group, 16-lane f32 sums of code * x,
// then res += sum * scale.
template <int Bits, int Rows>
MTPLX_AVX512 void RowF32(const Matrix& w, int64_t n, const float* x, const float* group_sums,
                         int64_t groups, float* y, int64_t y_stride) {
  const int64_t cols = w.cols, group_size = w.quant.group_size;
  const uint8_t* src = reinterpret_cast<const uint8_t*>(w.quant.packed + n * w.PackedWordsPerRow());
  __m512 res[Rows], acc[Rows];
#pragma GCC unroll 4
  for (int m = 0; m < Rows; ++m) res[m] = acc[m] = _mm512_setzero_ps();
  __m512 scales = _mm512_setzero_ps();
  int64_t g = 0;
  for (int64_t c = 0; c < cols; c += 64) {
    const __m512i codes = Unpack64<Bits>(src + c / 8 * Bits, BlockLoadMask(Bits, cols - c));
    __m512 chunk[4];
    chunk[0] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(codes, 0)));
    chunk[1] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(codes, 1)));
    chunk[2] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(codes, 2)));
    chunk[3] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(codes, 3)));
    const int chunks = static_cast<int>(std::min<int64_t>(4, (cols - c) / 16));
    for (int q = 0; q < chunks; ++q) {
      const int64_t col = c + 16 * q;
#pragma GCC unroll 4
      for (int m = 0; m < Rows; ++m) {
        acc[m] = _mm512_fmadd_ps(chunk[q], _mm512_loadu_ps(x + m * cols + col), acc[m]);
      }
      if ((col + 16) % group_size != 0) continue;
      if (g % 16 == 0) {
        scales = LoadScales(w.quant.scales, n * groups + g, std::min<int64_t>(16, groups - g),
                            w.quant.scale_dtype);
      }
      const __m512 scale = Lane(scales, g % 16);
#pragma GCC unroll 4
      for (int m = 0; m < Rows; ++m) {
        res[m] = _mm512_fmadd_ps(acc[m], scale, res[m]);
        acc[m] = _mm512_setzero_ps();
      }
      ++g;
    }
  }
  AddBiasTerms<Rows>(w, n, group_sums, groups, res);
#pragma GCC unroll 4
  for (int m = 0; m < Rows; ++m) y[m * y_stride] = _mm512_reduce_add_ps(res[m]);
}

template <int Bits>
void RowAllBlocks(const Matrix& w, int64_t n, const PreparedActivations& act, float* y,
                  int64_t y_stride) {
  ForRowBlocks(act.rows, [&](auto block, int64_t m) {
    RowF32<Bits, decltype(block)::value>(w, n, act.x + m * w.cols, act.group_sums + m * act.groups,
                                         act.groups, y + m * y_stride, y_stride);
  });
}

// Up to 16 dense weights from column `col` as f32 (masked past `count`).
MTPLX_AVX512 inline __m512 LoadDense(const void* row, int64_t col, __mmask16 mask, DType dtype) {
  if (dtype == DType::kF32)
    return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(row) + col);
  const __m256i half = _mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(row) + col);
  if (dtype == DType::kF16) return _mm512_cvtph_ps(half);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
}

template <int Rows>
MTPLX_AVX512 void DenseRowBlock(const void* row, DType dtype, int64_t cols, const float* x,
                                float* y, int64_t y_stride) {
  // Two accumulators per row (16-column chunk k goes to acc[k % 2]) halve the FMA dependency
  // chain that bounds a single row; the assignment does not depend on Rows.
  __m512 even[Rows], odd[Rows];
#pragma GCC unroll 4
  for (int m = 0; m < Rows; ++m) even[m] = odd[m] = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 32 <= cols; c += 32) {
    const __m512 w0 = LoadDense(row, c, 0xFFFF, dtype);
    const __m512 w1 = LoadDense(row, c + 16, 0xFFFF, dtype);
#pragma GCC unroll 4
    for (int m = 0; m < Rows; ++m) {
      even[m] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + m * cols + c), even[m]);
      odd[m] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + m * cols + c + 16), odd[m]);
    }
  }
  for (; c < cols; c += 16) {  // at most two chunks, the last possibly partial
    const int64_t count = std::min<int64_t>(16, cols - c);
    const __mmask16 mask = count >= 16 ? __mmask16{0xFFFF} : (__mmask16{1} << count) - 1;
    const __m512 weights = LoadDense(row, c, mask, dtype);
    // Separate loops, not a reference picked at run time: that would force the accumulators
    // out of registers.
    if ((c / 16) % 2 == 0) {
#pragma GCC unroll 4
      for (int m = 0; m < Rows; ++m)
        even[m] = _mm512_fmadd_ps(weights, _mm512_maskz_loadu_ps(mask, x + m * cols + c), even[m]);
    } else {
#pragma GCC unroll 4
      for (int m = 0; m < Rows; ++m)
        odd[m] = _mm512_fmadd_ps(weights, _mm512_maskz_loadu_ps(mask, x + m * cols + c), odd[m]);
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < Rows; ++m) {
    y[m * y_stride] = _mm512_reduce_add_ps(_mm512_add_ps(even[m], odd[m]));
  }
}

// acc += codes . (the four int8 activations at x, broadcast to every lane) (vpdpbusd) updated in
// place, the broadcast folded into the instruction's memory operand. GCC 12 copies the
// accumulator of the intrinsic through a second register every step (two extra moves on the
// dependency chain); the asm form keeps it in one.
MTPLX_AVX512 inline void DotAccumulateBroadcast(__m512i& acc, __m512i codes, const int8_t* x) {
  asm("vpdpbusd %2%{1to16%}, %1, %0"
      : "+v"(acc)
      : "v"(codes), "m"(*reinterpret_cast<const int32_t*>(x)));
}

// acc += codes . x, x holding four int8 activations broadcast to every lane: the register form
// of DotAccumulateBroadcast, for a broadcast that several panels share.
MTPLX_AVX512 inline void DotAccumulate(__m512i& acc, __m512i codes, __m512i x) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(codes), "v"(x));
}

MTPLX_AVX512 inline __m512i Broadcast4(const int8_t* x) {
  int32_t v;
  std::memcpy(&v, x, sizeof(v));
  return _mm512_set1_epi32(v);
}

// Asks for the codes kPanelPrefetchBytes past `step`, one prefetch beside each step's load rather
// than a burst of a group's lines at its start: a burst finds the core's miss buffers full and
// stalls the dot products behind it. With two or more rows (IntoL2) the line goes to L2: L1 holds
// few misses in flight, and several rows' arithmetic leaves too little time between loads to
// recycle them, while L2 tracks many more and an L1 miss that hits L2 costs the out-of-order core
// little. One row keeps L1: there the plain decoding step of the x8 widened model ran 13 % slower
// into L2. 65536 x 4096 from DRAM, 2 threads, Zen 4, the forms in the same iterations (GB/s of
// weights; burst into L1 -> one a step into L1 -> one a step into L2): 8-bit M = 1 38.8 -> 41.5 ->
// about the same, M = 4 27.5 -> 30.8-33.8 -> 33.4-44.3, M = 5 26.2 -> 33.4-34.3 -> 45.1; 4-bit
// M = 4 27.3 -> 27.3-29.8 -> 33.6, M = 5 25.0 -> 25.9-27.2 -> 35.1. Steps narrower than a line
// (2-6 bits) ask for some lines twice.
template <bool IntoL2>
MTPLX_AVX512 inline void PrefetchAhead(const uint8_t* step) {
  if constexpr (IntoL2) {
    _mm_prefetch(reinterpret_cast<const char*>(step) + kPanelPrefetchBytes, _MM_HINT_T1);
  } else {
    _mm_prefetch(reinterpret_cast<const char*>(step) + kPanelPrefetchBytes, _MM_HINT_T0);
  }
}

// `Panels` consecutive panels (16 output rows each) against `Rows` int8 activation rows starting
// at row0; see PanelInt8. Panel j writes y + 16 j. Each activation row runs the same instructions
// whatever Rows is, and each panel's int32 dots and float steps are the same whatever Panels is.
//
// Two panels share each activation broadcast: a step of one panel and four rows loads its codes
// and four broadcasts for four vpdpbusd, and a core issues those loads slower than the
// vpdpbusd it has room for (Zen 5: two 512-bit vpdpbusd a cycle); two panels load six for eight.
template <int Bits, int Rows, int Panels, bool Prefetch>
MTPLX_AVX512 void PanelRows(const Matrix& w, const PanelSpan* spans, const PreparedActivations& act,
                            int64_t row0, float* y, int64_t y_stride) {
  static_assert(Panels == 1 || Panels == 2);
  const int64_t group_size = w.quant.group_size, groups = act.groups;
  const int8_t* x8 = act.x8_columns + row0 * act.x8_stride;
  const float* steps = act.steps + row0 * groups;
  const float* sums = act.group_sums + row0 * groups;
  // Independent int32 accumulators a panel and row: four for a lone row (it would wait on the
  // vpdpbusd latency, 4-5 cycles, instead of its throughput), fewer as panels and rows add
  // chains of their own (fewer partial sums to add per group). Int32 sums are exact in any order.
  constexpr int kChains = Rows <= 1 ? 4 : (Panels == 1 || Rows == 2 ? 2 : 1);
  // 4-bit, one panel: the high nibbles stay in place (16 x code), one AND instead of a shift and
  // an AND; their products land in the odd chains, divided by 16 exactly below. Two panels are
  // short of registers for the separate chains that needs.
  constexpr bool kHighInPlace = Bits == 4 && Panels == 1;
  static_assert(!kHighInPlace || kChains >= 2);
  __m512 res[Panels][Rows], bias_terms[Panels][Rows];
#pragma GCC unroll 2
  for (int j = 0; j < Panels; ++j)
#pragma GCC unroll 8
    for (int m = 0; m < Rows; ++m) res[j][m] = bias_terms[j][m] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    const uint8_t* wg[Panels];
#pragma GCC unroll 2
    for (int j = 0; j < Panels; ++j) wg[j] = spans[j].codes + g * spans[j].group_bytes;
    const int8_t* xg = x8 + g * group_size;
    __m512i acc[4][Panels][Rows];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
#pragma GCC unroll 2
      for (int j = 0; j < Panels; ++j)
#pragma GCC unroll 8
        for (int m = 0; m < Rows; ++m) acc[q][j][m] = _mm512_setzero_si512();
    if constexpr (Bits != 4) {
      // 4 columns x 16 rows a step: a 64-byte load for 8-bit, else 8 * Bits packed bytes
      // spread to bytes (VBMI), in the same order.
      for (int64_t s = 0; s < group_size / 4; s += 4) {
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
          __m512i codes4[Panels];
#pragma GCC unroll 2
          for (int j = 0; j < Panels; ++j) {
            const uint8_t* step = wg[j] + (s + q) * 8 * Bits;
            if constexpr (Prefetch) PrefetchAhead<(Rows >= 2)>(step);
            codes4[j] = Unpack64<Bits>(step, BlockLoadMask(Bits, 64));
          }
#pragma GCC unroll 8
          for (int m = 0; m < Rows; ++m) {
            const int8_t* xm = xg + m * act.x8_stride + (s + q) * 4;
            if constexpr (Panels == 1) {
              DotAccumulateBroadcast(acc[q % kChains][0][m], codes4[0], xm);
            } else {
              const __m512i x = Broadcast4(xm);
#pragma GCC unroll 2
              for (int j = 0; j < Panels; ++j) DotAccumulate(acc[q % kChains][j][m], codes4[j], x);
            }
          }
        }
      }
    } else {
      const __m512i low4 = _mm512_set1_epi8(0x0F),
                    high4 = _mm512_set1_epi8(static_cast<char>(0xF0));
      for (int64_t s = 0; s < group_size / 8; s += 2) {
#pragma GCC unroll 2
        for (int half = 0; half < 2; ++half) {
          __m512i lo[Panels], hi[Panels];
#pragma GCC unroll 2
          for (int j = 0; j < Panels; ++j) {
            const uint8_t* step = wg[j] + (s + half) * 64;
            if constexpr (Prefetch) PrefetchAhead<(Rows >= 2)>(step);
            const __m512i packed = _mm512_loadu_si512(step);
            lo[j] = _mm512_and_si512(packed, low4);
            hi[j] = kHighInPlace ? _mm512_and_si512(packed, high4)
                                 : _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4);
          }
          const int a = (2 * half) % kChains, b = (2 * half + 1) % kChains;
#pragma GCC unroll 8
          for (int m = 0; m < Rows; ++m) {
            const int8_t* xm = xg + m * act.x8_stride + (s + half) * 8;
            if constexpr (Panels == 1) {
              DotAccumulateBroadcast(acc[a][0][m], lo[0], xm);
              DotAccumulateBroadcast(acc[b][0][m], hi[0], xm + 4);
            } else {
              const __m512i x_lo = Broadcast4(xm), x_hi = Broadcast4(xm + 4);
#pragma GCC unroll 2
              for (int j = 0; j < Panels; ++j) {
                DotAccumulate(acc[a][j][m], lo[j], x_lo);
                DotAccumulate(acc[b][j][m], hi[j], x_hi);
              }
            }
          }
        }
      }
    }
#pragma GCC unroll 2
    for (int j = 0; j < Panels; ++j) {
      const int64_t entry = spans[j].scale_base + g * 16;
      const __m512 scales = LoadScales(w.quant.scales, entry, 16, w.quant.scale_dtype);
      const __m512 biases = LoadScales(w.quant.biases, entry, 16, w.quant.scale_dtype);
#pragma GCC unroll 8
      for (int m = 0; m < Rows; ++m) {
        __m512i odd = _mm512_add_epi32(acc[1][j][m], acc[3][j][m]);
        if constexpr (kHighInPlace) odd = _mm512_srai_epi32(odd, 4);  // exact: a multiple of 16
        const __m512 dot =
            _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_add_epi32(acc[0][j][m], acc[2][j][m]), odd));
        const __m512 scale = _mm512_mul_ps(scales, _mm512_set1_ps(steps[m * groups + g]));
        res[j][m] = _mm512_fmadd_ps(dot, scale, res[j][m]);
        bias_terms[j][m] =
            _mm512_fmadd_ps(biases, _mm512_set1_ps(sums[m * groups + g]), bias_terms[j][m]);
      }
    }
  }
#pragma GCC unroll 2
  for (int j = 0; j < Panels; ++j)
#pragma GCC unroll 8
    for (int m = 0; m < Rows; ++m)
      _mm512_storeu_ps(y + m * y_stride + j * kPanelRows,
                       _mm512_add_ps(res[j][m], bias_terms[j][m]));
}

// From this many activation rows on, a panel of 2, 3, 5 or 6 bits is unpacked to bytes once and
// every row block runs the 8-bit steps on the copy, instead of each block of 4 rows spreading the
// codes again (three vector ops a step beside its 4 dot products). One core, a 1024 x 4096
// 6-bit matrix in cache: 64 rows 1.29-1.35 -> 1.06-1.10 ms (8-bit: 1.11-1.18), 16 rows
// 348 -> 310-318 us; at 8 rows the copy's stores and reloads cost more than they save, and
// 4-bit codes (one AND a step) never gain.
constexpr int64_t kUnpackOnceRows = 12;

// From this many activation rows on (a prefill's), consecutive panels run in pairs (PanelRows).
// Fewer rows are bound by the weights' stream when they come from memory, and two streams a core
// load slower than one (16384 x 4096 from DRAM, 2 threads, 8-bit: M = 1 0.93-0.95 -> 1.41-1.67
// ms paired, M = 8 1.72-1.74 -> 1.87-1.94; M = 64 10.6-10.9 -> 9.2-9.4).
constexpr int64_t kPairRows = 16;

// Panel `panel` spread to `out` (16 * cols bytes) with VBMI: the panel's bit stream is contiguous
// across its groups, and the masked loads read no byte past a step.
template <int Bits>
MTPLX_AVX512 PanelSpan UnpackPanelAvx512(const Matrix& w, int64_t panel, uint8_t* out) {
  const auto [codes, group_bytes, scale_base] = PanelAt(w, panel, Bits);
  const int64_t steps = w.cols / 4, step_bytes = 8 * Bits;
  for (int64_t t = 0; t < steps; ++t) {
    const uint8_t* src = codes + t * step_bytes;
    if (w.quant.streamed)
      _mm_prefetch(reinterpret_cast<const char*>(src) + kPanelPrefetchBytes, _MM_HINT_T0);
    _mm512_storeu_si512(out + t * 64, Unpack64<Bits>(src, BlockLoadMask(Bits, 64)));
  }
  return {out, kPanelRows * w.quant.group_size, scale_base};
}

// `Panels` panels from `panel` against every row block. Five rows (a depth-4 verify) run as one
// block, not 4 + 1 (the lone row's pass costs most of a 1-row call's arithmetic): 256 x 2048
// 8-bit in L2, 5 rows 14.2 -> 11.6 us (4 rows 9.1); 65536 x 4096 from DRAM, v(5) 1.19 -> 1.10.
// Six rows (depth 5) likewise run as one block, not 4 + 2: on a CPU with one 512-bit multiply
// port, a depth-5 verify in a cycle on the x8 widened model went from 1.145 to 1.078 depth-4
// verifies.
template <int Bits, int Panels>
void PanelGroupRows(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
                    int64_t y_stride) {
  PanelSpan spans[Panels];
  // A block of 6 rows keeps 12 int32 chains and 12 float sums a panel in registers; a pair of
  // panels (prefill, 16 rows and more) would spill them, so pairs keep blocks of at most 4.
  const auto for_row_blocks = [&](auto&& fn) {
    if constexpr (Panels == 1) {
      ForRowBlocksUpTo6(act.rows, fn);
    } else {
      ForRowBlocks(act.rows, fn);
    }
  };
  if constexpr (Bits != 4 && Bits != 8) {
    if (act.rows >= kUnpackOnceRows) {
      // Spread to bytes once (PanelBytesBuffer holds both panels of a pair), then 8-bit steps.
      uint8_t* bytes = PanelBytesBuffer(Panels * w.cols);
      for (int j = 0; j < Panels; ++j)
        spans[j] = UnpackPanelAvx512<Bits>(w, panel + j, bytes + j * kPanelRows * w.cols);
      for_row_blocks([&](auto block, int64_t m) {
        constexpr int kRows = decltype(block)::value;
        PanelRows<8, kRows, Panels, false>(w, spans, act, m, y + m * y_stride, y_stride);
      });
      return;
    }
  }
  for (int j = 0; j < Panels; ++j) spans[j] = PanelAt(w, panel + j, Bits);
  for_row_blocks([&](auto block, int64_t m) {
    constexpr int kRows = decltype(block)::value;
    if (w.quant.streamed) {
      PanelRows<Bits, kRows, Panels, true>(w, spans, act, m, y + m * y_stride, y_stride);
    } else {
      PanelRows<Bits, kRows, Panels, false>(w, spans, act, m, y + m * y_stride, y_stride);
    }
  });
}

template <int Bits>
void PanelRange(const Matrix& w, int64_t first, int64_t count, const PreparedActivations& act,
                float* y, int64_t y_stride) {
  int64_t j = 0;
  if (act.rows >= kPairRows)
    for (; j + 2 <= count; j += 2)
      PanelGroupRows<Bits, 2>(w, first + j, act, y + j * kPanelRows, y_stride);
  for (; j < count; ++j) PanelGroupRows<Bits, 1>(w, first + j, act, y + j * kPanelRows, y_stride);
}

}  // namespace

void PanelInt8(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
               int64_t y_stride) {
  PanelRangeInt8(w, panel, 1, act, y, y_stride);
}

void PanelRangeInt8(const Matrix& w, int64_t first, int64_t count, const PreparedActivations& act,
                    float* y, int64_t y_stride) {
  MTPLX_CHECK(w.quant.panels, "not a panelled matrix");
  ForBitWidth(w.quant.bits, [&](auto bits) {
    PanelRange<decltype(bits)::value>(w, first, count, act, y, y_stride);
  });
}

void DenseRow(const Matrix& w, int64_t n, const float* x, int64_t m_rows, float* y,
              int64_t y_stride) {
  const void* row = static_cast<const uint8_t*>(w.data) + n * w.cols * DTypeSize(w.dtype);
  ForRowBlocks(m_rows, [&](auto block, int64_t m) {
    DenseRowBlock<decltype(block)::value>(row, w.dtype, w.cols, x + m * w.cols, y + m * y_stride,
                                          y_stride);
  });
}

void QuantRowF32(const Matrix& w, int64_t n, const PreparedActivations& act, float* y,
                 int64_t y_stride) {
  ForBitWidth(w.quant.bits,
              [&](auto bits) { RowAllBlocks<decltype(bits)::value>(w, n, act, y, y_stride); });
}

#else  // no x86 AVX-512 kernels in this build

bool Supported() { return false; }
void QuantizeActivationsAvx512(const float*, int64_t, int64_t, int, int8_t*, float*) {
  MTPLX_CHECK(false, "AVX-512 kernels are not built for this target");
}
void QuantRowF32(const Matrix&, int64_t, const PreparedActivations&, float*, int64_t) {
  MTPLX_CHECK(false, "AVX-512 kernels are not built for this target");
}
void DenseRow(const Matrix&, int64_t, const float*, int64_t, float*, int64_t) {
  MTPLX_CHECK(false, "AVX-512 kernels are not built for this target");
}
void PanelInt8(const Matrix&, int64_t, const PreparedActivations&, float*, int64_t) {
  MTPLX_CHECK(false, "AVX-512 kernels are not built for this target");
}
void PanelRangeInt8(const Matrix&, int64_t, int64_t, const PreparedActivations&, float*, int64_t) {
  MTPLX_CHECK(false, "AVX-512 kernels are not built for this target");
}

#endif

}  // namespace mtplx::kernels::avx512
