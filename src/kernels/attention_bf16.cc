// Causal attention with bf16 products (AttentionProducts::kBf16): queries and softmax weights
// rounded to bf16 meet a bf16 cache in vdpbf16ps, two products a lane per instruction, so a
// verify pass over a long context (arithmetic-bound: its rows share the cache's reads, not the
// multiplies) runs half the multiply instructions of the exact kernel. The structure is the exact
// kernel's (attention.cc): GQA packing, 16-key blocks scored four keys a step for up to four
// queries, value tiles that stay in cache while every query reads them, L2 prefetch of planes
// that stream from memory.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/attention_avx512.h"

#ifdef MTPLX_ATTENTION_AVX512
namespace mtplx::kernels {
namespace {

using namespace attention_avx512;  // NOLINT(google-build-using-namespace): the kernel's parts

#define MTPLX_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16,fma")))

// 32 floats (lo: the first 16) as 32 bf16, rounded to nearest even, in order.
MTPLX_AVX512_BF16 inline __m512i RoundToBf16x32(__m512 lo, __m512 hi) {
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}

MTPLX_AVX512_BF16 inline __m512bh AsBf16(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// Widens bf16 elements 0..15 (kHigh: 16..31) of v to floats (exact).
template <bool kHigh>
MTPLX_AVX512_BF16 inline __m512 WidenHalf(__m512i v) {
  const __m256i half = kHigh ? _mm512_extracti64x4_epi64(v, 1) : _mm512_castsi512_si256(v);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
}

// Lanes [0, n) of 16 (none when n <= 0).
inline __mmask16 FirstLanes(int64_t n) {
  if (n <= 0) return 0;
  return n >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << n) - 1);
}

// x[0 .. n) (n a multiple of 32) rounded to bf16.
MTPLX_AVX512_BF16 void RoundQuery(const float* x, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; i += 32)
    _mm512_storeu_si512(out + i,
                        RoundToBf16x32(_mm512_loadu_ps(x + i), _mm512_loadu_ps(x + i + 16)));
}

// A query of a group: its bf16 copy, its scores and bf16 weights over the keys, how many keys it
// sees, where its output goes.
struct Bf16Query {
  const uint16_t* q;
  float* scores;
  uint16_t* weights;  // zero from `length` on, up to the group's padded length
  int64_t length;
  float inverse;
  float* out;
};

// Scores of the 16 keys of `block` (rows of d bf16) for NQ queries (1 to 4), into each query's
// scores from t0: four keys a step, each 32-element chunk of a key (one cache line) loaded once
// for all of them. Every (query, key) score is the same vdpbf16ps chain over the chunks and the
// same lane of SumEach's tree whatever NQ and the key's place in the block, so a row's scores do
// not depend on which rows share the pass. ahead: the block kPrefetchKeys positions on, fetched a
// line of four keys at a time, or null.
template <int NQ, int D>
MTPLX_AVX512_BF16 inline void ScoreBlockBf16(const Bf16Query* g, const uint16_t* block, int64_t d,
                                             int64_t t0, float scale, const uint16_t* ahead) {
  const int64_t dim = D > 0 ? D : d;
  const __m512 scales = _mm512_set1_ps(scale);
#pragma GCC unroll 1
  for (int k0 = 0; k0 < 16; k0 += 4) {
    __m512 acc[16];  // lane group n: query n, keys k0 .. k0 + 3 (unused groups stay zero)
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t c = 0; c < dim; c += 32) {
      if (ahead) {
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) PrefetchLine(ahead + (k0 + k) * dim + c);
      }
      __m512bh qc[NQ];
#pragma GCC unroll 4
      for (int n = 0; n < NQ; ++n) qc[n] = AsBf16(_mm512_loadu_si512(g[n].q + c));
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m512bh key = AsBf16(_mm512_loadu_si512(block + (k0 + k) * dim + c));
#pragma GCC unroll 4
        for (int n = 0; n < NQ; ++n) acc[4 * n + k] = _mm512_dpbf16_ps(acc[4 * n + k], key, qc[n]);
      }
    }
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, _mm512_mul_ps(SumEach(acc), scales));
#pragma GCC unroll 4
    for (int n = 0; n < NQ; ++n) std::memcpy(g[n].scores + t0 + k0, lanes + 4 * n, 16);
  }
}

template <int D>
MTPLX_AVX512_BF16 void ScoreBlockForGroup(const Bf16Query* g, int count, const uint16_t* block,
                                          int64_t d, int64_t t0, float scale,
                                          const uint16_t* ahead) {
  int n = 0;
  for (; n + 4 <= count; n += 4, ahead = nullptr)
    ScoreBlockBf16<4, D>(g + n, block, d, t0, scale, ahead);
  switch (count - n) {
    case 3:
      return ScoreBlockBf16<3, D>(g + n, block, d, t0, scale, ahead);
    case 2:
      return ScoreBlockBf16<2, D>(g + n, block, d, t0, scale, ahead);
    case 1:
      return ScoreBlockBf16<1, D>(g + n, block, d, t0, scale, ahead);
    default:
      return;
  }
}

// Scores keys [0, longest) for every query of the group (a query's scores past its own length are
// left unused). The last, partial block is scored from a copy padded with zero rows, so no row
// past the positions in use is read.
template <int D>
MTPLX_AVX512_BF16 void ScoreGroupBf16(const Bf16Query* g, int count, const uint16_t* keys,
                                      int64_t d, int64_t longest, float scale, bool far) {
  alignas(64) uint16_t tail[16 * kMaxBf16ProductsHeadDim];
  if (far) PrefetchRows(keys, d, 0, std::min(longest, kPrefetchKeys));
  for (int64_t t0 = 0; t0 < longest; t0 += 16) {
    const uint16_t* block = keys + t0 * d;
    const uint16_t* ahead = nullptr;
    if (t0 + 16 > longest) {
      const int64_t used = (longest - t0) * d;
      std::memcpy(tail, block, static_cast<size_t>(used) * sizeof(uint16_t));
      std::memset(tail + used, 0, static_cast<size_t>(16 * d - used) * sizeof(uint16_t));
      block = tail;
    } else if (far) {
      const int64_t from = t0 + kPrefetchKeys;
      if (from + 16 <= longest) {
        ahead = keys + from * d;
      } else {
        PrefetchRows(keys, d, from, longest);  // none when from >= longest
      }
    }
    ScoreBlockForGroup<D>(g, count, block, d, t0, scale, ahead);
  }
}

// Turns a query's scores into weights exp(score - max) rounded to bf16, weights[0 .. padded) (a
// multiple of 32; zero from `length` on). Returns 1 / the sum of the rounded weights, so the
// output is their exact weighted average.
MTPLX_AVX512_BF16 float RoundWeights(float* scores, int64_t length, int64_t padded,
                                     uint16_t* weights) {
  const float max = MaxF32(scores, length);
  for (int64_t t = 0; t < length; ++t) scores[t] = ExpF32(scores[t] - max);
  __m512 total = _mm512_setzero_ps();
  for (int64_t t = 0; t < padded; t += 32) {
    const __m512 lo = _mm512_maskz_loadu_ps(FirstLanes(length - t), scores + t);
    const __m512 hi = _mm512_maskz_loadu_ps(FirstLanes(length - t - 16), scores + t + 16);
    const __m512i rounded = RoundToBf16x32(lo, hi);
    _mm512_storeu_si512(weights + t, rounded);
    total = _mm512_add_ps(total, WidenHalf<false>(rounded));
    total = _mm512_add_ps(total, WidenHalf<true>(rounded));
  }
  return 1.0f / _mm512_reduce_add_ps(total);
}

// Positions of a value tile (as in the exact kernel): the tile stays in L1 or L2 while every
// query of the group and every 64-wide slice of the head reads it.
constexpr int64_t kValueTile = 64;

// What the second row of a pair reads past the last position in use.
alignas(64) constexpr uint16_t kZeroRow[64] = {};

// Adds the pairs of positions (u, u + 1), u from u0 (even) while u < u1, of the values' dims
// [c, c + 32 * chunks) (chunks 1 or 2) to the sums of N queries (1 to 4). A pair's two rows are
// interleaved (vpunpck{l,h}wd) so that each lane holds one dimension of both, and each query
// adds weight(u) * v(u) + weight(u + 1) * v(u + 1) in one vdpbf16ps; its zero weights past its
// length add exact zeros, so the sums do not depend on which rows share the pass. The sums stay
// in out between tiles in that interleaved order (dims 8L + 0..3 in lanes 4L + 0..3 of the first
// vector of a chunk, 8L + 4..7 in the second), put in order by Finish.
template <int N>
MTPLX_AVX512_BF16 void SumValuePairs(const Bf16Query* g, const uint16_t* values, int64_t d,
                                     int64_t c, int chunks, int64_t u0, int64_t u1, int64_t longest,
                                     int64_t prefetch_to) {
  __m512 o[N][4];
#pragma GCC unroll 4
  for (int n = 0; n < N; ++n)
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
      o[n][i] = i < 2 * chunks && u0 > 0 ? _mm512_loadu_ps(g[n].out + c + int64_t{16} * i)
                                         : _mm512_setzero_ps();
  const int64_t slice_bytes = chunks * 64;
  for (int64_t u = u0; u < u1; u += 2) {
    const uint16_t* a = values + u * d + c;
    const uint16_t* b = u + 1 < longest ? a + d : kZeroRow;
    if (u + kValueTile < prefetch_to) {
      PrefetchSlice(a + kValueTile * d, slice_bytes);
      if (u + 1 + kValueTile < prefetch_to) PrefetchSlice(a + (kValueTile + 1) * d, slice_bytes);
    }
    __m512bh pairs[4];
#pragma GCC unroll 2
    for (int i = 0; i < 2; ++i) {
      if (i >= chunks) break;
      const __m512i x = _mm512_loadu_si512(a + 32 * i), y = _mm512_loadu_si512(b + 32 * i);
      pairs[2 * i] = AsBf16(_mm512_unpacklo_epi16(x, y));
      pairs[2 * i + 1] = AsBf16(_mm512_unpackhi_epi16(x, y));
    }
#pragma GCC unroll 4
    for (int n = 0; n < N; ++n) {
      int32_t both;  // weight(u) in the low half, weight(u + 1) in the high
      std::memcpy(&both, g[n].weights + u, sizeof(both));
      const __m512bh w = AsBf16(_mm512_set1_epi32(both));
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
        if (i < 2 * chunks) o[n][i] = _mm512_dpbf16_ps(o[n][i], pairs[i], w);
    }
  }
#pragma GCC unroll 4
  for (int n = 0; n < N; ++n)
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
      if (i < 2 * chunks) _mm512_storeu_ps(g[n].out + c + int64_t{16} * i, o[n][i]);
}

// The value tile [u0, u1) for every query of the group, four at a time; the first four fetch the
// next tile's slice as they go (prefetch_to: up to that position; 0: none).
MTPLX_AVX512_BF16 void SumValueTileBf16(const Bf16Query* g, int count, const uint16_t* values,
                                        int64_t d, int64_t c, int chunks, int64_t u0, int64_t u1,
                                        int64_t longest, int64_t prefetch_to) {
  for (int n = 0; n < count; n += 4, prefetch_to = 0) {
    switch (std::min(4, count - n)) {
      case 4:
        SumValuePairs<4>(g + n, values, d, c, chunks, u0, u1, longest, prefetch_to);
        break;
      case 3:
        SumValuePairs<3>(g + n, values, d, c, chunks, u0, u1, longest, prefetch_to);
        break;
      case 2:
        SumValuePairs<2>(g + n, values, d, c, chunks, u0, u1, longest, prefetch_to);
        break;
      default:
        SumValuePairs<1>(g + n, values, d, c, chunks, u0, u1, longest, prefetch_to);
        break;
    }
  }
}

// Puts a query's interleaved sums in dimension order and scales them by its inverse.
MTPLX_AVX512_BF16 void Finish(const Bf16Query& g, int64_t d) {
  const __m512i first = _mm512_set_epi32(23, 22, 21, 20, 7, 6, 5, 4, 19, 18, 17, 16, 3, 2, 1, 0);
  const __m512i second =
      _mm512_set_epi32(31, 30, 29, 28, 15, 14, 13, 12, 27, 26, 25, 24, 11, 10, 9, 8);
  const __m512 inverse = _mm512_set1_ps(g.inverse);
  for (int64_t c = 0; c < d; c += 32) {
    const __m512 lo = _mm512_loadu_ps(g.out + c), hi = _mm512_loadu_ps(g.out + c + 16);
    _mm512_storeu_ps(g.out + c, _mm512_mul_ps(_mm512_permutex2var_ps(lo, first, hi), inverse));
    _mm512_storeu_ps(g.out + c + 16,
                     _mm512_mul_ps(_mm512_permutex2var_ps(lo, second, hi), inverse));
  }
}

// Queries that share one key/value head, attended together (see AttendGroup in attention.cc).
template <int D>
MTPLX_AVX512_BF16 void AttendGroupBf16(Bf16Query* g, int count, const uint16_t* keys,
                                       const uint16_t* values, int64_t d, float scale) {
  int64_t longest = 0;
  for (int n = 0; n < count; ++n) longest = std::max(longest, g[n].length);
  const bool far = longest * d * static_cast<int64_t>(sizeof(uint16_t)) > kStreamPlaneBytes;
  ScoreGroupBf16<D>(g, count, keys, d, longest, scale, far);
  const int64_t padded = (longest + 31) / 32 * 32;
  for (int n = 0; n < count; ++n)
    g[n].inverse = RoundWeights(g[n].scores, g[n].length, padded, g[n].weights);
  if (far) PrefetchRows(values, d, 0, std::min(longest, kValueTile));
  for (int64_t u0 = 0; u0 < longest; u0 += kValueTile) {
    for (int64_t c = 0; c < d; c += 64)
      SumValueTileBf16(g, count, values, d, c, d - c >= 64 ? 2 : 1, u0,
                       std::min(longest, u0 + kValueTile), longest, far ? longest : 0);
  }
  for (int n = 0; n < count; ++n) Finish(g[n], d);
}

void AttendGroupBf16OfSize(Bf16Query* g, int count, const uint16_t* keys, const uint16_t* values,
                           int64_t d, float scale) {
  switch (d) {
    case 64:
      return AttendGroupBf16<64>(g, count, keys, values, d, scale);
    case 128:
      return AttendGroupBf16<128>(g, count, keys, values, d, scale);
    case 256:
      return AttendGroupBf16<256>(g, count, keys, values, d, scale);
    default:
      return AttendGroupBf16<0>(g, count, keys, values, d, scale);
  }
}

}  // namespace

// One task per (key/value head, tile of its queries), as the exact kernel.
void CausalAttentionBf16Products(const AttentionDims& dims, const float* q, int64_t rows,
                                 int64_t first_position, const KvPlanes& kv, float scale,
                                 float* out, ThreadPool* pool) {
  const int64_t d = dims.head_dim;
  const GroupTasks tasks(dims, rows, first_position, pool);
  // Scores and weights per query: the context rounded up to whole 32-position chunks.
  const int64_t pitch = (first_position + rows + 31) / 32 * 32;
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> scores(tasks.largest() * pitch);
    std::vector<uint16_t> weights(tasks.largest() * pitch), queries(tasks.largest() * d);
    Bf16Query g[kMaxGroupQueries];
    for (int64_t task = begin; task < end; ++task) {
      const int count = tasks.count(task);
      for (int n = 0; n < count; ++n) {
        const GroupTasks::Query query = tasks.query(task, n, d);
        RoundQuery(q + query.offset, d, queries.data() + n * d);
        g[n] = {queries.data() + n * d,
                scores.data() + n * pitch,
                weights.data() + n * pitch,
                first_position + query.row + 1,
                0.0f,
                out + query.offset};
      }
      AttendGroupBf16OfSize(
          g, count, reinterpret_cast<const uint16_t*>(Plane(kv.keys, kv, tasks.head(task), d)),
          reinterpret_cast<const uint16_t*>(Plane(kv.values, kv, tasks.head(task), d)), d, scale);
    }
  };
  tasks.Run(run);
}

}  // namespace mtplx::kernels
#endif
