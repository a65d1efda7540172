#include "base/process_stats.h"

#include <sys/resource.h>

#include <fstream>
#include <string>

namespace mtplx {

ProcessStats ReadProcessStats() {
  ProcessStats stats;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    stats.major_faults = static_cast<uint64_t>(usage.ru_majflt);
    stats.minor_faults = static_cast<uint64_t>(usage.ru_minflt);
  }
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      uint64_t kib = 0;
      status >> kib;
      stats.resident_bytes = kib * 1024;
      break;
    }
    std::string rest;
    std::getline(status, rest);
  }
  return stats;
}

uint64_t AvailableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  while (meminfo >> key) {
    if (key == "MemAvailable:") {
      uint64_t kib = 0;
      meminfo >> kib;
      return kib * 1024;
    }
    std::string rest;
    std::getline(meminfo, rest);
  }
  return 0;
}

}  // namespace mtplx

namespace mtplx {

std::string CpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    if (key != "model name" && key != "Model" && key != "Hardware") continue;
    std::string value = line.substr(colon + 1);
    const size_t start = value.find_first_not_of(" \t");
    if (start != std::string::npos) return value.substr(start);
  }
  return "unknown";
}

}  // namespace mtplx
