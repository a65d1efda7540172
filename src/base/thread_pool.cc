#include "base/thread_pool.h"

#include <algorithm>

namespace mtplx {
namespace {

// One step of waiting: pause for the first spins, then give the core away. On a busy machine a
// spinning thread would steal time from the thread it waits for.
inline void WaitStep(int spin) {
  if (spin < 2000) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  } else {
    std::this_thread::yield();
  }
}

}  // namespace

int ThreadPool::HardwareThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = HardwareThreads();
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::RunTask(int index) {
  // Part `index` of job_parts_ covers a contiguous slice of grain-aligned blocks.
  const int64_t blocks = (job_n_ + job_grain_ - 1) / job_grain_;
  const int64_t first = blocks * index / job_parts_;
  const int64_t last = blocks * (index + 1) / job_parts_;
  const int64_t begin = first * job_grain_;
  const int64_t end = std::min(job_n_, last * job_grain_);
  if (begin < end) (*job_)(begin, end);
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  while (true) {
    // Spin briefly (decode issues many short loops back to back), then yield, then sleep.
    for (int spin = 0; spin < 4000 && generation_.load(std::memory_order_acquire) == seen; ++spin)
      WaitStep(spin);
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    if (index < job_parts_) RunTask(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t blocks = (n + grain - 1) / grain;
  if (workers_.empty() || blocks == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_grain_ = grain;
    job_parts_ = static_cast<int>(std::min<int64_t>(blocks, size()));
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  RunTask(0);
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) WaitStep(spin);
}

}  // namespace mtplx
