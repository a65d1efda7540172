#include "base/memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

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

  std::atomic<double> sink{0.0};  // consumed below, so the sums cannot be optimised away
  const double read_seconds = BestSeconds(options.repetitions, [&] {
    pool.ParallelFor(count, kGrain, [&](int64_t begin, int64_t end) {
      sink.fetch_add(SumSlice(data + begin, end - begin), std::memory_order_relaxed);
    });
  });
  result.read_gbs = static_cast<double>(count) * sizeof(double) / read_seconds / 1e9;

  // The triad's three arrays are thirds of the same buffer, each a whole number of grains.
  const int64_t third = count / 3 / kGrain * kGrain;
  double* a = data;
  const double* b = data + third;
  const double* c = data + 2 * third;
  const double triad_seconds = BestSeconds(options.repetitions, [&] {
    pool.ParallelFor(third, kGrain, [&](int64_t begin, int64_t end) {
      TriadSlice(a + begin, b + begin, c + begin, 3.0, end - begin);
    });
  });
  result.triad_gbs = 3.0 * static_cast<double>(third) * sizeof(double) / triad_seconds / 1e9;
  if (sink.load() < 0.0) result.read_gbs = -result.read_gbs;  // never: the data is non-negative
  return result;
}

}  // namespace mtplx
