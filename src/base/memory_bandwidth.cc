#include "base/memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/process_stats.h"
#include "base/timer.h"

namespace mtplx {
namespace {

// Two doubles per vector: SIMD every 64-bit target has (SSE2, NEON), so the loops are vectorised
// without -O3 or -ffast-math (a plain float sum may not be reordered) and without ABI caveats.
// Two 16-byte loads per cycle already outrun one core's share of DRAM bandwidth.
using Lanes = double __attribute__((vector_size(16)));
constexpr int64_t kLanes = 2;
// Slices are whole multiples of this many doubles (64 KiB), so every slice starts aligned.
constexpr int64_t kGrain = 8192;

struct FreeDeleter {
  void operator()(double* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<double[], FreeDeleter>;

Buffer Allocate(int64_t count) {
  const size_t bytes = (static_cast<size_t>(count) * sizeof(double) + 63) / 64 * 64;
  return Buffer(static_cast<double*>(std::aligned_alloc(64, bytes)));
}

Lanes Load(const double* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Independent accumulators keep several loads in flight per thread.
double SumSlice(const double* p, int64_t n) {
  constexpr int kAccumulators = 8;
  Lanes acc[kAccumulators] = {};
  int64_t i = 0;
  for (; i + kAccumulators * kLanes <= n; i += kAccumulators * kLanes)
    for (int k = 0; k < kAccumulators; ++k) acc[k] += Load(p + i + k * kLanes);
  Lanes s = {};
  for (const Lanes& a : acc) s += a;
  double total = s[0] + s[1];
  for (; i < n; ++i) total += p[i];
  return total;
}

void TriadSlice(double* a, const double* b, const double* c, double scale, int64_t n) {
  const Lanes s = {scale, scale};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const Lanes v = Load(b + i) + s * Load(c + i);
    std::memcpy(a + i, &v, sizeof(v));
  }
  for (; i < n; ++i) a[i] = b[i] + scale * c[i];
}

#if defined(__x86_64__)
// The same loops with 64- and 32-byte loads where the CPU has them. On an Intel Xeon VM a core
// streamed from DRAM at about half the rate with 16-byte loads that it reached with 64-byte ones
// (two threads: 12.5 against 24 GB/s, 32-byte loads 20), while the weight-streaming kernels load
// 64 bytes at a time: the probe read below what decoding itself achieved. Fewer loads a line
// let the core run further ahead with its misses.
// Four named accumulators: an array of them, indexed in a loop, stays in memory at -O2.
__attribute__((target("avx512f"))) double SumSlice512(const double* p, int64_t n) {
  __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_add_pd(a0, _mm512_loadu_pd(p + i));
    a1 = _mm512_add_pd(a1, _mm512_loadu_pd(p + i + 8));
    a2 = _mm512_add_pd(a2, _mm512_loadu_pd(p + i + 16));
    a3 = _mm512_add_pd(a3, _mm512_loadu_pd(p + i + 24));
  }
  double lanes[8];  // not _mm512_reduce_add_pd: GCC 12 warns on its undefined upper half
  _mm512_storeu_pd(lanes, _mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
  double total = 0.0;
  for (double lane : lanes) total += lane;
  for (; i < n; ++i) total += p[i];
  return total;
}

__attribute__((target("avx2"))) double SumSlice256(const double* p, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_add_pd(a0, _mm256_loadu_pd(p + i));
    a1 = _mm256_add_pd(a1, _mm256_loadu_pd(p + i + 4));
    a2 = _mm256_add_pd(a2, _mm256_loadu_pd(p + i + 8));
    a3 = _mm256_add_pd(a3, _mm256_loadu_pd(p + i + 12));
  }
  double lanes[4];
  _mm256_storeu_pd(lanes, _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
  double total = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; ++i) total += p[i];
  return total;
}

__attribute__((target("avx512f"))) void TriadSlice512(double* a, const double* b, const double* c,
                                                      double scale, int64_t n) {
  const __m512d s = _mm512_set1_pd(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm512_storeu_pd(a + i, _mm512_fmadd_pd(s, _mm512_loadu_pd(c + i), _mm512_loadu_pd(b + i)));
  for (; i < n; ++i) a[i] = b[i] + scale * c[i];
}

__attribute__((target("avx2,fma"))) void TriadSlice256(double* a, const double* b, const double* c,
                                                       double scale, int64_t n) {
  const __m256d s = _mm256_set1_pd(scale);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_pd(a + i, _mm256_fmadd_pd(s, _mm256_loadu_pd(c + i), _mm256_loadu_pd(b + i)));
  for (; i < n; ++i) a[i] = b[i] + scale * c[i];
}
#endif

struct StreamLoops {
  double (*sum)(const double*, int64_t) = SumSlice;
  void (*triad)(double*, const double*, const double*, double, int64_t) = TriadSlice;
};

// The widest loads this CPU has.
StreamLoops WidestLoops() {
  StreamLoops loops;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) {
    loops.sum = SumSlice512;
    loops.triad = TriadSlice512;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    loops.sum = SumSlice256;
    loops.triad = TriadSlice256;
  }
#endif
  return loops;
}

// Best (shortest) of `repetitions` runs of `pass`, in seconds.
template <typename Pass>
double BestSeconds(int repetitions, const Pass& pass) {
  double best = 0.0;
  for (int r = 0; r < std::max(1, repetitions); ++r) {
    Timer timer;
    pass();
    const double seconds = timer.Seconds();
    if (r == 0 || seconds < best) best = seconds;
  }
  return std::max(best, 1e-9);
}

uint64_t CappedBytes(uint64_t wanted) {
  const uint64_t available = AvailableMemoryBytes();
  uint64_t bytes = available > 0 ? std::min(wanted, available / 4) : wanted;
  // At least one grain per array of the triad.
  return std::max<uint64_t>(bytes, 3 * kGrain * sizeof(double));
}

}  // namespace

MemoryBandwidth MeasureMemoryBandwidth(ThreadPool& pool, const BandwidthOptions& options) {
  MemoryBandwidth result;
  result.bytes = CappedBytes(options.bytes);
  const int64_t count = static_cast<int64_t>(result.bytes / sizeof(double));
  Buffer buffer = Allocate(count);
  if (!buffer) return result;
  double* data = buffer.get();
  // First touch by the same slices the passes use; it also takes page faults out of the timing.
  pool.ParallelFor(count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) data[i] = static_cast<double>(i & 1023) * 1e-3;
  });

  const StreamLoops loops = WidestLoops();
  std::atomic<double> sink{0.0};  // consumed below, so the sums cannot be optimised away
  const double read_seconds = BestSeconds(options.repetitions, [&] {
    pool.ParallelFor(count, kGrain, [&](int64_t begin, int64_t end) {
      sink.fetch_add(loops.sum(data + begin, end - begin), std::memory_order_relaxed);
    });
  });
  result.read_gbs = static_cast<double>(count) * sizeof(double) / read_seconds / 1e9;
  if (sink.load() < 0.0) result.read_gbs = -result.read_gbs;  // never: the data is non-negative
  if (!options.triad) return result;

  // The triad's three arrays are thirds of the same buffer, each a whole number of grains.
  const int64_t third = count / 3 / kGrain * kGrain;
  double* a = data;
  const double* b = data + third;
  const double* c = data + 2 * third;
  const double triad_seconds = BestSeconds(options.repetitions, [&] {
    pool.ParallelFor(third, kGrain, [&](int64_t begin, int64_t end) {
      loops.triad(a + begin, b + begin, c + begin, 3.0, end - begin);
    });
  });
  result.triad_gbs = 3.0 * static_cast<double>(third) * sizeof(double) / triad_seconds / 1e9;
  return result;
}

}  // namespace mtplx
