// Parts the packed attention kernels share (internal to kernels/): the task split and the plane
// lookup of every packed kernel (portable, AVX-512, bf16 products), and the scoring, softmax and
// prefetch helpers of the two AVX-512 ones (attention.cc and attention_bf16.cc).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MTPLX_ATTENTION_AVX512 1
// GCC 12 reports the deliberately undefined pass-through operands inside its own AVX-512 headers
// (_mm512_undefined_*) as uninitialized once they are inlined here.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

namespace mtplx::kernels {

// How a key/value head's queries are split into tasks. Every task reads its head's whole cache,
// so a verify pass's rows are one task a head where that keeps the threads busy: the 9B shape's
// depth-4 pass has 20 queries a head, and with tiles of 16 it read each head's cache twice (one
// layer at 32k keys, two threads: 11.4-13.2 -> 9.6-10.2 ms as one task). A prompt chunk's many
// queries keep tiles of kTileQueries: their re-reads come from cache, and a tile's scores
// (one context-long row a query) stay small.
constexpr int kTileQueries = 16;
constexpr int kMaxGroupQueries = 64;  // the most queries one task attends

// The tasks of the packed kernels: one per (key/value head, tile of the queries that share it).
// A tile's queries are the group's heads row by row, so their lengths differ by at most a few
// positions. Up to kMaxGroupQueries queries a head are one tile, or as many tiles of at least
// kTileQueries as gives each thread a task; more are tiles of kTileQueries. Which tile a query
// falls in never changes its result.
class GroupTasks {
 public:
  GroupTasks(const AttentionDims& dims, int64_t rows, int64_t first_position, ThreadPool* pool)
      : heads_(dims.heads),
        group_(dims.heads / dims.kv_heads),
        per_kv_(rows * group_),
        work_(rows * dims.heads * (first_position + rows) * dims.head_dim * 2),
        pool_(WorthParallel(pool, work_) ? pool : nullptr) {
    const int64_t threads = pool_ ? pool_->size() : 1;
    const int64_t most = (per_kv_ + kTileQueries - 1) / kTileQueries;  // tiles of kTileQueries
    tiles_ = per_kv_ > kMaxGroupQueries
                 ? most
                 : std::min(most, (threads + dims.kv_heads - 1) / dims.kv_heads);
    tile_ = (per_kv_ + tiles_ - 1) / tiles_;
    tiles_ = (per_kv_ + tile_ - 1) / tile_;
    total_ = dims.kv_heads * tiles_;
  }

  // Queries of the largest task (decode: the group's heads), what a task's scratch must hold.
  int64_t largest() const { return tile_; }
  int64_t head(int64_t task) const { return task / tiles_; }
  int count(int64_t task) const {
    return static_cast<int>(std::min<int64_t>(tile_, per_kv_ - FirstOf(task)));
  }
  // Query n of a task: its row, and where its head_dim floats start in q and in out.
  struct Query {
    int64_t row;
    int64_t offset;
  };
  Query query(int64_t task, int n, int64_t head_dim) const {
    const int64_t i = FirstOf(task) + n, row = i / group_;
    return {row, (row * heads_ + head(task) * group_ + i % group_) * head_dim};
  }

  // A task's queries as the packed kernels walk them: where each starts in q and in out, and how
  // many positions it attends.
  struct Queries {
    int count;
    const float* q[kMaxGroupQueries];
    float* out[kMaxGroupQueries];
    int64_t length[kMaxGroupQueries];
  };
  Queries Gather(int64_t task, const float* q, float* out, int64_t first_position,
                 int64_t head_dim) const {
    Queries queries;
    queries.count = count(task);
    for (int n = 0; n < queries.count; ++n) {
      const Query one = query(task, n, head_dim);
      queries.q[n] = q + one.offset;
      queries.out[n] = out + one.offset;
      queries.length[n] = first_position + one.row + 1;
    }
    return queries;
  }

  // Runs run(begin, end) over the tasks: on the pool when their multiply-adds are worth it.
  template <typename Fn>
  void Run(Fn&& run) const {
    if (pool_) {
      pool_->ParallelFor(total_, 1, run);
    } else {
      run(0, total_);
    }
  }

 private:
  int64_t FirstOf(int64_t task) const { return task % tiles_ * tile_; }

  int64_t heads_, group_, per_kv_, work_;
  ThreadPool* pool_;
  int64_t tiles_ = 1, tile_ = 1, total_ = 0;
};

// The plane of one key/value head (capacity * head_dim elements) within a cache's keys or values.
inline const uint8_t* Plane(const void* planes, const KvPlanes& kv, int64_t head, int64_t d) {
  return static_cast<const uint8_t*>(planes) + head * kv.capacity * d * KvElementBytes(kv.type);
}

#ifdef MTPLX_ATTENTION_AVX512
namespace attention_avx512 {

#define MTPLX_AVX512_ATTN __attribute__((target("avx512f,fma")))

// Sums of 16 vectors, one per lane of the result: lane j = total of v[j]. Every lane gets the
// same tree ((chunk0 + chunk1) + (chunk2 + chunk3), then (x0 + x2) + (x1 + x3) within a chunk),
// so a key's score does not depend on where in a block it sits.
MTPLX_AVX512_ATTN inline __m512 SumEach(const __m512* v) {
  __m512 c[8], d[4];
#pragma GCC unroll 8
  for (int64_t i = 0; i < 8; ++i)
    c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xDD));
#pragma GCC unroll 4
  for (int64_t i = 0; i < 4; ++i)
    d[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0xDD));
  // d[i] chunk k holds the 4 partial sums of source 4i + k.
  const __m512 e0 = _mm512_add_ps(_mm512_unpacklo_ps(d[0], d[1]), _mm512_unpackhi_ps(d[0], d[1]));
  const __m512 e1 = _mm512_add_ps(_mm512_unpacklo_ps(d[2], d[3]), _mm512_unpackhi_ps(d[2], d[3]));
  const __m512 f = _mm512_add_ps(_mm512_shuffle_ps(e0, e1, 0x44), _mm512_shuffle_ps(e0, e1, 0xEE));
  // Lane 4k + i of f holds source 4i + k; put source s in lane s.
  const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  return _mm512_permutexvar_ps(order, f);
}

// Turns a query's scores into exp(score - max) in place; returns 1 / their sum.
MTPLX_AVX512_ATTN inline float ExpAndInverseSum(float* scores, int64_t length) {
  // 16 lanes at a time: a scalar running max is a chain of dependent compares (5 % of a long
  // context's attention).
  const float max = MaxF32(scores, length);
  for (int64_t t = 0; t < length; ++t) scores[t] = ExpF32(scores[t] - max);
  __m512 total = _mm512_setzero_ps();
  int64_t t = 0;
  for (; t + 16 <= length; t += 16) total = _mm512_add_ps(total, _mm512_loadu_ps(scores + t));
  total = _mm512_add_ps(
      total, _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << (length - t)) - 1), scores + t));
  return 1.0f / _mm512_reduce_add_ps(total);
}

// Planes larger than this (a share of L2) are prefetched: rows kPrefetchKeys positions ahead of
// the key block being scored, and the next value tile while one is summed.
constexpr int64_t kStreamPlaneBytes = 256 << 10;
constexpr int64_t kPrefetchKeys = 32;

// One line into L2, where the streamed planes are prefetched. A core tracks few L1 misses at a
// time, so lines asked for into L1 cap one thread's stream near 10 GB/s (that many lines in
// flight over DRAM's latency); L2 tracks several times more, and a key or value that waits on L2
// costs the out-of-order core little. One 9B layer (16 / 4 heads of 256), bf16, AMD EPYC Zen 4,
// L1 -> L2 (`kernels_bench --benchmark_filter=BM_Attention/.../1/1`): 32k keys one thread
// 9.2-9.5 -> 17.4-18.4 GB/s, two 16.1-17.9 -> 32.3; 8k keys two 23.6-33.8 -> 37.4-40.3. (Into
// L1 had measured better on a Zen 5 host while the planes were still fetched a block at a burst.)
MTPLX_AVX512_ATTN inline void PrefetchLine(const void* p) {
  _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1);
}

// Brings `bytes` from p on into L2, one request per cache line.
MTPLX_AVX512_ATTN inline void PrefetchSlice(const void* p, int64_t bytes) {
  const char* first = static_cast<const char*>(p);
  for (int64_t b = 0; b < bytes; b += 64) PrefetchLine(first + b);
}
// Rows [begin, end) of a plane (d elements each) into L2 (none when end <= begin).
template <typename T>
MTPLX_AVX512_ATTN inline void PrefetchRows(const T* plane, int64_t d, int64_t begin, int64_t end) {
  PrefetchSlice(plane + begin * d, (end - begin) * d * static_cast<int64_t>(sizeof(T)));
}

}  // namespace attention_avx512

// Causal attention with bf16 products (AttentionProducts::kBf16) on a bf16 cache, head_dim a
// multiple of 32 up to kMaxBf16ProductsHeadDim; needs AVX512_BF16 (Avx512Bf16KernelsEnabled).
constexpr int64_t kMaxBf16ProductsHeadDim = 256;
void CausalAttentionBf16Products(const AttentionDims& dims, const float* q, int64_t rows,
                                 int64_t first_position, const KvPlanes& kv, float scale,
                                 float* out, ThreadPool* pool);
#endif

}  // namespace mtplx::kernels
