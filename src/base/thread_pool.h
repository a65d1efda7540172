// A fixed pool of worker threads for data-parallel loops. The calling thread takes part, so a
// pool of N threads runs N-1 workers. Work is split into contiguous, deterministic ranges: the
// result of a parallel loop never depends on timing, only on the range each index falls in, and
// kernels keep each output element's arithmetic inside one task, so results do not depend on the
// thread count either.
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
  void WorkerLoop(int index);
  void RunTask(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
  // Current job.
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;
  int job_parts_ = 0;
};

}  // namespace mtplx
