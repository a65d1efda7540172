#include "kernels/matmul_avx2.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "kernels/bit_widths.h"
#include "kernels/panels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define MTPLX_HAVE_AVX2_KERNELS 1
#define MTPLX_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace mtplx::kernels::avx2 {

#ifdef MTPLX_HAVE_AVX2_KERNELS

// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports has no "f16c".
bool HasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
}

bool Supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c();
}

// AVX-VNNI from CPUID leaf 7, subleaf 1 (EAX bit 4); AVX2 already required the OS to save YMM.
bool HasAvxVnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
}

bool Supported(Dot dot) {
  if (!Supported()) return false;
  switch (dot) {
    case Dot::kMaddubs:
      return true;
    case Dot::kAvxVnni:
      return HasAvxVnni();
    case Dot::kAvx512Vnni:
      // __builtin_cpu_supports reports AVX-512 features only where the OS saves their state.
      return __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

namespace {

// Eight scale or bias entries (one half of a panel's 16) as f32, exactly.
MTPLX_AVX2 inline __m256 LoadEight(const void* base, int64_t first, DType dtype) {
  if (dtype == DType::kF32) return _mm256_loadu_ps(static_cast<const float*>(base) + first);
  const __m128i half =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + first));
  if (dtype == DType::kF16) return _mm256_cvtph_ps(half);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16));
}

MTPLX_AVX2 inline __m256i Broadcast4(const int8_t* x) {
  int32_t v;
  std::memcpy(&v, x, sizeof(v));
  return _mm256_set1_epi32(v);
}

// int16 partial sums of nibble products (each vpmaddubsw lane at most 2 * 15 * 127 = 3,810) are
// widened after at most 8 additions (30,480 < 32,767).
constexpr int kMaxInt16Adds = 8;

// Adds the int16 partial sums of the 4-bit nibble products to the int32 dot products and clears
// them.
template <int Rows>
MTPLX_AVX2 inline void Widen(__m256i* lo16, __m256i* hi16, __m256i* acc) {
  const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
  for (int m = 0; m < Rows; ++m) {
    const __m256i lo = _mm256_madd_epi16(lo16[m], ones), hi = _mm256_madd_epi16(hi16[m], ones);
    acc[m] = _mm256_add_epi32(acc[m], _mm256_add_epi32(lo, hi));
    lo16[m] = hi16[m] = _mm256_setzero_si256();
  }
}

// The codes kPanelPrefetchBytes past `step` (one 64-byte line of a streamed panel), asked for
// beside the step's own load rather than as a burst of the group's lines at its start (see the
// AVX-512 kernel). 65536 x 4096 from DRAM, 2 threads, Zen 4 capped to AVX2, both forms in the
// same iterations: 8-bit M = 1 29.3 -> 31.0 GB/s, M = 2 26.2 -> 31.3, M = 4 19.6 -> 21.2, M = 5
// 15.1 -> 16.8; 4-bit 1-5 % faster. Into L2 with two or more rows, as the AVX-512 kernel does,
// won in that benchmark (8-bit M = 4 22.5 -> 24.2, 4-bit 17.1 -> 22.4) but not on the x8 widened
// model (`MTPLX_KERNELS=avx2 mtplx bench`: a 4-row verify 18.7 -> 19.2 ms, 6 rows 29.5 -> 29.7),
// where 256-bit arithmetic, not the stream, bounds the verify.
MTPLX_AVX2 inline void PrefetchAhead(const uint8_t* step) {
  _mm_prefetch(reinterpret_cast<const char*>(step) + kPanelPrefetchBytes, _MM_HINT_T0);
}

// Which steps of a half of a group ask for the line kPanelPrefetchBytes on (PanelRows): none,
// every step, or the steps of one parity (0 or 1).
constexpr int kNoPrefetch = -1, kEveryStep = 2;
inline bool PrefetchAt(int prefetch_steps, int64_t step) {
  return prefetch_steps == kEveryStep || (step & 1) == prefetch_steps;
}

// acc + the dot products of each lane's 4 unsigned codes with its 4 signed activations, exact in
// int32 (vpdpbusd; the sums of products stay far from its wrap-around). Written as assembly so
// one kernel template serves both encodings: a target attribute cannot follow a template
// argument, and this template is compiled for plain AVX2 (its instantiations run only where
// Supported(D) holds).
template <Dot D>
MTPLX_AVX2 inline __m256i DotAdd(__m256i acc, __m256i codes, __m256i x) {
  static_assert(D != Dot::kMaddubs);
  if constexpr (D == Dot::kAvxVnni) {
    asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(codes), "x"(x));
  } else {
    asm("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(codes), "x"(x));
  }
  return acc;
}

// GroupHalf with vpdpbusd: one instruction a step and row (two for 4-bit), no nibbles for 8-bit
// and nothing to widen. At one or two rows a single accumulator a row would chain every step on
// the instruction's latency, so their steps alternate between two.
template <Dot D, int Bits, int Rows>
MTPLX_AVX2 inline void GroupHalfVnni(const uint8_t* wg, int half, const int8_t* const* xg,
                                     int64_t group_size, int prefetch_steps, __m256i* acc) {
  constexpr int kChains = Rows <= 2 ? 2 : 1;
  constexpr int kColumnsPerStep = Bits == 4 ? 8 : 4;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256i part[kChains][Rows];
#pragma GCC unroll 8
  for (int c = 0; c < kChains; ++c)
#pragma GCC unroll 8
    for (int m = 0; m < Rows; ++m) part[c][m] = _mm256_setzero_si256();
  // Group sizes are multiples of 32: the steps (4 to 32) divide evenly among the chains.
  for (int64_t s0 = 0; s0 < group_size / kColumnsPerStep; s0 += kChains) {
#pragma GCC unroll 2
    for (int c = 0; c < kChains; ++c) {
      const int64_t s = s0 + c;
      if (PrefetchAt(prefetch_steps, s)) PrefetchAhead(wg + s * 64);
      const __m256i codes =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg + s * 64 + half * 32));
      if constexpr (Bits == 4) {
        // Low nibbles are columns 8s..8s+3, high nibbles 8s+4..8s+7.
        const __m256i lo = _mm256_and_si256(codes, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4);
#pragma GCC unroll 8
        for (int m = 0; m < Rows; ++m)
          part[c][m] = DotAdd<D>(DotAdd<D>(part[c][m], lo, Broadcast4(xg[m] + s * 8)), hi,
                                 Broadcast4(xg[m] + s * 8 + 4));
      } else {
        static_assert(Bits == 8);
#pragma GCC unroll 8
        for (int m = 0; m < Rows; ++m)
          part[c][m] = DotAdd<D>(part[c][m], codes, Broadcast4(xg[m] + s * 4));
      }
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < Rows; ++m) {
    acc[m] = part[0][m];
    if constexpr (kChains == 2) acc[m] = _mm256_add_epi32(acc[m], part[1][m]);
  }
}

// One step of 4-bit codes: 8 output rows (their half of the 64-byte step) times each row's
// activations, the low nibbles columns 8s..8s+3 and the high nibbles 8s+4..8s+7.
template <int Rows>
MTPLX_AVX2 inline void NibbleStep(const uint8_t* wg, int half, const int8_t* const* xg, int64_t s,
                                  int prefetch_steps, __m256i* lo16, __m256i* hi16) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const uint8_t* step = wg + s * 64;
  if (PrefetchAt(prefetch_steps, s)) PrefetchAhead(step);
  const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(step + half * 32));
  const __m256i lo = _mm256_and_si256(codes, low4);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4);
#pragma GCC unroll 8
  for (int m = 0; m < Rows; ++m) {
    const __m256i x_lo = Broadcast4(xg[m] + s * 8), x_hi = Broadcast4(xg[m] + s * 8 + 4);
    lo16[m] = _mm256_add_epi16(lo16[m], _mm256_maddubs_epi16(lo, x_lo));
    hi16[m] = _mm256_add_epi16(hi16[m], _mm256_maddubs_epi16(hi, x_hi));
  }
}

// One step of 8-bit codes taken as signed, code - 128 (narrower codes need no offset:
// GroupHalfSmallCodes, GroupHalfNibbles): vpmaddubsw gets |code - 128| (at most 128, unsigned) and
// the activation with the code's sign (at most 127 in magnitude), so a pair sums to at most
// 2 * 128 * 127 = 32,512 and never saturates, and vpmaddwd widens it at once. One vpmaddubsw a row
// and step instead of a nibble pair; the offset returns as 128 times the group's activation sum
// (PanelRows). Zen 3, x8 model (8-bit), interleaved `mtplx bench` runs against the nibble pair: the
// in-cache arithmetic of 1 / 4 / 5 rows 9.0 / 18.1 / 21.8 -> 8.1 / 17.0 / 20.3 ms, a plain step
// 18.35 / 18.55 / 19.68 -> 18.06 / 18.42 / 18.77 ms.
template <int Rows>
MTPLX_AVX2 inline void SignedStep(const uint8_t* wg, int half, const int8_t* const* xg, int64_t s,
                                  int prefetch_steps, __m256i* acc) {
  const uint8_t* step = wg + s * 64;
  if (PrefetchAt(prefetch_steps, s)) PrefetchAhead(step);
  const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(step + half * 32));
  const __m256i centred = _mm256_xor_si256(codes, _mm256_set1_epi8(static_cast<char>(0x80)));
  const __m256i magnitude = _mm256_abs_epi8(centred);  // -128 gives 0x80: 128 unsigned
  const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
  for (int m = 0; m < Rows; ++m) {
    const __m256i x = _mm256_sign_epi8(Broadcast4(xg[m] + s * 4), centred);
    acc[m] = _mm256_add_epi32(acc[m], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, x), ones));
  }
}

// With one or two rows the steps run in unrolled blocks: a loop of one step and a counter to test
// spends as much on its own bookkeeping as on the products (Zen 3 without AVX-512, x8 model,
// interleaved `mtplx bench` runs: plain decoding 45.3 / 46.3 / 44.9 -> 50.8 / 51.0 / 46.2 tok/s).
// From three rows the products fill the loop and the unrolled form measured no better. Group
// sizes are multiples of 32: the 8-bit steps (4 columns) come in multiples of 8, the 4-bit ones
// (8 columns) in multiples of 4.

// acc[m] + the dot of one half of an 8-bit group, codes - 128, with activation row m.
template <int Rows>
MTPLX_AVX2 inline void GroupHalfSigned(const uint8_t* wg, int half, const int8_t* const* xg,
                                       int64_t group_size, int prefetch_steps, __m256i* acc) {
  constexpr int kBlock = Rows >= 3 ? 1 : 8;
  const int64_t steps = group_size / 4;
  for (int64_t s0 = 0; s0 < steps; s0 += kBlock) {
#pragma GCC unroll 8
    for (int k = 0; k < kBlock; ++k) SignedStep<Rows>(wg, half, xg, s0 + k, prefetch_steps, acc);
  }
}

// Where a half step of codes of `Bits` bits (2, 3, 5, 6: 8 rows x 4 columns, 4 * Bits bytes of
// the panel's bit stream, each row's 4 codes in 4 * Bits consecutive bits) is read from: each
// 128-bit lane loads kLoadBytes (8 or 16) bytes, the lower one from the half's start and the upper
// one (rows 4-7) from kUpperOffset, so that no load passes the half.
template <int Bits>
struct PackedHalfLayout {
  static constexpr int kHalfBytes = 4 * Bits;
  static constexpr int kLoadBytes = kHalfBytes >= 16 ? 16 : 8;
  static constexpr int kUpperOffset = kHalfBytes - kLoadBytes;
  static constexpr int LoadedFrom(int row) { return row < 4 ? 0 : kUpperOffset; }
  // First and last byte of the bits [bit, bit + count), counted from where row's lane loads.
  static constexpr int FirstByte(int row, int bit) { return bit / 8 - LoadedFrom(row); }
  static constexpr int LastByte(int row, int bit, int count) {
    return (bit + count - 1) / 8 - LoadedFrom(row);
  }
};

template <int Bits>
MTPLX_AVX2 inline __m128i LoadPackedLane(const uint8_t* src) {
  if constexpr (PackedHalfLayout<Bits>::kLoadBytes == 16) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  } else {
    return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src));
  }
}

template <int Bits>
MTPLX_AVX2 inline __m256i LoadPackedHalf(const uint8_t* src) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(LoadPackedLane<Bits>(src)),
                                 LoadPackedLane<Bits>(src + PackedHalfLayout<Bits>::kUpperOffset),
                                 1);
}

// Decoding by shifts: vpshufb copies the bytes holding row r's bits to the low bytes of its 32-bit
// lane, odd widths shift the odd rows (whose bits start mid-byte) down by 4, and three shifts and
// four masks move its codes at bits 0, B, 2B and 3B to bits 0, 8, 16 and 24.
template <int Bits>
struct ShiftDecodeTables {
  using Layout = PackedHalfLayout<Bits>;
  alignas(32) uint8_t lanes[32];
  alignas(32) uint32_t shifts[8];
  constexpr ShiftDecodeTables() : lanes(), shifts() {
    for (int row = 0; row < 8; ++row) {
      const int bit = 4 * Bits * row;
      const int first = Layout::FirstByte(row, bit), last = Layout::LastByte(row, bit, 4 * Bits);
      for (int k = 0; k < 4; ++k)
        lanes[4 * row + k] = first + k <= last ? static_cast<uint8_t>(first + k) : 0x80;
      shifts[row] = static_cast<uint32_t>(bit % 8);
    }
  }
};

template <int Bits>
MTPLX_AVX2 inline __m256i DecodeByShifts(__m256i bytes) {
  static constexpr ShiftDecodeTables<Bits> kTables;
  __m256i v = _mm256_shuffle_epi8(
      bytes, _mm256_load_si256(reinterpret_cast<const __m256i*>(kTables.lanes)));
  if constexpr (Bits % 2 == 1) {
    v = _mm256_srlv_epi32(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kTables.shifts)));
  }
  constexpr int kMask = (1 << Bits) - 1, kMove = 8 - Bits;
  const __m256i c0 = _mm256_and_si256(v, _mm256_set1_epi32(kMask));
  const __m256i c1 = _mm256_and_si256(_mm256_slli_epi32(v, kMove), _mm256_set1_epi32(kMask << 8));
  const __m256i c2 =
      _mm256_and_si256(_mm256_slli_epi32(v, 2 * kMove), _mm256_set1_epi32(kMask << 16));
  const __m256i c3 =
      _mm256_and_si256(_mm256_slli_epi32(v, 3 * kMove), _mm256_set1_epi32(kMask << 24));
  return _mm256_or_si256(_mm256_or_si256(c0, c1), _mm256_or_si256(c2, c3));
}

// Decoding by a multiply: row r's 32-bit lane holds two 16-bit words, word w for codes 2w and
// 2w + 1; vpshufb copies the two bytes that hold them (the low code starts at bit `offset` < 8 of
// the first), and a multiply by 2^(kCodeShift - offset) moves every word's low code to bit
// kCodeShift and its high code to kCodeShift + Bits, the same in every word.
template <int Bits>
struct MultiplyDecodeTables {
  using Layout = PackedHalfLayout<Bits>;
  static constexpr int LowCodeBit(int row, int word) { return 4 * Bits * row + 2 * Bits * word; }
  static constexpr int MostOffset() {
    int most = 0;
    for (int row = 0; row < 8; ++row)
      for (int word = 0; word < 2; ++word) most = std::max(most, LowCodeBit(row, word) % 8);
    return most;
  }
  static constexpr int kCodeShift = MostOffset();
  static_assert(kCodeShift + 2 * Bits <= 16, "both codes of a word stay in its 16 bits");
  alignas(32) uint8_t words[32];
  alignas(32) uint16_t multipliers[16];
  constexpr MultiplyDecodeTables() : words(), multipliers() {
    for (int row = 0; row < 8; ++row) {
      for (int word = 0; word < 2; ++word) {
        const int bit = LowCodeBit(row, word), slot = 4 * row + 2 * word;
        const int first = Layout::FirstByte(row, bit), last = Layout::LastByte(row, bit, 2 * Bits);
        words[slot] = static_cast<uint8_t>(first);
        words[slot + 1] = last > first ? static_cast<uint8_t>(last) : 0x80;
        multipliers[2 * row + word] = static_cast<uint16_t>(1 << (kCodeShift - bit % 8));
      }
    }
  }
};

// Shifts every 16-bit word of v left by kLeft (right when negative).
template <int kLeft>
MTPLX_AVX2 inline __m256i ShiftWords(__m256i v) {
  if constexpr (kLeft >= 0) {
    return _mm256_slli_epi16(v, kLeft);
  } else {
    return _mm256_srli_epi16(v, -kLeft);
  }
}

// After the multiply (MultiplyDecodeTables) a shift right by kCodeShift puts each word's low code
// at bit 0, another shift its high code at bit 8, a byte blend takes each from its shift and one
// mask clears the rest: six operations where DecodeByShifts takes ten or eleven, but one of them a
// multiply, which AMD cores run on the pipe that also runs vpmaddubsw and vpmaddwd.
template <int Bits>
MTPLX_AVX2 inline __m256i DecodeByMultiply(__m256i bytes) {
  using Tables = MultiplyDecodeTables<Bits>;
  static constexpr Tables kTables;
  constexpr int kShift = Tables::kCodeShift, kMask = (1 << Bits) - 1;
  const __m256i pairs = _mm256_shuffle_epi8(
      bytes, _mm256_load_si256(reinterpret_cast<const __m256i*>(kTables.words)));
  const __m256i aligned = _mm256_mullo_epi16(
      pairs, _mm256_load_si256(reinterpret_cast<const __m256i*>(kTables.multipliers)));
  const __m256i low = _mm256_srli_epi16(aligned, kShift);
  const __m256i high = ShiftWords<8 - kShift - Bits>(aligned);
  const __m256i both = _mm256_blendv_epi8(low, high, _mm256_set1_epi16(static_cast<short>(0xFF00)));
  return _mm256_and_si256(both, _mm256_set1_epi16(static_cast<short>(kMask | kMask << 8)));
}

// Up to how many activation rows the codes are decoded by a multiply. With one or two rows the
// decode is most of the work and the multiply form's fewer operations win; from three rows the
// multiplies of the products are, and the shift form leaves their pipe to them (Zen 1, x8 models,
// interleaved `mtplx bench` runs, shifts -> multiply up to 2 rows: a plain step at 2 / 3 / 5 / 6
// bits 33.0-36.7 / 39.0-39.4 / 40.8-41.6 / 36.7-37.8 -> 27.0-28.2 / 27.3-27.7 / 29.6-32.4 /
// 31.8-33.5 ms, a 2-row verify at 2 / 5 / 6 bits 43.0-47.2 / 50.4-52.1 / 47.1-48.3 -> 38.7-40.1 /
// 41.6-42.6 / 45.8-46.2 ms, 3 to 5 rows unchanged; the multiply at every row count took a 4-row
// verify at 2 / 6 bits from 61.7-64.1 / 65.7-65.8 to 67.7-71.3 / 71.4-72.9 ms).
constexpr int kMultiplyDecodeRows = 2;

// Half of step s of a group of codes of `Bits` bits (2, 3, 5 or 6) as bytes in the 8-bit order,
// decoded in registers from the panel's bit stream for `Rows` activation rows. Spreading a panel to
// a buffer first and reading it back cost more than the products on AVX2 (Zen 3, x8 model: a plain
// step at 6 bits 21.9 -> 18.9 ms and a 4-row verify 34 -> 27 ms; at 2 / 3 / 5 bits a plain step
// 19.0 / 18.9 / 19.1 -> 12.8-13.2 / 14.1 / 15.1 ms and a 4-row verify 28.1 / 27.9 / 28.1 ->
// 23.1-23.6 / 24.4-25.5 / 24.9-25.1 ms). A function, not a lambda: clang does not give a lambda its
// enclosing function's target attribute.
template <int Bits, int Rows>
MTPLX_AVX2 inline __m256i SmallCodesHalfStep(const uint8_t* wg, int half, int64_t s,
                                             int prefetch_steps) {
  const uint8_t* step = wg + s * 8 * Bits;
  if (PrefetchAt(prefetch_steps, s)) PrefetchAhead(step);
  const __m256i bytes = LoadPackedHalf<Bits>(step + half * 4 * Bits);
  if constexpr (Rows <= kMultiplyDecodeRows) {
    return DecodeByMultiply<Bits>(bytes);
  } else {
    return DecodeByShifts<Bits>(bytes);
  }
}

// How many steps of codes of `Bits` bits add their vpmaddubsw sums in int16 before one vpmaddwd
// widens them: a sum is at most 2 * (2^Bits - 1) * 127 (6-bit: 16,002; 5-bit: 7,874; 3-bit:
// 1,778), and the count divides a group's 8 or more steps.
template <int Bits>
constexpr int StepsPerWidening() {
  const int most = 32767 / (2 * ((1 << Bits) - 1) * 127);
  int steps = 1;
  while (steps * 2 <= most && steps < 8) steps *= 2;
  return steps;
}

// acc[m] + the dot of one half of a group of codes of `Bits` bits (2, 3, 5 or 6) with activation
// row m: vpmaddubsw takes the codes as they are and its int16 sums widen every StepsPerWidening
// steps.
template <int Rows, int Bits>
MTPLX_AVX2 inline void GroupHalfSmallCodes(const uint8_t* wg, int half, const int8_t* const* xg,
                                           int64_t group_size, int prefetch_steps, __m256i* acc) {
  constexpr int kWiden = StepsPerWidening<Bits>();
  constexpr int kBlock = Rows >= 3 ? kWiden : 8;
  static_assert(kBlock % kWiden == 0);
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t steps = group_size / 4;
  for (int64_t s0 = 0; s0 < steps; s0 += kBlock) {
#pragma GCC unroll 8
    for (int w = 0; w < kBlock; w += kWiden) {
      __m256i sums[Rows];
#pragma GCC unroll 8
      for (int k = 0; k < kWiden; ++k) {
        const int64_t s = s0 + w + k;
        const __m256i codes = SmallCodesHalfStep<Bits, Rows>(wg, half, s, prefetch_steps);
#pragma GCC unroll 8
        for (int m = 0; m < Rows; ++m) {
          const __m256i products = _mm256_maddubs_epi16(codes, Broadcast4(xg[m] + s * 4));
          sums[m] = k == 0 ? products : _mm256_add_epi16(sums[m], products);
        }
      }
#pragma GCC unroll 8
      for (int m = 0; m < Rows; ++m)
        acc[m] = _mm256_add_epi32(acc[m], _mm256_madd_epi16(sums[m], ones));
    }
  }
}

// acc[m] + the dot of one half of a 4-bit group with activation row m; the int16 sums are widened
// between blocks.
template <int Rows>
MTPLX_AVX2 inline void GroupHalfNibbles(const uint8_t* wg, int half, const int8_t* const* xg,
                                        int64_t group_size, int prefetch_steps, __m256i* acc) {
  __m256i lo16[Rows], hi16[Rows];
#pragma GCC unroll 8
  for (int m = 0; m < Rows; ++m) lo16[m] = hi16[m] = _mm256_setzero_si256();
  constexpr int kBlock = Rows >= 3 ? 1 : 4;
  static_assert(kMaxInt16Adds % kBlock == 0);
  const int64_t steps = group_size / 8;
  int adds = 0;
  for (int64_t s0 = 0; s0 < steps; s0 += kBlock) {
#pragma GCC unroll 8
    for (int k = 0; k < kBlock; ++k)
      NibbleStep<Rows>(wg, half, xg, s0 + k, prefetch_steps, lo16, hi16);
    adds += kBlock;
    if (adds == kMaxInt16Adds) {
      Widen<Rows>(lo16, hi16, acc);
      adds = 0;
    }
  }
  if (adds > 0) Widen<Rows>(lo16, hi16, acc);
}

// Accumulates one half (8 output rows) of one group for `Rows` activation rows: acc[m] gets the
// exact int32 dot of the group's codes with activation row m (for 8-bit without VNNI, of codes -
// 128: PanelRows adds the offset back).
template <Dot D, int Bits, int Rows>
MTPLX_AVX2 inline void GroupHalf(const uint8_t* wg, int half, const int8_t* const* xg,
                                 int64_t group_size, int prefetch_steps, __m256i* acc) {
  static_assert(Bits == 4 || Bits == 8 || D == Dot::kMaddubs,
                "the VNNI dots take other widths spread to bytes (UnpackPanelAvx2)");
  if constexpr (D != Dot::kMaddubs) {
    GroupHalfVnni<D, Bits, Rows>(wg, half, xg, group_size, prefetch_steps, acc);
  } else if constexpr (Bits == 8) {
    GroupHalfSigned<Rows>(wg, half, xg, group_size, prefetch_steps, acc);
  } else if constexpr (Bits == 4) {
    GroupHalfNibbles<Rows>(wg, half, xg, group_size, prefetch_steps, acc);
  } else {
    GroupHalfSmallCodes<Rows, Bits>(wg, half, xg, group_size, prefetch_steps, acc);
  }
}

// Adds groups [g0, g1) of one half (8 output rows) to res and bias_terms for `Rows` activation
// rows.
template <Dot D, int Bits, int Rows>
__attribute__((always_inline)) MTPLX_AVX2 inline void HalfGroups(
    const Matrix& w, const PanelSpan& span, const PreparedActivations& act, int64_t row0, int half,
    int64_t g0, int64_t g1, int prefetch_steps, __m256* res, __m256* bias_terms) {
  const int64_t group_size = w.quant.group_size, groups = act.groups;
  const auto [codes, group_bytes, scale_base] = span;
  const float* steps = act.steps + row0 * groups;
  const float* sums = act.group_sums + row0 * groups;
  const int32_t* x8_sums = act.x8_sums + row0 * groups;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* wg = codes + g * group_bytes;
    const int8_t* xg[Rows];
#pragma GCC unroll 8
    for (int m = 0; m < Rows; ++m)
      xg[m] = act.x8_columns + (row0 + m) * act.x8_stride + g * group_size;
    __m256i acc[Rows];
#pragma GCC unroll 8
    for (int m = 0; m < Rows; ++m) acc[m] = _mm256_setzero_si256();
    GroupHalf<D, Bits, Rows>(wg, half, xg, group_size, prefetch_steps, acc);
    if constexpr (D == Dot::kMaddubs && Bits == 8) {
#pragma GCC unroll 8
      for (int m = 0; m < Rows; ++m)
        acc[m] = _mm256_add_epi32(acc[m], _mm256_set1_epi32(128 * x8_sums[m * groups + g]));
    }
    const int64_t entry = scale_base + g * 16 + half * 8;
    const __m256 scales = LoadEight(w.quant.scales, entry, w.quant.scale_dtype);
    const __m256 biases = LoadEight(w.quant.biases, entry, w.quant.scale_dtype);
#pragma GCC unroll 8
    for (int m = 0; m < Rows; ++m) {
      const __m256 scale = _mm256_mul_ps(scales, _mm256_set1_ps(steps[m * groups + g]));
      res[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[m]), scale, res[m]);
      bias_terms[m] = _mm256_fmadd_ps(biases, _mm256_set1_ps(sums[m * groups + g]), bias_terms[m]);
    }
  }
}

// Groups in a block whose two halves run one after the other, at one or two activation rows. A
// panel is read in two halves (8 output rows each). When the first half ran through every group
// before the second began, the second read the panel back from L2 while no line of the stream was
// asked for, and memory sat idle for that time. In blocks of a few groups, with a block's
// prefetches shared between its halves (even steps in the first, odd ones in the second), the
// stream never stops: Zen 1, 2 threads, `BM_MatMulPanels` (old and new builds alternated, medians
// of 3) 8-bit M = 1 4.69 / 4.79 -> 3.65 / 3.65 ms, M = 2 5.40 / 5.29 -> 4.64 / 4.48 ms, 4-bit
// M = 1 2.38 / 2.46 -> 1.93 / 1.98 ms; the x8 model's plain step 26.5 -> 22.9-23.4 ms. From three
// rows the products bound the kernel: each half runs over the whole panel and the first asks for
// every line, as before (blocked, they measured slower).
constexpr int64_t kGroupsABlock = 4;

template <Dot D, int Bits, int Rows>
MTPLX_AVX2 void PanelRows(const Matrix& w, const PanelSpan& span, const PreparedActivations& act,
                          int64_t row0, float* y, int64_t y_stride, bool prefetch) {
  const int64_t groups = act.groups;
  const int64_t block = Rows <= 2 ? kGroupsABlock : groups;
  __m256 res0[Rows], bias0[Rows], res1[Rows], bias1[Rows];
#pragma GCC unroll 8
  for (int m = 0; m < Rows; ++m) res0[m] = bias0[m] = res1[m] = bias1[m] = _mm256_setzero_ps();
  // Blocks share the prefetches between their halves; one block of every group asks for each
  // line in the first half, the one that reads it from memory.
  const int first = !prefetch ? kNoPrefetch : Rows <= 2 ? 0 : kEveryStep;
  const int second = !prefetch ? kNoPrefetch : Rows <= 2 ? 1 : kNoPrefetch;
  for (int64_t g0 = 0; g0 < groups; g0 += block) {
    const int64_t g1 = std::min(groups, g0 + block);
    HalfGroups<D, Bits, Rows>(w, span, act, row0, 0, g0, g1, first, res0, bias0);
    HalfGroups<D, Bits, Rows>(w, span, act, row0, 1, g0, g1, second, res1, bias1);
  }
#pragma GCC unroll 8
  for (int m = 0; m < Rows; ++m) {
    _mm256_storeu_ps(y + m * y_stride, _mm256_add_ps(res0[m], bias0[m]));
    _mm256_storeu_ps(y + m * y_stride + 8, _mm256_add_ps(res1[m], bias1[m]));
  }
}

// Spreading a run of 8 codes of `Bits` bits (`Bits` bytes of the stream) to bytes without VBMI:
// pshufb puts the two stream bytes holding code i in 16-bit lane i of its 128-bit half (both
// halves use the same pattern, each loaded from its own run), a multiply by 2^(8 - shift) moves
// the code's low bit to bit 8, and the high byte, masked, is the code.
template <int Bits>
struct SpreadTables {
  alignas(32) uint8_t pairs[32];
  alignas(32) uint16_t multipliers[16];
  constexpr SpreadTables() : pairs(), multipliers() {
    for (int half = 0; half < 2; ++half) {
      for (int i = 0; i < 8; ++i) {
        const int bit = i * Bits;
        pairs[half * 16 + 2 * i] = static_cast<uint8_t>(bit / 8);
        pairs[half * 16 + 2 * i + 1] = static_cast<uint8_t>(bit / 8 + 1);
        multipliers[half * 8 + i] = static_cast<uint16_t>(1 << (8 - bit % 8));
      }
    }
  }
};

// Codes of runs `run` and `run + 1` of the stream at `src` (8 each) in 16-bit lanes. Reads 16
// bytes from each run's start.
template <int Bits>
MTPLX_AVX2 inline __m256i SpreadTwoRuns(const uint8_t* src, int run) {
  static constexpr SpreadTables<Bits> kTables;
  const __m128i first = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + run * Bits));
  const __m128i second = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (run + 1) * Bits));
  const __m256i bytes = _mm256_inserti128_si256(_mm256_castsi128_si256(first), second, 1);
  const __m256i pairs = _mm256_shuffle_epi8(
      bytes, _mm256_load_si256(reinterpret_cast<const __m256i*>(kTables.pairs)));
  const __m256i moved = _mm256_mullo_epi16(
      pairs, _mm256_load_si256(reinterpret_cast<const __m256i*>(kTables.multipliers)));
  return _mm256_and_si256(_mm256_srli_epi16(moved, 8), _mm256_set1_epi16((1 << Bits) - 1));
}

// A panel spread to PanelBytesBuffer (panels.h) with AVX2: the panel's bit stream is contiguous
// across its groups, so its steps are spread in one pass; the last steps, whose 16-byte reads would
// pass the end of the panel, go through the scalar UnpackPanelStep.
template <int Bits>
MTPLX_AVX2 PanelSpan UnpackPanelAvx2(const Matrix& w, int64_t panel) {
  const auto [codes, group_bytes, scale_base] = PanelAt(w, panel, Bits);
  const int64_t steps = w.cols / 4, step_bytes = 8 * Bits, panel_bytes = steps * step_bytes;
  uint8_t* out = PanelBytesBuffer(w.cols);
  int64_t t = 0;
  for (; (t + 1) * step_bytes + 16 <= panel_bytes; ++t) {
    const uint8_t* src = codes + t * step_bytes;
    if (w.quant.streamed)
      _mm_prefetch(reinterpret_cast<const char*>(src) + kPanelPrefetchBytes, _MM_HINT_T0);
    // packus interleaves the 128-bit halves (runs 0, 2 | 1, 3); vpermq puts them in order.
    for (int half = 0; half < 2; ++half) {
      const __m256i packed = _mm256_packus_epi16(SpreadTwoRuns<Bits>(src, 4 * half),
                                                 SpreadTwoRuns<Bits>(src, 4 * half + 2));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + t * 64 + half * 32),
                          _mm256_permute4x64_epi64(packed, 0xD8));
    }
  }
  for (; t < steps; ++t) UnpackPanelStep(codes + t * step_bytes, Bits, out + t * 64);
  return {out, kPanelRows * w.quant.group_size, scale_base};
}

// A depth-4 verify's 5 rows run as one block, not 4 + 1 (the nibble sums of 5 rows fit the 16
// registers; their int32 sums wait in memory): on the x8 model its verify went from 1.77 / 1.83 /
// 1.76 to 1.54 / 1.64 / 1.58 plain steps (interleaved `mtplx bench --verify-rows 6` runs).
template <Dot D, int Bits>
void PanelAllRows(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
                  int64_t y_stride) {
  if constexpr (Bits == 4 || Bits == 8 || D == Dot::kMaddubs) {
    ForRowBlocksUpTo6(act.rows, [&](auto block, int64_t m) {
      PanelRows<D, Bits, decltype(block)::value>(w, PanelAt(w, panel, Bits), act, m,
                                                 y + m * y_stride, y_stride, w.quant.streamed);
    });
  } else {
    // The VNNI dots: spread to bytes once a panel, not once a half and row block; the 8-bit steps
    // run on it (vpmaddubsw decodes packed codes itself; its 8-bit step takes codes as signed).
    static_assert(D != Dot::kMaddubs);
    const PanelSpan unpacked = UnpackPanelAvx2<Bits>(w, panel);
    ForRowBlocksUpTo6(act.rows, [&](auto block, int64_t m) {
      PanelRows<D, 8, decltype(block)::value>(w, unpacked, act, m, y + m * y_stride, y_stride,
                                              /*prefetch=*/false);
    });
  }
}

}  // namespace

template <Dot D>
void PanelInt8(const Matrix& w, int64_t panel, const PreparedActivations& act, float* y,
               int64_t y_stride) {
  MTPLX_CHECK(w.quant.panels, "not a panelled matrix");
  ForBitWidth(w.quant.bits, [&](auto bits) {
    PanelAllRows<D, decltype(bits)::value>(w, panel, act, y, y_stride);
  });
}

#else  // not x86-64 with GCC: no AVX2 kernels

bool Supported() { return false; }
bool Supported(Dot) { return false; }
template <Dot D>
void PanelInt8(const Matrix&, int64_t, const PreparedActivations&, float*, int64_t) {
  MTPLX_CHECK(false, "AVX2 kernels are not built for this target");
}

#endif

template void PanelInt8<Dot::kMaddubs>(const Matrix&, int64_t, const PreparedActivations&, float*,
                                       int64_t);
template void PanelInt8<Dot::kAvxVnni>(const Matrix&, int64_t, const PreparedActivations&, float*,
                                       int64_t);
template void PanelInt8<Dot::kAvx512Vnni>(const Matrix&, int64_t, const PreparedActivations&,
                                          float*, int64_t);

}  // namespace mtplx::kernels::avx2
