// STREAM-style memory bandwidth: how fast this machine streams arrays far larger than its caches
// at a given thread count. Decoding reads every weight once per token, so this is the ceiling
// decode throughput is judged against (`mtplx bench`), and what thread-count tuning will reuse.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace mtplx {

struct BandwidthOptions {
  // Bytes streamed per pass: well above the last-level cache so the answer is DRAM's, not the
  // cache's. Capped to a quarter of the memory the system reports available.
  uint64_t bytes = uint64_t{512} << 20;
  int repetitions = 5;  // the best pass is reported: noise only ever makes a pass slower
  bool triad = true;    // false: the read rate only (triad_gbs stays 0)
};

struct MemoryBandwidth {
  double read_gbs = 0.0;   // 1e9 bytes/s summing one array of `bytes`
  double triad_gbs = 0.0;  // a = b + s * c over three arrays of bytes / 3, counting 3 x 8 bytes
                           // per element as STREAM does (write-allocate traffic not counted)
  uint64_t bytes = 0;      // bytes actually streamed per pass after the cap
};

// Runs the read and triad kernels on `pool` (each thread on its own contiguous slice, which it
// also first-touched, so pages sit next to the thread that reads them).
MemoryBandwidth MeasureMemoryBandwidth(ThreadPool& pool, const BandwidthOptions& options = {});

}  // namespace mtplx
