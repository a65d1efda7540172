// The bandwidth probe gives a usable number at any size and thread count; what the number is
// depends on the machine, so only its sanity is checked.
#include "base/memory_bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/process_stats.h"

namespace mtplx {
namespace {

TEST(MemoryBandwidthTest, SmallPassGivesPositiveFiniteNumbers) {
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    BandwidthOptions options;
    options.bytes = uint64_t{4} << 20;
    options.repetitions = 2;
    const MemoryBandwidth b = MeasureMemoryBandwidth(pool, options);
    EXPECT_TRUE(std::isfinite(b.read_gbs) && b.read_gbs > 0) << b.read_gbs;
    EXPECT_TRUE(std::isfinite(b.triad_gbs) && b.triad_gbs > 0) << b.triad_gbs;
    EXPECT_GT(b.bytes, 0u);
    EXPECT_LE(b.bytes, options.bytes);
  }
}

TEST(MemoryBandwidthTest, TinyRequestIsRaisedToOneGrainPerArray) {
  ThreadPool pool(1);
  BandwidthOptions options;
  options.bytes = 64;
  options.repetitions = 1;
  const MemoryBandwidth b = MeasureMemoryBandwidth(pool, options);
  EXPECT_GT(b.bytes, options.bytes);
  EXPECT_GT(b.triad_gbs, 0.0);
}

TEST(MemoryBandwidthTest, AReadOnlyProbeSkipsTheTriad) {
  ThreadPool pool(2);
  BandwidthOptions options;
  options.bytes = uint64_t{4} << 20;
  options.repetitions = 2;
  options.triad = false;
  const MemoryBandwidth b = MeasureMemoryBandwidth(pool, options);
  EXPECT_TRUE(std::isfinite(b.read_gbs) && b.read_gbs > 0) << b.read_gbs;
  EXPECT_EQ(b.triad_gbs, 0.0);
}

TEST(ProcessStatsTest, AvailableMemoryIsReported) {
  EXPECT_GT(AvailableMemoryBytes(), 0u);  // Linux always has MemAvailable
}

}  // namespace
}  // namespace mtplx
