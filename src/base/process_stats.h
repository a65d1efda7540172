// Process-level measurements: resident memory and page faults; and the system's available memory.
#pragma once

#include <cstdint>

namespace mtplx {

struct ProcessStats {
  uint64_t resident_bytes = 0;  // VmRSS
  uint64_t major_faults = 0;    // faults that had to read from disk
  uint64_t minor_faults = 0;
};

ProcessStats ReadProcessStats();

// MemAvailable from /proc/meminfo: what can be allocated without swapping; 0 when unknown.
uint64_t AvailableMemoryBytes();

}  // namespace mtplx
