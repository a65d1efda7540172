// ThreadPool: every index runs exactly once, chunk boundaries are grain-aligned and fixed, and the
// claim protocol survives many back-to-back loops, oversubscription and idle sleeps.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace mtplx {
namespace {

TEST(ThreadPoolTest, EveryIndexRunsExactlyOnceOnGrainAlignedRanges) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 15, 16, 17, 100, 1000, 4097})
      for (int64_t grain : {1, 3, 16, 64}) {
        std::vector<std::atomic<int>> hits(n);
        std::atomic<bool> misaligned{false};
        pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
          if (begin % grain != 0 || (end % grain != 0 && end != n)) misaligned = true;
          for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
        });
        EXPECT_FALSE(misaligned) << threads << " threads, n " << n << ", grain " << grain;
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
      }
  }
}

// The ranges a loop is cut into depend on n, grain and the pool size only.
TEST(ThreadPoolTest, RangesDoNotDependOnTiming) {
  ThreadPool pool(4);
  auto ranges = [&] {
    std::vector<std::atomic<int64_t>> end_of(1000);
    pool.ParallelFor(1000, 7, [&](int64_t begin, int64_t end) { end_of[begin] = end; });
    std::vector<int64_t> out;
    for (auto& e : end_of) out.push_back(e.load());
    return out;
  };
  const auto first = ranges();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(ranges(), first);
}

TEST(ThreadPoolTest, ManyShortLoopsBackToBackWithMoreThreadsThanCores) {
  ThreadPool pool(ThreadPool::HardwareThreads() * 3);
  int64_t total = 0;
  for (int loop = 0; loop < 20000; ++loop) {
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(64, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
    });
    total += sum.load();
  }
  EXPECT_EQ(total, int64_t{20000} * (63 * 64 / 2));
}

TEST(ThreadPoolTest, WorkersWakeFromSleepAndShutDownCleanly) {
  ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // workers go to sleep
    std::atomic<int> count{0};
    pool.ParallelFor(300, 1, [&](int64_t begin, int64_t end) {
      count.fetch_add(static_cast<int>(end - begin));
    });
    EXPECT_EQ(count.load(), 300);
  }
}

}  // namespace
}  // namespace mtplx
