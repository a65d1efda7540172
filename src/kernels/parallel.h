// When a kernel loop is worth handing to the thread pool (internal to kernels/).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace mtplx::kernels {

// Below this many multiply-adds (or comparable element operations; about 10 us on one core) a
// loop runs on the calling thread: handing it to the pool and joining costs more than the second
// core saves. Measured on the bundled model (`mtplx bench --threads 2`): 2,823 tok/s with a
// threshold of 2^16, 5,273 with 2^20 (one thread: 4,844); every 9B-shape matmul is far above it.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 20;

inline bool WorthParallel(const ThreadPool* pool, int64_t work) {
  return pool != nullptr && work >= kMinParallelWork;
}

}  // namespace mtplx::kernels
