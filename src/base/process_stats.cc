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

namespace {

// The first number in a file ("max" and unreadable files give 0).
uint64_t ReadLimit(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text[0] < '0' || text[0] > '9') return 0;
  return std::stoull(text);
}

// The cgroup (v2: "0::/path") this process is in, or "" when unknown.
std::string CgroupPath() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

}  // namespace

uint64_t CgroupMemoryLimitBytes() {
  const std::string path = CgroupPath();
  if (!path.empty())
    if (const uint64_t v2 = ReadLimit("/sys/fs/cgroup" + path + "/memory.max")) return v2;
  if (const uint64_t v2_root = ReadLimit("/sys/fs/cgroup/memory.max")) return v2_root;
  const uint64_t v1 = ReadLimit("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  // v1 reports "no limit" as a huge page-aligned number.
  return v1 >= (uint64_t{1} << 60) ? 0 : v1;
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
