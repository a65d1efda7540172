#include "kernels/attention.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/float16.h"
#include "kernels/attention_avx2.h"
#include "kernels/attention_avx512.h"
#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/simd.h"

namespace mtplx::kernels {

const char* KvTypeName(KvType type) { return type == KvType::kBf16 ? "bf16" : "f32"; }

MTPLX_TARGET_CLONES void StoreKvRow(const float* from, int64_t n, KvType type, void* to) {
  if (type == KvType::kF32) {
    std::memcpy(to, from, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  auto* out = static_cast<uint16_t*>(to);
  for (int64_t i = 0; i < n; ++i) out[i] = F32ToBf16(from[i]);
}

MTPLX_TARGET_CLONES void LoadKvRow(const void* from, int64_t n, KvType type, float* to) {
  if (type == KvType::kF32) {
    std::memcpy(to, from, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const auto* in = static_cast<const uint16_t*>(from);
  for (int64_t i = 0; i < n; ++i) to[i] = Bf16ToF32(in[i]);
}

namespace {

// Rows [t0, t1) of a plane as floats: the plane itself when it holds f32, else widened into
// scratch (which holds t1 - t0 rows).
const float* RowsAsF32(const uint8_t* plane, KvType type, int64_t d, int64_t t0, int64_t t1,
                       float* scratch) {
  if (type == KvType::kF32) return reinterpret_cast<const float*>(plane) + t0 * d;
  LoadKvRow(plane + t0 * d * KvElementBytes(type), (t1 - t0) * d, type, scratch);
  return scratch;
}

}  // namespace

void CausalAttentionReference(const AttentionDims& dims, const float* q, int64_t rows,
                              int64_t first_position, const KvPlanes& kv, float scale, float* out,
                              ThreadPool* pool, AttentionProducts products) {
  const int64_t d = dims.head_dim;
  const int64_t group = dims.heads / dims.kv_heads;
  const bool bf16 = products == AttentionProducts::kBf16 && kv.type == KvType::kBf16;
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> scores, row(d), rounded(d);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t m = task / dims.heads;
      const int64_t h = task % dims.heads;
      const uint8_t* keys = Plane(kv.keys, kv, h / group, d);
      const uint8_t* values = Plane(kv.values, kv, h / group, d);
      const int64_t length = first_position + m + 1;
      const float* qh = q + (m * dims.heads + h) * d;
      if (bf16) {
        for (int64_t i = 0; i < d; ++i) rounded[i] = RoundToBf16(qh[i]);
        qh = rounded.data();
      }
      scores.resize(length);
      for (int64_t t = 0; t < length; ++t)
        scores[t] = DotF32(qh, RowsAsF32(keys, kv.type, d, t, t + 1, row.data()), d) * scale;
      float inverse = 1.0f;
      if (bf16) {
        const float max = *std::max_element(scores.begin(), scores.end());
        double total = 0.0;
        for (float& s : scores) {
          s = RoundToBf16(ExpF32(s - max));
          total += s;
        }
        inverse = static_cast<float>(1.0 / total);
      } else {
        SoftmaxInPlace(scores.data(), length);
      }
      float* o = out + (m * dims.heads + h) * d;
      std::fill(o, o + d, 0.0f);
      for (int64_t t = 0; t < length; ++t) {
        const float p = scores[t];
        const float* v = RowsAsF32(values, kv.type, d, t, t + 1, row.data());
        for (int64_t i = 0; i < d; ++i) o[i] += p * v[i];
      }
      for (int64_t i = 0; i < d; ++i) o[i] *= inverse;
    }
  };
  if (pool) {
    pool->ParallelFor(rows * dims.heads, 1, run);
  } else {
    run(0, rows * dims.heads);
  }
}

namespace {

// out[0..d) += w * v[0..d).
MTPLX_TARGET_CLONES void AddScaled(float w, const float* __restrict v, int64_t d,
                                   float* __restrict out) {
  for (int64_t i = 0; i < d; ++i) out[i] += w * v[i];
}

// Positions a task walks at a time: the block of keys (or values) stays in cache while every
// query of the group reads it.
constexpr int64_t kPortableTile = 64;

// The packed kernel for CPUs with neither the AVX-512 nor the AVX2 one (and head sizes they do not
// take): the queries sharing a key/value head are attended together, so each tile of keys and of
// values is read from memory once for all of them, as on AVX-512; the arithmetic is plain loops.
void CausalAttentionPacked(const AttentionDims& dims, const float* q, int64_t rows,
                           int64_t first_position, const KvPlanes& kv, float scale, float* out,
                           ThreadPool* pool) {
  const int64_t d = dims.head_dim;
  const GroupTasks tasks(dims, rows, first_position, pool);
  const int64_t pitch = first_position + rows;
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> scores(tasks.largest() * pitch);
    std::vector<float> widened(kv.type == KvType::kF32 ? 0 : kPortableTile * d);
    for (int64_t task = begin; task < end; ++task) {
      const GroupTasks::Queries g = tasks.Gather(task, q, out, first_position, d);
      const int count = g.count;
      const float* const* qs = g.q;
      float* const* outs = g.out;
      const int64_t* lengths = g.length;
      const uint8_t* keys = Plane(kv.keys, kv, tasks.head(task), d);
      const uint8_t* values = Plane(kv.values, kv, tasks.head(task), d);
      const int64_t longest = *std::max_element(lengths, lengths + count);
      for (int64_t t0 = 0; t0 < longest; t0 += kPortableTile) {
        const float* tile =
            RowsAsF32(keys, kv.type, d, t0, std::min(t0 + kPortableTile, longest), widened.data());
        for (int n = 0; n < count; ++n)
          for (int64_t t = t0; t < std::min(t0 + kPortableTile, lengths[n]); ++t)
            scores[n * pitch + t] = DotF32(qs[n], tile + (t - t0) * d, d) * scale;
      }
      for (int n = 0; n < count; ++n) {
        SoftmaxInPlace(scores.data() + n * pitch, lengths[n]);
        std::fill(outs[n], outs[n] + d, 0.0f);
      }
      for (int64_t u0 = 0; u0 < longest; u0 += kPortableTile) {
        const float* tile = RowsAsF32(values, kv.type, d, u0, std::min(u0 + kPortableTile, longest),
                                      widened.data());
        for (int n = 0; n < count; ++n)
          for (int64_t u = u0; u < std::min(u0 + kPortableTile, lengths[n]); ++u)
            AddScaled(scores[n * pitch + u], tile + (u - u0) * d, d, outs[n]);
      }
    }
  };
  tasks.Run(run);
}

}  // namespace

#ifdef MTPLX_ATTENTION_AVX512
namespace {

using namespace attention_avx512;  // NOLINT(google-build-using-namespace): the kernel's parts

// 16 cached elements as floats: f32 as they are, bf16 widened (its bits are the high half).
MTPLX_AVX512_ATTN inline __m512 Load16(const float* p) { return _mm512_loadu_ps(p); }
MTPLX_AVX512_ATTN inline __m512 Load16(const uint16_t* p) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

// Scores of keys t0 .. t0 + count - 1 (count <= 16) against q, times scale, into scores[t0 ..].
// Full blocks (count = 16 known at compile time) keep all 16 accumulators in registers. D is the
// head size when known at compile time (0: d): the 16 keys are then constant offsets from one
// pointer instead of 16 pointers that spill.
template <bool Full, int D, typename T>
MTPLX_AVX512_ATTN inline void ScoreBlock(const float* q, const T* keys, int64_t d, int64_t t0,
                                         int count, float scale, float* scores) {
  const int64_t dim = D > 0 ? D : d;
  const T* block = keys + t0 * dim;
  __m512 acc[16];
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t c = 0; c < dim; c += 16) {
    const __m512 qc = _mm512_loadu_ps(q + c);
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      if (!Full && j >= count) break;
      acc[j] = _mm512_fmadd_ps(qc, Load16(block + j * dim + c), acc[j]);
    }
  }
  const __m512 s = _mm512_mul_ps(SumEach(acc), _mm512_set1_ps(scale));
  _mm512_mask_storeu_ps(scores + t0, static_cast<__mmask16>((1u << count) - 1), s);
}

// A query of a group: its weights over the keys, how many keys it sees, where its output goes.
struct GroupQuery {
  const float* q;
  const float* weights;  // after ExpAndInverseSum
  int64_t length;
  float inverse;
  float* out;
};

constexpr int kMaxValueQueries = 4;  // 4 queries x 4 vectors of 16 = 16 accumulators

template <typename T>
MTPLX_AVX512_ATTN inline void AddValue(float weight, const T* v, int chunks, __m512* o) {
  const __m512 p = _mm512_set1_ps(weight);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
    if (i < chunks) o[i] = _mm512_fmadd_ps(p, Load16(v + int64_t{16} * i), o[i]);
}

// The same sums with the value row already in registers (loaded, and widened, once for every
// query that adds it).
MTPLX_AVX512_ATTN inline void AddLoadedValue(float weight, const __m512* v, int chunks, __m512* o) {
  const __m512 p = _mm512_set1_ps(weight);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
    if (i < chunks) o[i] = _mm512_fmadd_ps(p, v[i], o[i]);
}

// Positions of a value tile: the tile (16 KiB at head_dim 64, 64 KiB at 256) stays in L1 or L2
// while every query of the group and every 64-wide slice of the head reads it.
constexpr int64_t kValueTile = 64;

// Adds positions [u0, u1) of the values to out[c .. c + 16 * chunks) of up to 4 queries (the
// running sums live in out between tiles; a float stored and reloaded is exact), streaming each
// value row once for all of them. Every query adds its values in position order with the same
// fused multiply-adds whatever queries and tiles share the pass, so its output does not depend on
// the others.
template <int N, typename T>
MTPLX_AVX512_ATTN void SumValues(const GroupQuery* g, const T* values, int64_t d, int64_t c,
                                 int chunks, int64_t u0, int64_t u1, int64_t prefetch_to) {
  __m512 o[N][4];
#pragma GCC unroll 4
  for (int n = 0; n < N; ++n)
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
      o[n][i] = i < chunks && u0 > 0 ? _mm512_loadu_ps(g[n].out + c + int64_t{16} * i)
                                     : _mm512_setzero_ps();
  int64_t shared = std::min(u1, g[0].length);
  for (int n = 1; n < N; ++n) shared = std::min(shared, g[n].length);
  const int64_t line_bytes = chunks * 16 * static_cast<int64_t>(sizeof(T));
  for (int64_t u = u0; u < shared; ++u) {
    const T* v = values + u * d + c;
    if (u + kValueTile < prefetch_to) PrefetchSlice(v + kValueTile * d, line_bytes);
    __m512 row[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
      if (i < chunks) row[i] = Load16(v + int64_t{16} * i);
#pragma GCC unroll 4
    for (int n = 0; n < N; ++n) AddLoadedValue(g[n].weights[u], row, chunks, o[n]);
  }
#pragma GCC unroll 4
  for (int n = 0; n < N; ++n)
    for (int64_t u = std::max(shared, u0); u < std::min(u1, g[n].length); ++u)
      AddValue(g[n].weights[u], values + u * d + c, chunks, o[n]);
#pragma GCC unroll 4
  for (int n = 0; n < N; ++n)
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
      if (i < chunks) _mm512_storeu_ps(g[n].out + c + int64_t{16} * i, o[n][i]);
}

// prefetch_to: the first pass over the slice fetches the same slice of the next tile, row by row
// as it goes (spread out, not a burst that waits on a full miss queue), up to this position (0: no
// prefetch).
template <typename T>
MTPLX_AVX512_ATTN void SumValueTile(const GroupQuery* g, int count, const T* values, int64_t d,
                                    int64_t c, int chunks, int64_t u0, int64_t u1,
                                    int64_t prefetch_to) {
  for (int n = 0; n < count; n += kMaxValueQueries) {
    const int64_t to = n == 0 ? prefetch_to : 0;
    switch (std::min(kMaxValueQueries, count - n)) {
      case 4:
        SumValues<4, T>(g + n, values, d, c, chunks, u0, u1, to);
        break;
      case 3:
        SumValues<3, T>(g + n, values, d, c, chunks, u0, u1, to);
        break;
      case 2:
        SumValues<2, T>(g + n, values, d, c, chunks, u0, u1, to);
        break;
      default:
        SumValues<1, T>(g + n, values, d, c, chunks, u0, u1, to);
        break;
    }
  }
}

// Scores of the full block of keys [t0, t0 + 16) for NQ queries of a group at once (2 to 4), four
// keys at a time: each chunk of a key is loaded (and widened) once for all of them instead of once
// a query, half the loads of ScoreBlock per multiply-add. Every (query, key) score gets the fused
// multiply-adds of ScoreBlock in the same order and the same lane of SumEach's tree (which treats
// every lane alike), so the scores are ScoreBlock's bit for bit.
// ahead: the block kPrefetchKeys positions on, fetched a line of four keys at a time as this one
// is scored (spread out, not a burst that waits on a full miss queue), or null.
template <int NQ, int D, typename K>
MTPLX_AVX512_ATTN inline void ScoreBlockForQueries(const GroupQuery* g, const K* keys,
                                                   int64_t first, int64_t d, int64_t t0,
                                                   float scale, float* scores, int64_t pitch,
                                                   const K* ahead) {
  static_assert(NQ >= 2 && NQ <= 4);
  const int64_t dim = D > 0 ? D : d;
  const K* block = keys + (t0 - first) * dim;
  constexpr int64_t kLine = 64 / sizeof(K);  // elements a cache line
  const __m512 scales = _mm512_set1_ps(scale);
#pragma GCC unroll 1
  for (int k0 = 0; k0 < 16; k0 += 4) {
    __m512 acc[16];  // lane group n: query n, keys k0 .. k0 + 3 (unused groups stay zero)
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t c = 0; c < dim; c += 16) {
      if (ahead && c % kLine == 0) {
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) PrefetchLine(ahead + (k0 + k) * dim + c);
      }
      __m512 qc[NQ];
#pragma GCC unroll 4
      for (int n = 0; n < NQ; ++n) qc[n] = _mm512_loadu_ps(g[n].q + c);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m512 key = Load16(block + (k0 + k) * dim + c);
#pragma GCC unroll 4
        for (int n = 0; n < NQ; ++n) acc[4 * n + k] = _mm512_fmadd_ps(qc[n], key, acc[4 * n + k]);
      }
    }
    const __m512 s = _mm512_mul_ps(SumEach(acc), scales);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, s);
#pragma GCC unroll 4
    for (int n = 0; n < NQ; ++n) std::memcpy(scores + n * pitch + t0 + k0, lanes + 4 * n, 16);
  }
}

// Whether queries g[0 .. together) (two or more) all see every key of the block at t0.
inline bool SeeWholeBlock(const GroupQuery* g, int together, int64_t t0) {
  if (together < 2) return false;
  for (int i = 0; i < together; ++i)
    if (t0 + 16 > g[i].length) return false;
  return true;
}

// Scores keys [t0, t0 + 16) for every query of a group (each up to its length). `keys` holds
// rows from `first` on: the plane itself (first = 0) or a widened copy of the block (first = t0).
// Queries that all see the whole block go four (or the last two or three) at a time.
// prefetch_to: fetch the keys kPrefetchKeys positions ahead, up to this position (0: none; keys
// must then be the plane).
template <int D, typename K>
MTPLX_AVX512_ATTN inline void ScoreGroupBlock(const GroupQuery* g, int count, const K* keys,
                                              int64_t first, int64_t d, int64_t t0, float scale,
                                              float* scores, int64_t pitch, int64_t prefetch_to) {
  const int64_t ahead_from = t0 + kPrefetchKeys;
  const K* ahead = prefetch_to >= ahead_from + 16 ? keys + ahead_from * d : nullptr;
  if (prefetch_to > ahead_from && !ahead) {
    PrefetchRows(keys, d, ahead_from, prefetch_to);  // a partial last block
  } else if (ahead && !SeeWholeBlock(g, std::min(4, count), t0)) {
    PrefetchRows(keys, d, ahead_from, ahead_from + 16);  // no query pair scores this block
    ahead = nullptr;
  }
  int n = 0;
  for (; n + 2 <= count; n += 4) {
    const int together = std::min(4, count - n);
    if (!SeeWholeBlock(g + n, together, t0)) break;
    float* s = scores + n * pitch;
    const K* a = n == 0 ? ahead : nullptr;
    if (together == 4) ScoreBlockForQueries<4, D>(g + n, keys, first, d, t0, scale, s, pitch, a);
    if (together == 3) ScoreBlockForQueries<3, D>(g + n, keys, first, d, t0, scale, s, pitch, a);
    if (together == 2) ScoreBlockForQueries<2, D>(g + n, keys, first, d, t0, scale, s, pitch, a);
  }
  for (; n < count; ++n) {
    float* s = scores + n * pitch + first;
    if (t0 + 16 <= g[n].length) {
      ScoreBlock<true, D>(g[n].q, keys, d, t0 - first, 16, scale, s);
    } else if (t0 < g[n].length) {
      ScoreBlock<false, D>(g[n].q, keys, d, t0 - first, static_cast<int>(g[n].length - t0), scale,
                           s);
    }
  }
}

// Most head size whose 16-key block is widened into a stack buffer.
constexpr int64_t kMaxWidenedHeadDim = 256;

MTPLX_AVX512_ATTN inline void WidenBf16(const uint16_t* from, int64_t n, float* to) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(to + i, Load16(from + i));
  for (; i < n; ++i) to[i] = Bf16ToF32(from[i]);
}

// Queries that share one key/value head (the heads of a GQA group, for every row), attended
// together: each 16-key block is read from memory once and scored for every query while it sits
// in L1, and each value tile is read from memory once for all of them. keys and values are the
// head's planes; scores holds count rows of `pitch` floats.
template <int D, typename T>
MTPLX_AVX512_ATTN void AttendGroup(GroupQuery* g, int count, const T* keys, const T* values,
                                   int64_t d, float scale, float* scores, int64_t pitch) {
  int64_t longest = 0;
  for (int n = 0; n < count; ++n) longest = std::max(longest, g[n].length);
  // A plane that does not fit in L2 streams from further out: fetch ahead of the reads.
  const bool far = longest * d * static_cast<int64_t>(sizeof(T)) > kStreamPlaneBytes;
  // A bf16 block that more than four queries score is widened once, not once per query (up to
  // four widen each chunk once in registers: ScoreBlockForQueries).
  const bool widen = std::is_same_v<T, uint16_t> && count > 4 && d <= kMaxWidenedHeadDim;
  alignas(64) float widened[std::is_same_v<T, uint16_t> ? 16 * kMaxWidenedHeadDim : 1];
  if (far) PrefetchRows(keys, d, 0, std::min(longest, kPrefetchKeys));
  for (int64_t t0 = 0; t0 < longest; t0 += 16) {
    if constexpr (std::is_same_v<T, uint16_t>) {
      if (widen) {
        if (far) {
          PrefetchRows(keys, d, t0 + kPrefetchKeys, std::min(longest, t0 + kPrefetchKeys + 16));
        }
        WidenBf16(keys + t0 * d, std::min<int64_t>(16, longest - t0) * d, widened);
        ScoreGroupBlock<D>(g, count, static_cast<const float*>(widened), t0, d, t0, scale, scores,
                           pitch, 0);
        continue;
      }
    }
    ScoreGroupBlock<D>(g, count, keys, 0, d, t0, scale, scores, pitch, far ? longest : 0);
  }
  for (int n = 0; n < count; ++n) {
    g[n].weights = scores + n * pitch;
    g[n].inverse = ExpAndInverseSum(scores + n * pitch, g[n].length);
  }
  if (far) PrefetchRows(values, d, 0, std::min(longest, kValueTile));
  for (int64_t u0 = 0; u0 < longest; u0 += kValueTile) {
    for (int64_t c = 0; c < d; c += 64)
      SumValueTile(g, count, values, d, c, static_cast<int>(std::min<int64_t>(4, (d - c) / 16)), u0,
                   std::min(longest, u0 + kValueTile), far ? longest : 0);
  }
  for (int n = 0; n < count; ++n) {
    const __m512 inverse = _mm512_set1_ps(g[n].inverse);
    for (int64_t c = 0; c < d; c += 16)
      _mm512_storeu_ps(g[n].out + c, _mm512_mul_ps(_mm512_loadu_ps(g[n].out + c), inverse));
  }
}

// AttendGroup with the head size as a compile-time constant for the sizes models use.
template <typename T>
MTPLX_AVX512_ATTN void AttendGroupOfSize(GroupQuery* g, int count, const T* keys, const T* values,
                                         int64_t d, float scale, float* scores, int64_t pitch) {
  switch (d) {
    case 64:
      return AttendGroup<64>(g, count, keys, values, d, scale, scores, pitch);
    case 128:
      return AttendGroup<128>(g, count, keys, values, d, scale, scores, pitch);
    case 256:
      return AttendGroup<256>(g, count, keys, values, d, scale, scores, pitch);
    default:
      return AttendGroup<0>(g, count, keys, values, d, scale, scores, pitch);
  }
}

}  // namespace

// One task per (key/value head, tile of its queries): GroupTasks.
static void CausalAttentionAvx512(const AttentionDims& dims, const float* q, int64_t rows,
                                  int64_t first_position, const KvPlanes& kv, float scale,
                                  float* out, ThreadPool* pool) {
  const int64_t d = dims.head_dim;
  const GroupTasks tasks(dims, rows, first_position, pool);
  const int64_t pitch = (first_position + rows + 15) / 16 * 16;
  auto run = [&](int64_t begin, int64_t end) {
    // Scratch for the largest tile only (decode: the group's heads).
    std::vector<float> scores(tasks.largest() * pitch);
    GroupQuery g[kMaxGroupQueries];
    for (int64_t task = begin; task < end; ++task) {
      const int count = tasks.count(task);
      for (int n = 0; n < count; ++n) {
        const GroupTasks::Query query = tasks.query(task, n, d);
        g[n] = {q + query.offset, nullptr, first_position + query.row + 1, 0.0f,
                out + query.offset};
      }
      const uint8_t* keys = Plane(kv.keys, kv, tasks.head(task), d);
      const uint8_t* values = Plane(kv.values, kv, tasks.head(task), d);
      if (kv.type == KvType::kBf16) {
        AttendGroupOfSize(g, count, reinterpret_cast<const uint16_t*>(keys),
                          reinterpret_cast<const uint16_t*>(values), d, scale, scores.data(),
                          pitch);
      } else {
        AttendGroupOfSize(g, count, reinterpret_cast<const float*>(keys),
                          reinterpret_cast<const float*>(values), d, scale, scores.data(), pitch);
      }
    }
  };
  tasks.Run(run);
}
#endif

bool Bf16AttentionProductsAvailable() {
#ifdef MTPLX_ATTENTION_AVX512
  static const bool available = [] {
    __builtin_cpu_init();
    return Avx512FKernelsEnabled() && __builtin_cpu_supports("avx512bf16") != 0 &&
           __builtin_cpu_supports("avx512bw") != 0;
  }();
  return available;
#else
  return false;
#endif
}

void CausalAttention(const AttentionDims& dims, const float* q, int64_t rows,
                     int64_t first_position, const KvPlanes& kv, float scale, float* out,
                     ThreadPool* pool, AttentionProducts products) {
  if (rows <= 0) return;
#ifdef MTPLX_ATTENTION_AVX512
  if (products == AttentionProducts::kBf16 && kv.type == KvType::kBf16 && dims.head_dim % 32 == 0 &&
      dims.head_dim <= kMaxBf16ProductsHeadDim && Bf16AttentionProductsAvailable())
    return CausalAttentionBf16Products(dims, q, rows, first_position, kv, scale, out, pool);
  static const bool fast = Avx512FKernelsEnabled();
  if (fast && dims.head_dim % 16 == 0)
    return CausalAttentionAvx512(dims, q, rows, first_position, kv, scale, out, pool);
#endif
  if (dims.head_dim % 8 == 0 && Avx2AttentionEnabled())
    return CausalAttentionAvx2(dims, q, rows, first_position, kv, scale, out, pool);
  CausalAttentionPacked(dims, q, rows, first_position, kv, scale, out, pool);
}

}  // namespace mtplx::kernels
