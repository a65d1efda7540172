#include "kernels/matmul_neon.h"

#include "base/check.h"
#include "kernels/bit_widths.h"
#include "kernels/panels.h"

#if defined(__aarch64__) && defined(__GNUC__)
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#define MTPLX_HAVE_NEON_DOT_KERNELS 1
#define MTPLX_NEON_DOT __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

namespace mtplx::kernels::neon {

#ifdef MTPLX_HAVE_NEON_DOT_KERNELS

bool Supported() { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

namespace {

// As the x86 panel kernels: streamed weights are fetched this far ahead of the reads.
constexpr int64_t kPrefetchBytes = 6144;

// Four scale or bias entries as f32, exactly.
MTPLX_NEON_DOT inline float32x4_t LoadFour(const void* base, int64_t first, DType dtype) {
  if (dtype == DType::kF32) return vld1q_f32(static_cast<const float*>(base) + first);
  const uint16x4_t half = vld1_u16(static_cast<const uint16_t*>(base) + first);
  if (dtype == DType::kF16) return vcvt_f32_f16(vreinterpret_f16_u16(half));
  return vreinterpretq_f32_u32(vshll_n_u16(half, 16));  // bf16: the high half of an f32
}

// Quarter k of a 64-byte step holds output rows 4k..4k+3 (4 bytes each). A panel is run in two
// halves of 8 output rows (quarters 2h and 2h+1): accumulators, sums and bias terms of a whole
// panel for 4 activation rows would not fit the 32 vector registers.
constexpr int kQuarters = 2;

// acc[m][j] += the dot of group `wg`'s quarter 2 * half + j with activation row m, for every
// column of the group: the exact int32 dot VNNI computes.
template <int Bits, int Rows>
MTPLX_NEON_DOT inline void GroupDots(const uint8_t* wg, int half, const int8_t* const* xg,
                                     int64_t group_size, int32x4_t (&acc)[Rows][kQuarters]) {
  if constexpr (Bits == 4) {
    // Step s (8 columns): low nibbles are columns 8s..8s+3, high nibbles 8s+4..8s+7; one
    // 16-byte activation load covers two steps (lanes 0-1 and 2-3).
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    for (int64_t s = 0; s < group_size / 8; s += 2) {
      int8x16_t x[Rows];
#pragma GCC unroll 4
      for (int m = 0; m < Rows; ++m) x[m] = vld1q_s8(xg[m] + s * 8);
#pragma GCC unroll 2
      for (int step = 0; step < 2; ++step)
#pragma GCC unroll 2
        for (int j = 0; j < kQuarters; ++j) {
          const uint8x16_t packed = vld1q_u8(wg + (s + step) * 64 + (2 * half + j) * 16);
          const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(packed, low4));
          const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(packed, 4));
#pragma GCC unroll 4
          for (int m = 0; m < Rows; ++m) {
            if (step == 0) {
              acc[m][j] = vdotq_laneq_s32(acc[m][j], lo, x[m], 0);
              acc[m][j] = vdotq_laneq_s32(acc[m][j], hi, x[m], 1);
            } else {
              acc[m][j] = vdotq_laneq_s32(acc[m][j], lo, x[m], 2);
              acc[m][j] = vdotq_laneq_s32(acc[m][j], hi, x[m], 3);
            }
          }
        }
    }
  } else {
    // Step s (4 columns): one byte per code (8-bit in place, other widths unpacked); one
    // 16-byte activation load covers four steps (lane q for step s + q).
    alignas(16) uint8_t unpacked[64];
    int32x4_t x_sums[Rows];
#pragma GCC unroll 4
    for (int m = 0; m < Rows; ++m) x_sums[m] = vdupq_n_s32(0);
    const int8x16_t ones = vdupq_n_s8(1);
    const uint8x16_t sign = vdupq_n_u8(0x80);
    for (int64_t s = 0; s < group_size / 4; s += 4) {
      int8x16_t x[Rows];
#pragma GCC unroll 4
      for (int m = 0; m < Rows; ++m) {
        x[m] = vld1q_s8(xg[m] + s * 4);
        if constexpr (Bits == 8) x_sums[m] = vdotq_s32(x_sums[m], x[m], ones);
      }
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const uint8_t* step = wg + (s + q) * 8 * Bits;
        if constexpr (Bits != 8) {
          UnpackPanelStep(step, Bits, unpacked);
          step = unpacked;
        }
#pragma GCC unroll 2
        for (int j = 0; j < kQuarters; ++j) {
          uint8x16_t codes = vld1q_u8(step + (2 * half + j) * 16);
          if constexpr (Bits == 8) codes = veorq_u8(codes, sign);  // c - 128 as a signed byte
          const int8x16_t c = vreinterpretq_s8_u8(codes);
#pragma GCC unroll 4
          for (int m = 0; m < Rows; ++m) {
            switch (q) {  // the lane is an immediate
              case 0:
                acc[m][j] = vdotq_laneq_s32(acc[m][j], c, x[m], 0);
                break;
              case 1:
                acc[m][j] = vdotq_laneq_s32(acc[m][j], c, x[m], 1);
                break;
              case 2:
                acc[m][j] = vdotq_laneq_s32(acc[m][j], c, x[m], 2);
                break;
              default:
                acc[m][j] = vdotq_laneq_s32(acc[m][j], c, x[m], 3);
                break;
            }
          }
        }
      }
    }
    if constexpr (Bits == 8) {
      // sum((c - 128) x) + 128 sum(x) = sum(c x), exact in int32.
#pragma GCC unroll 4
      for (int m = 0; m < Rows; ++m) {
        const int32x4_t correction = vdupq_n_s32(128 * vaddvq_s32(x_sums[m]));
#pragma GCC unroll 2
        for (int j = 0; j < kQuarters; ++j) acc[m][j] = vaddq_s32(acc[m][j], correction);
      }
    }
  }
}

template <int Bits, int Rows>
MTPLX_NEON_DOT void PanelRows(const Matrix& w, int64_t panel, const PreparedActivations& act,
                              int64_t row0, float* y, int64_t y_stride) {
  const int64_t group_size = w.quant.group_size, groups = act.groups;
  const auto [codes, group_bytes, scale_base] = PanelAt(w, panel, Bits);
  const float* steps = act.steps + row0 * groups;
  const float* sums = act.group_sums + row0 * groups;
  for (int half = 0; half < 2; ++half) {
    float32x4_t res[Rows][kQuarters], bias_terms[Rows][kQuarters];
#pragma GCC unroll 4
    for (int m = 0; m < Rows; ++m)
#pragma GCC unroll 2
      for (int j = 0; j < kQuarters; ++j) res[m][j] = bias_terms[m][j] = vdupq_n_f32(0.0f);
    for (int64_t g = 0; g < groups; ++g) {
      const uint8_t* wg = codes + g * group_bytes;
      if (w.quant.streamed && half == 0)
        for (int64_t line = 0; line < group_bytes; line += 64)
          __builtin_prefetch(wg + kPrefetchBytes + line);
      const int8_t* xg[Rows];
      int32x4_t acc[Rows][kQuarters];
#pragma GCC unroll 4
      for (int m = 0; m < Rows; ++m) {
        xg[m] = act.x8_columns + (row0 + m) * act.x8_stride + g * group_size;
#pragma GCC unroll 2
        for (int j = 0; j < kQuarters; ++j) acc[m][j] = vdupq_n_s32(0);
      }
      GroupDots<Bits, Rows>(wg, half, xg, group_size, acc);
#pragma GCC unroll 2
      for (int j = 0; j < kQuarters; ++j) {
        const int64_t entry = scale_base + g * 16 + (2 * half + j) * 4;
        const float32x4_t scales = LoadFour(w.quant.scales, entry, w.quant.scale_dtype);
        const float32x4_t biases = LoadFour(w.quant.biases, entry, w.quant.scale_dtype);
#pragma GCC unroll 4
        for (int m = 0; m < Rows; ++m) {
          const float32x4_t scale = vmulq_f32(scales, vdupq_n_f32(steps[m * groups + g]));
          res[m][j] = vfmaq_f32(res[m][j], vcvtq_f32_s32(acc[m][j]), scale);
          bias_terms[m][j] = vfmaq_f32(bias_terms[m][j], biases, vdupq_n_f32(sums[m * groups + g]));
        }
      }
    }
#pragma GCC unroll 4
    for (int m = 0; m < Rows; ++m)
#pragma GCC unroll 2
      for (int j = 0; j < kQuarters; ++j)
        vst1q_f32(y + m * y_stride + (2 * half + j) * 4, vaddq_f32(res[m][j], bias_terms[m][j]));
  }
}

}  // namespace

void PanelInt8(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
               int64_t y_stride) {
  MTPLX_CHECK(w.quant.panels, "not a panelled matrix");
  ForBitWidth(w.quant.bits, [&](auto bits) {
    ForRowBlocks(act.rows, [&](auto block, int64_t m) {
      PanelRows<decltype(bits)::value, decltype(block)::value>(w, panel, act, m, y + m * y_stride,
                                                               y_stride);
    });
  });
}

#else  // not AArch64 with GCC: no NEON kernels

bool Supported() { return false; }
void PanelInt8(const Matrix&, int64_t, const PreparedActivations&, float*, int64_t) {
  MTPLX_CHECK(false, "NEON kernels are not built for this target");
}

#endif

}  // namespace mtplx::kernels::neon
