// Process-level measurements: resident memory and page faults; and the system's available memory.
#pragma once

#include <cstdint>
#include <string>

namespace mtplx {

struct ProcessStats {
  uint64_t resident_bytes = 0;  // VmRSS
  uint64_t major_faults = 0;    // faults that had to read from disk
  uint64_t minor_faults = 0;
};

ProcessStats ReadProcessStats();

// MemAvailable from /proc/meminfo: what can be allocated without swapping; 0 when unknown.
uint64_t AvailableMemoryBytes();

// The memory limit of this process's cgroup (v2 memory.max, else v1 memory.limit_in_bytes);
// 0 when there is none or it cannot be read.
uint64_t CgroupMemoryLimitBytes();

// The CPU's model name from /proc/cpuinfo ("AMD EPYC 9R14 96-Core Processor"), or the machine
// type when there is none (ARM), or "unknown".
std::string CpuModelName();

}  // namespace mtplx
