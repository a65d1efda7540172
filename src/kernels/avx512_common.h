// AVX-512 helpers the panel kernels share (internal to kernels/): unpacking 64 codes of any
// width to bytes and loading scale entries. Included only by the x86 kernel files.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
// GCC 12 reports the deliberately undefined pass-through operands inside its own AVX-512 headers
// (_mm512_undefined_*) as uninitialized once they are inlined.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cstdint>

#include "tensor/dtype.h"

#define MTPLX_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,fma")))

namespace mtplx::kernels::avx512 {

// Byte constants that spread the 8 * Bits packed bytes of 64 codes so that qword j holds codes
// 8j..8j+7 (bytes j*Bits..), and the multishift offsets of code i within its qword (i * Bits).
template <int Bits>
struct UnpackTables {
  alignas(64) uint8_t spread[64];
  alignas(64) uint8_t shifts[64];
  constexpr UnpackTables() : spread(), shifts() {
    for (int j = 0; j < 8; ++j) {
      for (int i = 0; i < 8; ++i) {
        spread[j * 8 + i] = static_cast<uint8_t>(j * Bits + i);
        shifts[j * 8 + i] = static_cast<uint8_t>(i * Bits);
      }
    }
  }
};

// Codes 0..63 of a 64-column block as bytes, in column order. `load` masks the packed bytes (a
// half block of 32 columns at the end of a row holds 4 * Bits bytes).
template <int Bits>
MTPLX_AVX512 __attribute__((always_inline)) inline __m512i Unpack64(const uint8_t* src,
                                                                    __mmask64 load) {
  const __m512i raw = _mm512_maskz_loadu_epi8(load, src);
  if constexpr (Bits == 8) {
    return raw;
  } else {
    static constexpr UnpackTables<Bits> kTables;
    const __m512i spread = _mm512_permutexvar_epi8(_mm512_load_si512(kTables.spread), raw);
    const __m512i fields = _mm512_multishift_epi64_epi8(_mm512_load_si512(kTables.shifts), spread);
    return _mm512_and_si512(fields, _mm512_set1_epi8(static_cast<char>((1 << Bits) - 1)));
  }
}

constexpr __mmask64 BlockLoadMask(int bits, int64_t columns) {
  const int64_t bytes = columns * bits / 8;
  return bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1;
}

// Up to 16 consecutive scale (or bias) entries as f32; lanes past `count` are zero.
MTPLX_AVX512 inline __m512 LoadScales(const void* base, int64_t first, int64_t count, DType dtype) {
  const __mmask16 mask = count >= 16 ? __mmask16{0xFFFF} : (__mmask16{1} << count) - 1;
  if (dtype == DType::kF32) {
    return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(base) + first);
  }
  const __m256i half = _mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(base) + first);
  if (dtype == DType::kF16) return _mm512_cvtph_ps(half);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
}

}  // namespace mtplx::kernels::avx512

#endif
