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
    // Step s (4 columns): one byte per code (8-bit, or other widths spread by UnpackPanelNeon);
    // one 16-byte activation load covers four steps (lane q for step s + q).
    static_assert(Bits == 8);
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
        x_sums[m] = vdotq_s32(x_sums[m], x[m], ones);
      }
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const uint8_t* step = wg + (s + q) * 64;
#pragma GCC unroll 2
        for (int j = 0; j < kQuarters; ++j) {
          uint8x16_t codes = vld1q_u8(step + (2 * half + j) * 16);
          codes = veorq_u8(codes, sign);  // c - 128 as a signed byte
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
    // sum((c - 128) x) + 128 sum(x) = sum(c x), exact in int32.
#pragma GCC unroll 4
    for (int m = 0; m < Rows; ++m) {
      const int32x4_t correction = vdupq_n_s32(128 * vaddvq_s32(x_sums[m]));
#pragma GCC unroll 2
      for (int j = 0; j < kQuarters; ++j) acc[m][j] = vaddq_s32(acc[m][j], correction);
    }
  }
}

template <int Bits, int Rows>
MTPLX_NEON_DOT void PanelRows(const Matrix& w, const PanelSpan& span,
                              const PreparedActivations& act, int64_t row0, float* y,
                              int64_t y_stride, bool prefetch) {
  const int64_t group_size = w.quant.group_size, groups = act.groups;
  const auto [codes, group_bytes, scale_base] = span;
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
      if (prefetch && half == 0)
        for (int64_t line = 0; line < group_bytes; line += 64)
          __builtin_prefetch(wg + kPanelPrefetchBytes + line);
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

// Spreading a run of 8 codes of `Bits` bits (`Bits` bytes of the stream) to bytes: tbl puts the
// two stream bytes holding code i in 16-bit lane i, a right shift by the code's bit offset (a
// negative left shift) and a mask leave the code, and a narrowing move packs the lanes to bytes.
template <int Bits>
struct SpreadTables {
  uint8_t pairs[16];
  int16_t shifts[8];
  constexpr SpreadTables() : pairs(), shifts() {
    for (int i = 0; i < 8; ++i) {
      const int bit = i * Bits;
      pairs[2 * i] = static_cast<uint8_t>(bit / 8);
      pairs[2 * i + 1] = static_cast<uint8_t>(bit / 8 + 1);
      shifts[i] = static_cast<int16_t>(-(bit % 8));
    }
  }
};

// The 8 codes of the run at `src` as bytes. Reads 16 bytes from `src`.
template <int Bits>
MTPLX_NEON_DOT inline uint8x8_t SpreadRun(const uint8_t* src) {
  static constexpr SpreadTables<Bits> kTables;
  const uint16x8_t pairs = vreinterpretq_u16_u8(vqtbl1q_u8(vld1q_u8(src), vld1q_u8(kTables.pairs)));
  const uint16x8_t codes = vandq_u16(vshlq_u16(pairs, vld1q_s16(kTables.shifts)),
                                     vdupq_n_u16(static_cast<uint16_t>((1 << Bits) - 1)));
  return vmovn_u16(codes);
}

// A panel spread to PanelBytesBuffer (panels.h) with NEON: the panel's bit stream is contiguous
// across its groups, so its steps are spread in one pass; the last steps, whose 16-byte reads would
// pass the end of the panel, go through the scalar UnpackPanelStep.
template <int Bits>
MTPLX_NEON_DOT PanelSpan UnpackPanelNeon(const Matrix& w, int64_t panel) {
  const auto [codes, group_bytes, scale_base] = PanelAt(w, panel, Bits);
  const int64_t steps = w.cols / 4, step_bytes = 8 * Bits, panel_bytes = steps * step_bytes;
  uint8_t* out = PanelBytesBuffer(w.cols);
  int64_t t = 0;
  for (; (t + 1) * step_bytes + 16 <= panel_bytes; ++t) {
    const uint8_t* src = codes + t * step_bytes;
    if (w.quant.streamed) __builtin_prefetch(src + kPanelPrefetchBytes);
#pragma GCC unroll 4
    for (int pair = 0; pair < 4; ++pair)
      vst1q_u8(out + t * 64 + pair * 16, vcombine_u8(SpreadRun<Bits>(src + 2 * pair * Bits),
                                                     SpreadRun<Bits>(src + (2 * pair + 1) * Bits)));
  }
  for (; t < steps; ++t) UnpackPanelStep(codes + t * step_bytes, Bits, out + t * 64);
  return {out, kPanelRows * w.quant.group_size, scale_base};
}

}  // namespace

void PanelInt8(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
               int64_t y_stride) {
  MTPLX_CHECK(w.quant.panels, "not a panelled matrix");
  ForBitWidth(w.quant.bits, [&](auto bits) {
    constexpr int kBits = decltype(bits)::value;
    if constexpr (kBits != 4 && kBits != 8) {
      // The codes spread to bytes once a panel, not once a step, half and row block; the 8-bit
      // steps then run on the copy (exact for any byte).
      const PanelSpan unpacked = UnpackPanelNeon<kBits>(w, panel);
      ForRowBlocks(act.rows, [&](auto block, int64_t m) {
        PanelRows<8, decltype(block)::value>(w, unpacked, act, m, y + m * y_stride, y_stride,
                                             /*prefetch=*/false);
      });
    } else {
      ForRowBlocks(act.rows, [&](auto block, int64_t m) {
        PanelRows<kBits, decltype(block)::value>(w, PanelAt(w, panel, kBits), act, m,
                                                 y + m * y_stride, y_stride, w.quant.streamed);
      });
    }
  });
}

#else  // not AArch64 with GCC: no NEON kernels

bool Supported() { return false; }
void PanelInt8(const Matrix&, int64_t, const PreparedActivations&, float*, int64_t) {
  MTPLX_CHECK(false, "NEON kernels are not built for this target");
}

#endif

}  // namespace mtplx::kernels::neon
