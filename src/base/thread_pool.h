// A fixed pool of worker threads for data-parallel loops. The calling thread takes part, so a
// pool of N threads runs N-1 workers. A loop is split into contiguous, deterministic chunks
// (grain-aligned, fixed by n, grain and the pool size); threads claim chunks from a shared counter.
// The result never depends on timing, only on the chunk each index falls in, and kernels keep each
// output element's arithmetic inside one chunk, so results do not depend on the thread count
// either.
//
// Claiming instead of assigning matters on a busy machine: a worker the scheduler has not run yet
// simply claims nothing, and the caller does its share instead of waiting a time slice for it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mtplx {

class ThreadPool {
 public:
  // threads <= 0 means one per hardware core.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint sub-ranges covering [0, n), splitting on multiples of grain.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  static int HardwareThreads();

 private:
  void WorkerLoop();
  // Claims and runs chunks of the current job until none are left.
  void RunChunks();
  // Joins the job of `state` (one more active worker) unless it is closed or has changed.
  bool TryJoin(uint64_t state);

  // state_: bit 63 closed (no new workers may join), bits 32..62 job generation, bits 0..31 the
  // number of workers inside the job. The caller returns only once the job is closed and no
  // worker is inside it, so the job fields below are never read after the loop returns.
  static constexpr uint64_t kClosed = uint64_t{1} << 63;
  static constexpr uint64_t kActiveMask = 0xFFFFFFFFu;
  static uint64_t Generation(uint64_t state) { return (state & ~kClosed) >> 32; }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> state_{kClosed};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  // Current job.
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;
  int64_t job_chunks_ = 0;
  int64_t job_blocks_ = 0;
  std::atomic<int64_t> next_chunk_{0};
};

}  // namespace mtplx
