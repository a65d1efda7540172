#include "kernels/attention_avx2.h"

#include <algorithm>
#include <vector>

#include "base/check.h"
#include "kernels/attention_avx512.h"
#include "kernels/cpu.h"
#include "kernels/ops.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace mtplx::kernels {
namespace {

#define MTPLX_AVX2_ATTN __attribute__((target("avx2,fma")))

// Positions of keys (or values) a task walks at a time: about 16 KiB of a plane, which stays in
// L1 while every query block, and every slice of the head, reads it.
constexpr int64_t kTileBytes = 16 << 10;
// Queries scored or summed together: each key or value vector loaded (and widened) once serves
// all of them, and their accumulators plus the loaded vectors fit the 16 ymm registers.
constexpr int kQueryBlock = 4;

MTPLX_AVX2_ATTN inline __m256 Load8(const float* p) { return _mm256_loadu_ps(p); }
// A bf16 element widens exactly: its bits become the high half of the float's.
MTPLX_AVX2_ATTN inline __m256 Load8(const uint16_t* p) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}

// 16 elements as two vectors, interleaved: v[0] holds elements 0-3 and 8-11, v[1] 4-7 and
// 12-15. That is the order in which a bf16 row widens by interleaving zero words below its
// elements (vpunpcklwd / vpunpckhwd work within 128-bit lanes): two instructions for 16 elements
// where Load8 takes four. f32 rows load in the same order, so a bf16 cache computes exactly what
// an f32 cache holding the widened values does. Queries are arranged, and outputs put back in
// order, to match (SwapHalves).
MTPLX_AVX2_ATTN inline void Load16(const float* p, __m256* v) {
  v[0] = _mm256_loadu2_m128(p + 8, p);
  v[1] = _mm256_loadu2_m128(p + 12, p + 4);
}
MTPLX_AVX2_ATTN inline void Load16(const uint16_t* p, __m256* v) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  v[0] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), bits));
  v[1] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), bits));
}
// Between 16 floats in order (0-7 | 8-15) and interleaved (0-3 8-11 | 4-7 12-15): the same swap
// of 128-bit halves turns either into the other.
MTPLX_AVX2_ATTN inline void SwapHalves(__m256* v) {
  const __m256 low = _mm256_permute2f128_ps(v[0], v[1], 0x20);
  v[1] = _mm256_permute2f128_ps(v[0], v[1], 0x31);
  v[0] = low;
}

// The queries of a group in the order their keys load (Load16) into `arranged` (d floats each).
MTPLX_AVX2_ATTN void Arrange(const float* const* qs, int count, int64_t d, float* arranged,
                             const float** out) {
  for (int n = 0; n < count; ++n) {
    float* row = arranged + n * d;
    std::copy(qs[n], qs[n] + d, row);
    for (int64_t i = 0; i + 16 <= d; i += 16) {
      __m256 v[2];
      Load16(row + i, v);
      _mm256_storeu_ps(row + i, v[0]);
      _mm256_storeu_ps(row + i + 8, v[1]);
    }
    out[n] = row;
  }
}

// The lanes' total, always by the same tree (Normalize's sum of weights; scores use Totals).
MTPLX_AVX2_ATTN inline float Sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// The lines of the tile after the one being read, asked for a few at a time as the current tile's
// work proceeds (Step: each block of keys, every two values of a 16-element slice of the head), so
// that DRAM's latency hides behind that work. Asked for in one burst at the tile's start they
// overflow the core's miss buffers. One 9B layer at 32k keys, bf16, two threads, Zen 1
// (`BM_Attention/32768/(1|4)/2/1/1/0` of kernels_bench): the burst took 18.3-19.1 ms a decode
// row and 49.2-49.5 ms a 4-row verify, a step each key pair and each slice 10.8-11.3 and
// 39.4-43.3 ms. Into L1 and into L2 tie within the noise (L1 2-7 % ahead); two tiles ahead gained
// nothing. A step a slice still asked for a 64-wide head's values in bursts of 64 lines: a step
// every two values made the x8 model's layer (32 / 16 heads of 64) 25 % faster.
struct TilePrefetch {
  const char* next;
  const char* end;
  int64_t lines_per_step;
};
inline TilePrefetch NextTile(const void* plane, int64_t row_bytes, int64_t next_first,
                             int64_t next_end, int64_t steps) {
  const char* first = static_cast<const char*>(plane) + next_first * row_bytes;
  const int64_t lines = std::max<int64_t>(0, next_end - next_first) * row_bytes / 64;
  return {first, first + lines * 64, (lines + steps - 1) / std::max<int64_t>(steps, 1)};
}
MTPLX_AVX2_ATTN inline void Step(TilePrefetch& prefetch) {
  for (int64_t i = 0; i < prefetch.lines_per_step && prefetch.next < prefetch.end; ++i) {
    _mm_prefetch(prefetch.next, _MM_HINT_T0);
    prefetch.next += 64;
  }
}

// ExpF32 of 8 lanes: the same operations in the same order (the build does not contract a
// multiply and an add into an FMA), so every lane equals ExpF32 of it bit for bit.
MTPLX_AVX2_ATTN inline __m256 Exp8(__m256 x) {
  const __m256 low = _mm256_set1_ps(-87.3f), shift = _mm256_set1_ps(12582912.0f);
  const __m256 clamped = _mm256_min_ps(_mm256_max_ps(x, low), _mm256_set1_ps(88.3f));
  const __m256 shifted =
      _mm256_add_ps(_mm256_mul_ps(clamped, _mm256_set1_ps(1.44269504089f)), shift);
  const __m256 n = _mm256_sub_ps(shifted, shift);
  const __m256 r =
      _mm256_sub_ps(_mm256_sub_ps(clamped, _mm256_mul_ps(n, _mm256_set1_ps(0.693145751953125f))),
                    _mm256_mul_ps(n, _mm256_set1_ps(1.42860682030941723e-6f)));
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  for (const float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(c));
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(shifted), _mm256_castps_si256(shift));
  const __m256 scale =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(ni, _mm256_set1_epi32(127)), 23));
  return _mm256_andnot_ps(_mm256_cmp_ps(x, low, _CMP_LT_OQ), _mm256_mul_ps(p, scale));
}

// exp(score - max) in place, scaled to sum to 1. The max is the same in any order; the total
// runs in 8 lanes and then Sum8: a scalar running max and sum are chains of dependent
// instructions, a tenth of a long context's attention.
MTPLX_AVX2_ATTN void Normalize(float* scores, int64_t length) {
  const float max = MaxF32(scores, length);
  const __m256 max8 = _mm256_set1_ps(max);
  __m256 lanes = _mm256_setzero_ps();
  int64_t t = 0;
  for (; t + 8 <= length; t += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + t), max8));
    _mm256_storeu_ps(scores + t, e);
    lanes = _mm256_add_ps(lanes, e);
  }
  float total = Sum8(lanes);
  for (; t < length; ++t) {
    scores[t] = ExpF32(scores[t] - max);
    total += scores[t];
  }
  const float inverse = 1.0f / total;
  for (t = 0; t < length; ++t) scores[t] *= inverse;
}

// The totals of up to 8 vectors, lane j holding v[j]'s (missing ones count as zero): every
// vector's lanes add by the same tree, ((0+1) + (2+3)) + ((4+5) + (6+7)), whichever slot it
// fills, so a score does not depend on the block it was computed in. One tree for eight sums
// costs what Sum8 costs for two.
template <int N>
MTPLX_AVX2_ATTN inline __m256 Totals(const __m256* v) {
  __m256 in[8];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) in[j] = j < N ? v[j] : _mm256_setzero_ps();
  const __m256 low4 = _mm256_hadd_ps(_mm256_hadd_ps(in[0], in[1]), _mm256_hadd_ps(in[2], in[3]));
  const __m256 high4 = _mm256_hadd_ps(_mm256_hadd_ps(in[4], in[5]), _mm256_hadd_ps(in[6], in[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(low4, high4, 0x20),
                       _mm256_permute2f128_ps(low4, high4, 0x31));
}

// Keys scored together against q queries: q * keys accumulators, at most 8, reduced by one
// Totals. Blocks of fewer than 4 queries (the x8 model's group of 2) take more keys a block.
constexpr int KeyBlock(int q) { return q <= 2 ? 8 / q : 2; }

// scores[n][t + k] for Q queries (arranged) and K keys from t on: one accumulator per (query,
// key), fed 16 elements at a time in order (8 for a last odd slice), then Totals: the same
// arithmetic whatever Q and K are. Where the Q queries' vectors, a key's and the accumulators all
// fit the 16 registers, the queries load once a slice and the keys one by one; otherwise the
// keys load first and each query once a slice.
template <typename T, int Q, int K>
MTPLX_AVX2_ATTN __attribute__((always_inline)) inline void ScoreBlock(const float* const* qs,
                                                                      const T* keys, int64_t d,
                                                                      int64_t t, __m256 scale,
                                                                      float* const* scores) {
  static_assert(Q * K <= 8);
  constexpr bool kQueriesHeld = 2 * Q + 2 + Q * K <= 16;
  __m256 acc[Q * K];
#pragma GCC unroll 8
  for (int j = 0; j < Q * K; ++j) acc[j] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    if constexpr (kQueriesHeld) {
      __m256 query[Q][2];
#pragma GCC unroll 4
      for (int n = 0; n < Q; ++n) {
        query[n][0] = _mm256_loadu_ps(qs[n] + i);
        query[n][1] = _mm256_loadu_ps(qs[n] + i + 8);
        // In registers: folded into each FMA they would be loaded once a key, and the loads,
        // not the multiply-adds, would bound the loop.
        asm("" : "+x"(query[n][0]), "+x"(query[n][1]));
      }
#pragma GCC unroll 8
      for (int k = 0; k < K; ++k) {
        __m256 key[2];
        Load16(keys + (t + k) * d + i, key);
#pragma GCC unroll 4
        for (int n = 0; n < Q; ++n) {
          acc[n * K + k] = _mm256_fmadd_ps(query[n][0], key[0], acc[n * K + k]);
          acc[n * K + k] = _mm256_fmadd_ps(query[n][1], key[1], acc[n * K + k]);
        }
      }
    } else {
      __m256 key[K][2];
#pragma GCC unroll 8
      for (int k = 0; k < K; ++k) Load16(keys + (t + k) * d + i, key[k]);
#pragma GCC unroll 4
      for (int n = 0; n < Q; ++n) {
        __m256 low = _mm256_loadu_ps(qs[n] + i), high = _mm256_loadu_ps(qs[n] + i + 8);
        asm("" : "+x"(low), "+x"(high));
#pragma GCC unroll 8
        for (int k = 0; k < K; ++k) {
          acc[n * K + k] = _mm256_fmadd_ps(low, key[k][0], acc[n * K + k]);
          acc[n * K + k] = _mm256_fmadd_ps(high, key[k][1], acc[n * K + k]);
        }
      }
    }
  }
  if (i < d) {
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) {
      const __m256 key = Load8(keys + (t + k) * d + i);
#pragma GCC unroll 4
      for (int n = 0; n < Q; ++n)
        acc[n * K + k] = _mm256_fmadd_ps(_mm256_loadu_ps(qs[n] + i), key, acc[n * K + k]);
    }
  }
  alignas(32) float sums[8];
  _mm256_store_ps(sums, _mm256_mul_ps(Totals<Q * K>(acc), scale));
#pragma GCC unroll 4
  for (int n = 0; n < Q; ++n)
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) scores[n][t + k] = sums[n * K + k];
}

// Scores of Q queries against keys [t0, t1), KeyBlock(Q) keys at a time.
template <typename T, int Q>
MTPLX_AVX2_ATTN void ScoreRange(const float* const* qs, const T* keys, int64_t d, int64_t t0,
                                int64_t t1, float scale, float* const* scores,
                                TilePrefetch& prefetch) {
  constexpr int K = KeyBlock(Q);
  const __m256 scale8 = _mm256_set1_ps(scale);
  int64_t t = t0;
  for (; t + K <= t1; t += K) {
    Step(prefetch);
    ScoreBlock<T, Q, K>(qs, keys, d, t, scale8, scores);
  }
  for (; t < t1; ++t) ScoreBlock<T, Q, 1>(qs, keys, d, t, scale8, scores);
}

// acc[n] += ps[n][u] * the W vectors of value u at `value_at`.
template <typename T, int Q, int W>
MTPLX_AVX2_ATTN inline void AccumulateRow(const float* const* ps, const T* value_at, int64_t u,
                                          __m256 (&acc)[Q][W]) {
  __m256 value[W];
  if constexpr (W == 2) {
    Load16(value_at, value);
  } else {
    value[0] = Load8(value_at);
  }
#pragma GCC unroll 4
  for (int n = 0; n < Q; ++n) {
    const __m256 p = _mm256_broadcast_ss(ps[n] + u);
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) acc[n][w] = _mm256_fmadd_ps(p, value[w], acc[n][w]);
  }
}

// outs[n][i, i + 8W) += sum over u in [u0, u1) of ps[n][u] * value u, in order of u (`fresh`:
// start from zero instead). Each element's sum runs the same way whatever Q and W are. A slice
// of 16 (W = 2) accumulates in the interleaved order and is put back in order. The next tile is
// asked for a step every two values.
template <typename T, int Q, int W>
MTPLX_AVX2_ATTN inline void SumSlice(const float* const* ps, const T* values, int64_t d, int64_t i,
                                     int64_t u0, int64_t u1, bool fresh, float* const* outs,
                                     TilePrefetch& prefetch) {
  constexpr bool kSwap = W == 2;
  __m256 acc[Q][W];
#pragma GCC unroll 4
  for (int n = 0; n < Q; ++n) {
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w)
      acc[n][w] = fresh ? _mm256_setzero_ps() : _mm256_loadu_ps(outs[n] + i + 8 * w);
    if constexpr (kSwap)
      if (!fresh) SwapHalves(acc[n]);
  }
  int64_t u = u0;
  for (; u + 2 <= u1; u += 2) {
    Step(prefetch);
    AccumulateRow<T, Q, W>(ps, values + u * d + i, u, acc);
    AccumulateRow<T, Q, W>(ps, values + (u + 1) * d + i, u + 1, acc);
  }
  if (u < u1) AccumulateRow<T, Q, W>(ps, values + u * d + i, u, acc);
#pragma GCC unroll 4
  for (int n = 0; n < Q; ++n) {
    if constexpr (kSwap) SwapHalves(acc[n]);
#pragma GCC unroll 2
    for (int w = 0; w < W; ++w) _mm256_storeu_ps(outs[n] + i + 8 * w, acc[n][w]);
  }
}

// The weighted sum of values [u0, u1) into Q outputs, 16 elements of the head at a time.
template <typename T, int Q>
MTPLX_AVX2_ATTN void SumRange(const float* const* ps, const T* values, int64_t d, int64_t u0,
                              int64_t u1, bool fresh, float* const* outs, TilePrefetch& prefetch) {
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) SumSlice<T, Q, 2>(ps, values, d, i, u0, u1, fresh, outs, prefetch);
  if (i < d) SumSlice<T, Q, 1>(ps, values, d, i, u0, u1, fresh, outs, prefetch);
}

// Calls fn.template operator()<Q>() with the block size as a constant.
template <typename Fn>
inline void WithBlock(int q, Fn&& fn) {
  switch (q) {
    case 1:
      fn.template operator()<1>();
      break;
    case 2:
      fn.template operator()<2>();
      break;
    case 3:
      fn.template operator()<3>();
      break;
    default:
      fn.template operator()<4>();
      break;
  }
}

// One task: the `count` queries of a key/value head (lengths[n] positions each) against its
// planes. Keys beyond a query's length are scored with the rest of its block and then weigh
// exactly 0, which adds nothing to any sum: a row's result is the same in any batch.
template <typename T>
MTPLX_AVX2_ATTN void AttendGroup(const GroupTasks::Queries& g, const T* keys, const T* values,
                                 int64_t d, float scale, float* scores, int64_t pitch,
                                 float* arranged) {
  const float* qs[kMaxGroupQueries];
  Arrange(g.q, g.count, d, arranged, qs);
  float* const* outs = g.out;
  const int64_t* lengths = g.length;
  const int count = g.count;
  const int64_t longest = *std::max_element(lengths, lengths + count);
  const int64_t tile = std::max<int64_t>(8, kTileBytes / (d * static_cast<int64_t>(sizeof(T))));
  const int64_t row_bytes = d * static_cast<int64_t>(sizeof(T));
  float* rows[kMaxGroupQueries];
  for (int n = 0; n < count; ++n) rows[n] = scores + n * pitch;
  // The longest length within each block of queries: the keys and values that block reads.
  auto block_end = [&](int n0, int64_t t1) {
    const int q = std::min(kQueryBlock, count - n0);
    return std::min(t1, *std::max_element(lengths + n0, lengths + n0 + q));
  };
  for (int64_t t0 = 0; t0 < longest; t0 += tile) {
    const int64_t t1 = std::min(t0 + tile, longest);
    // Asked for by the first block of queries, a few lines beside each of its key blocks.
    const int64_t steps = (t1 - t0) / KeyBlock(std::min(kQueryBlock, count));
    TilePrefetch prefetch = NextTile(keys, row_bytes, t1, std::min(t1 + tile, longest), steps);
    for (int n0 = 0; n0 < count; n0 += kQueryBlock) {
      const int64_t end = block_end(n0, t1);
      if (end <= t0) continue;
      WithBlock(count - n0, [&]<int Q>() {
        ScoreRange<T, Q>(qs + n0, keys, d, t0, end, scale, rows + n0, prefetch);
      });
    }
  }
  for (int n = 0; n < count; ++n) {
    Normalize(rows[n], lengths[n]);
    std::fill(rows[n] + lengths[n], rows[n] + longest, 0.0f);
  }
  for (int64_t u0 = 0; u0 < longest; u0 += tile) {
    const int64_t u1 = std::min(u0 + tile, longest);
    // The first block of queries asks for the next tile evenly across its slices: a step every
    // two values of a slice (see TilePrefetch).
    const int64_t slices = (d + 15) / 16;
    TilePrefetch prefetch =
        NextTile(values, row_bytes, u1, std::min(u1 + tile, longest), slices * (u1 - u0) / 2);
    for (int n0 = 0; n0 < count; n0 += kQueryBlock) {
      // Every query has length >= 1, so each block's first tile is never skipped.
      const int64_t end = block_end(n0, u1);
      if (end <= u0) continue;
      WithBlock(count - n0, [&]<int Q>() {
        SumRange<T, Q>(rows + n0, values, d, u0, end, u0 == 0, outs + n0, prefetch);
      });
    }
  }
}

}  // namespace

bool Avx2AttentionEnabled() {
  static const bool enabled = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0 &&
           KernelCapFromEnvironment() >= KernelCap::kAvx2;
  }();
  return enabled;
}

void CausalAttentionAvx2(const AttentionDims& dims, const float* q, int64_t rows,
                         int64_t first_position, const KvPlanes& kv, float scale, float* out,
                         ThreadPool* pool) {
  const int64_t d = dims.head_dim;
  const GroupTasks tasks(dims, rows, first_position, pool);
  const int64_t pitch = first_position + rows;
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> scores(tasks.largest() * pitch), arranged(tasks.largest() * d);
    for (int64_t task = begin; task < end; ++task) {
      const GroupTasks::Queries g = tasks.Gather(task, q, out, first_position, d);
      const uint8_t* keys = Plane(kv.keys, kv, tasks.head(task), d);
      const uint8_t* values = Plane(kv.values, kv, tasks.head(task), d);
      if (kv.type == KvType::kBf16) {
        AttendGroup(g, reinterpret_cast<const uint16_t*>(keys),
                    reinterpret_cast<const uint16_t*>(values), d, scale, scores.data(), pitch,
                    arranged.data());
      } else {
        AttendGroup(g, reinterpret_cast<const float*>(keys), reinterpret_cast<const float*>(values),
                    d, scale, scores.data(), pitch, arranged.data());
      }
    }
  };
  tasks.Run(run);
}

}  // namespace mtplx::kernels

#else

namespace mtplx::kernels {

bool Avx2AttentionEnabled() { return false; }

// Never called: CausalAttention asks Avx2AttentionEnabled() first.
void CausalAttentionAvx2(const AttentionDims&, const float*, int64_t, int64_t, const KvPlanes&,
                         float, float*, ThreadPool*) {
  MTPLX_CHECK(false, "the AVX2 attention kernel runs only on x86");
}

}  // namespace mtplx::kernels

#endif
