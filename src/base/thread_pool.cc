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
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    // A new (closed) generation wakes every worker, which then sees stop_.
    state_.store(kClosed | ((Generation(state_.load()) + 1) << 32), std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::RunChunks() {
  for (int64_t chunk = next_chunk_.fetch_add(1, std::memory_order_relaxed); chunk < job_chunks_;
       chunk = next_chunk_.fetch_add(1, std::memory_order_relaxed)) {
    // Chunk c covers a contiguous slice of grain-aligned blocks.
    const int64_t first = job_blocks_ * chunk / job_chunks_;
    const int64_t last = job_blocks_ * (chunk + 1) / job_chunks_;
    const int64_t begin = first * job_grain_;
    const int64_t end = std::min(job_n_, last * job_grain_);
    if (begin < end) (*job_)(begin, end);
  }
}

bool ThreadPool::TryJoin(uint64_t state) {
  if (state & kClosed) return false;
  return state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel);
}

void ThreadPool::WorkerLoop() {
  // Generation 0 is the pool's initial state, whenever this thread happens to start: a job or a
  // shutdown published before it first runs is then still seen as new.
  uint64_t seen = 0;
  while (true) {
    // Spin briefly (decode issues many short loops back to back), then yield, then sleep.
    // Sequentially consistent with the caller's publish / sleepers_ check (a store-load pair on
    // each side): a worker going to sleep either sees the new job or gets notified.
    auto fresh = [&] { return Generation(state_.load()) != seen; };
    for (int spin = 0; spin < 4000 && !fresh(); ++spin) WaitStep(spin);
    if (!fresh()) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, fresh);
      sleepers_.fetch_sub(1);
    }
    uint64_t state = state_.load(std::memory_order_acquire);
    seen = Generation(state);
    if (stop_) return;
    // Join the job if it is still open; a job that closed meanwhile was finished by others.
    while (Generation(state) == seen && !TryJoin(state)) {
      if (state & kClosed) break;
      state = state_.load(std::memory_order_acquire);
    }
    if (Generation(state) != seen || (state & kClosed)) continue;
    RunChunks();
    state_.fetch_sub(1, std::memory_order_acq_rel);
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
  // The previous job is closed with nobody inside, so its fields are free to overwrite.
  job_ = &fn;
  job_n_ = n;
  job_grain_ = grain;
  job_blocks_ = blocks;
  // A few chunks per thread balance the load when a thread is slow or absent.
  job_chunks_ = std::min<int64_t>(blocks, 4 * static_cast<int64_t>(size()));
  next_chunk_.store(0, std::memory_order_relaxed);
  const uint64_t generation = Generation(state_.load(std::memory_order_relaxed)) + 1;
  state_.store(generation << 32);  // open, nobody inside
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  RunChunks();
  // Close the job, then wait for the workers still inside (each finishing a chunk it claimed).
  uint64_t state = state_.load(std::memory_order_acquire);
  while (!state_.compare_exchange_weak(state, state | kClosed, std::memory_order_acq_rel)) {
  }
  for (int spin = 0; (state_.load(std::memory_order_acquire) & kActiveMask) != 0; ++spin)
    WaitStep(spin);
}

}  // namespace mtplx
