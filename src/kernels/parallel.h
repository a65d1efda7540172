// When a kernel loop is worth handing to the thread pool (internal to kernels/).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace mtplx::kernels {

// Below this many multiply-adds (or comparable element operations; about 1 us on one core) a
// loop runs on the calling thread: handing it to the pool and joining costs more than the second
// core saves. Measured on the bundled model (`mtplx run --threads 2`, plain decoding, interleaved
// runs): 5,152 tok/s with a threshold of 2^20, 5,606 with 2^16, which parallelizes its 256-wide
// projections too; every 9B-shape matmul is far above either.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 16;

inline bool WorthParallel(const ThreadPool* pool, int64_t work) {
  return pool != nullptr && work >= kMinParallelWork;
}

}  // namespace mtplx::kernels
