#include "kernels/matmul_amx.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "kernels/avx512_common.h"
#include "kernels/bit_widths.h"
#include "kernels/matmul_avx512.h"
#include "kernels/panels.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define MTPLX_HAVE_AMX_KERNELS 1
#define MTPLX_AMX \
  __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,fma")))
#endif

namespace mtplx::kernels::amx {

#ifdef MTPLX_HAVE_AMX_KERNELS

namespace {

constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

// The tile register layout of LDTILECFG: palette 1, then bytes per row and rows per tile.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Tiles: 0..3 = C (rows x 16 int32 sums of four groups in flight), 4 and 5 = A (rows x k int8
// activations), 6 and 7 = B (k / 4 x 64 codes). Four groups in flight hide the latency of a tile
// product before its sums are stored. The configuration is loaded on every call: caching it per
// thread failed here (SIGILL at the next tile instruction of a later call).
constexpr int kGroupsInFlight = 4;

// Below this many activation rows the AVX-512 kernel is as fast or faster. In cache
// (kernels_bench BM_MatMulInCachePanels) AMX wins from 8 rows at 4 bits and from 4 at 8 bits; in
// a model whose weights stream from memory (the x8 widened model, 8-bit, 2 threads, Xeon with
// AMX; verify cost in plain steps, VNNI / AMX) it loses at 4-6 rows (1.17 / 1.27, 1.19 / 1.32,
// 1.22 / 1.35) and wins from 7 (1.47 / 1.40, 8 rows 1.57 / 1.43).
constexpr int64_t kFewestTileRows = 7;

MTPLX_AMX void Configure(int rows, int k) {
  TileConfig config;
  for (int c = 0; c < kGroupsInFlight; ++c) {
    config.rows[c] = static_cast<uint8_t>(rows);
    config.bytes_per_row[c] = 64;
  }
  for (int t = 4; t < 6; ++t) {
    config.rows[t] = static_cast<uint8_t>(rows);
    config.bytes_per_row[t] = static_cast<uint16_t>(k);
  }
  for (int t = 6; t < 8; ++t) {
    config.rows[t] = static_cast<uint8_t>(k / 4);
    config.bytes_per_row[t] = 64;
  }
  _tile_loadconfig(&config);
}

// The B tile of `k` columns (k / 4 steps of 4 columns) starting at step `first_step` of a group,
// in the 8-bit panel order: the codes themselves at 8 bits, else spread to bytes into `scratch`.
template <int Bits>
MTPLX_AMX inline const uint8_t* BTile(const uint8_t* group_codes, int64_t first_step, int k,
                                      uint8_t* scratch) {
  const int steps = k / 4;
  if constexpr (Bits == 8) {
    return group_codes + first_step * 64;
  } else if constexpr (Bits == 4) {
    // A 64-byte 4-bit step holds 8 columns: low nibbles are steps 2s, high nibbles 2s + 1.
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (int s = 0; s < steps / 2; ++s) {
      const __m512i packed = _mm512_loadu_si512(group_codes + (first_step / 2 + s) * 64);
      _mm512_store_si512(scratch + (2 * s) * 64, _mm512_and_si512(packed, low4));
      _mm512_store_si512(scratch + (2 * s + 1) * 64,
                         _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4));
    }
    return scratch;
  } else {
    for (int s = 0; s < steps; ++s)
      _mm512_store_si512(scratch + s * 64,
                         avx512::Unpack64<Bits>(group_codes + (first_step + s) * 8 * Bits,
                                                avx512::BlockLoadMask(Bits, 64)));
    return scratch;
  }
}

// One group's int32 sums into C tile `c` through A tile `a` and B tile `b`. GCC's tile
// intrinsics paste their tile numbers into the instruction text, so they must be literals: hence a
// macro, not a template.
#define MTPLX_AMX_GROUP_DOTS(c, a, b)                                       \
  do {                                                                      \
    _tile_zero(c);                                                          \
    for (int64_t col = 0; col < group_size; col += k) {                     \
      _tile_loadd(b, BTile<Bits>(group_codes, col / 4, k, scratch[c]), 64); \
      _tile_loadd(a, group_x8 + col, x8_stride);                            \
      _tile_dpbsud(c, a, b);                                                \
    }                                                                       \
  } while (0)

// What the float epilogue of a row block reads besides the int32 sums.
struct EpilogueInputs {
  const Matrix& w;
  int64_t scale_base;
  const float* steps;  // rows x groups
  const float* sums;   // rows x groups
  int64_t groups;
  int rows;
};

// The AVX-512 kernel's epilogue, operation for operation and in group order (see
// matmul_avx512.cc), for groups [g0, g0 + n) whose sums are `sums32`.
MTPLX_AMX inline void Epilogue(const EpilogueInputs& in, const int32_t (*sums32)[16 * 16],
                               int64_t g0, int n, __m512* res, __m512* bias_terms) {
  for (int j = 0; j < n; ++j) {
    const int64_t g = g0 + j;
    const __m512 scales =
        avx512::LoadScales(in.w.quant.scales, in.scale_base + g * 16, 16, in.w.quant.scale_dtype);
    const __m512 biases =
        avx512::LoadScales(in.w.quant.biases, in.scale_base + g * 16, 16, in.w.quant.scale_dtype);
    for (int m = 0; m < in.rows; ++m) {
      const __m512 d = _mm512_cvtepi32_ps(_mm512_load_si512(sums32[j] + m * 16));
      const __m512 scale = _mm512_mul_ps(scales, _mm512_set1_ps(in.steps[m * in.groups + g]));
      res[m] = _mm512_fmadd_ps(d, scale, res[m]);
      bias_terms[m] =
          _mm512_fmadd_ps(biases, _mm512_set1_ps(in.sums[m * in.groups + g]), bias_terms[m]);
    }
  }
}

// Rows [row0, row0 + rows) of the activations (rows <= 16) against panel `panel`.
template <int Bits>
MTPLX_AMX void PanelBlock(const Matrix& w, int64_t panel, const PreparedActivations& act,
                          int64_t row0, int rows, float* y, int64_t y_stride) {
  const int64_t group_size = w.quant.group_size, groups = act.groups;
  const int k = static_cast<int>(std::min<int64_t>(group_size, 64));
  const auto [codes, group_bytes, scale_base] = PanelAt(w, panel, Bits);
  const int8_t* x8 = act.x8_columns + row0 * act.x8_stride;
  const int64_t x8_stride = act.x8_stride;
  const float* steps = act.steps + row0 * groups;
  const float* sums = act.group_sums + row0 * groups;
  alignas(64) uint8_t scratch[kGroupsInFlight][1024];
  alignas(64) int32_t dots[kGroupsInFlight][16 * 16];
  __m512 res[16], bias_terms[16];
  for (int m = 0; m < rows; ++m) res[m] = bias_terms[m] = _mm512_setzero_ps();
  const EpilogueInputs epilogue{w, scale_base, steps, sums, groups, rows};
  Configure(rows, k);
  // A streamed panel's codes are asked for kPanelPrefetchBytes ahead, into L2, a group's lines
  // at a time (a tile load takes a group's lines at once: there is no load to pace them beside).
  // Without it the tile loads wait on memory: the x8 widened model's 8-row verify cost 1.82-1.87
  // plain steps and 16 rows 2.07, with it 1.38-1.39 and 1.76 (8-bit, 2 threads, Xeon with AMX).
  // Only the first row block streams the panel; later blocks find it in cache.
  const bool prefetch = w.quant.streamed && row0 == 0;
  for (int64_t g0 = 0; g0 < groups; g0 += kGroupsInFlight) {
    const int n = static_cast<int>(std::min<int64_t>(kGroupsInFlight, groups - g0));
    for (int j = 0; j < n; ++j) {
      const uint8_t* group_codes = codes + (g0 + j) * group_bytes;
      const int8_t* group_x8 = x8 + (g0 + j) * group_size;
      if (prefetch)
        for (int64_t line = 0; line < group_bytes; line += 64)
          _mm_prefetch(reinterpret_cast<const char*>(group_codes) + kPanelPrefetchBytes + line,
                       _MM_HINT_T1);
      switch (j) {
        case 0:
          MTPLX_AMX_GROUP_DOTS(0, 4, 6);
          break;
        case 1:
          MTPLX_AMX_GROUP_DOTS(1, 5, 7);
          break;
        case 2:
          MTPLX_AMX_GROUP_DOTS(2, 4, 6);
          break;
        default:
          MTPLX_AMX_GROUP_DOTS(3, 5, 7);
          break;
      }
    }
    _tile_stored(0, dots[0], 64);
    if (n > 1) _tile_stored(1, dots[1], 64);
    if (n > 2) _tile_stored(2, dots[2], 64);
    if (n > 3) _tile_stored(3, dots[3], 64);
    Epilogue(epilogue, dots, g0, n, res, bias_terms);
  }
  for (int m = 0; m < rows; ++m)
    _mm512_storeu_ps(y + m * y_stride, _mm512_add_ps(res[m], bias_terms[m]));
}

bool CpuHasAmxInt8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (edx & (1u << 24)) && (edx & (1u << 25));  // AMX-TILE, AMX-INT8
}

}  // namespace

bool Supported() {
  static const bool supported = [] {
    if (!avx512::Supported() || !CpuHasAmxInt8()) return false;
    // Tile data is not part of a thread's state until the kernel grants it.
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return supported;
}

void PanelInt8(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
               int64_t y_stride) {
  MTPLX_CHECK(w.quant.panels, "not a panelled matrix");
  if (act.rows < kFewestTileRows || w.quant.group_size < 32) {
    avx512::PanelInt8(w, panel, act, y, y_stride);
    return;
  }
  ForBitWidth(w.quant.bits, [&](auto bits) {
    for (int64_t m = 0; m < act.rows; m += 16) {
      const int rows = static_cast<int>(std::min<int64_t>(16, act.rows - m));
      PanelBlock<decltype(bits)::value>(w, panel, act, m, rows, y + m * y_stride, y_stride);
    }
  });
}

#else  // no AMX kernels in this build

bool Supported() { return false; }
void PanelInt8(const Matrix&, int64_t, const PreparedActivations&, float*, int64_t) {
  MTPLX_CHECK(false, "AMX kernels are not built for this target");
}

#endif

}  // namespace mtplx::kernels::amx
