#include "kernels/hardware.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "kernels/cpu.h"
#include "kernels/matmul.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace mtplx::kernels {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "48K", "2048K", "32M" (sysfs cache sizes) in bytes.
uint64_t ParseSize(const std::string& text) {
  if (text.empty()) return 0;
  uint64_t value = 0;
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9')
    value = value * 10 + (text[i++] - '0');
  if (i < text.size() && (text[i] == 'K' || text[i] == 'k')) value <<= 10;
  if (i < text.size() && (text[i] == 'M' || text[i] == 'm')) value <<= 20;
  return value;
}

void ReadCaches(HardwareInfo& h) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    const std::string level = ReadFirstLine(dir + "/level");
    if (level.empty()) break;
    const std::string type = ReadFirstLine(dir + "/type");
    const uint64_t size = ParseSize(ReadFirstLine(dir + "/size"));
    if (level == "1" && type == "Data") h.l1d_bytes = size;
    if (level == "2") h.l2_bytes = size;
    if (level == "3") h.l3_bytes = size;
  }
}

void ReadMemory(HardwareInfo& h) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") h.memory_total_bytes = kib << 10;
    if (key == "MemAvailable:") h.memory_available_bytes = kib << 10;
  }
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    for (const char* key : {"model name", "Model", "CPU part"}) {
      if (line.rfind(key, 0) != 0) continue;
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(value.begin());
        if (!value.empty()) return value;
      }
    }
  }
  return "unknown";
}

void ReadFeatures(HardwareInfo& h) {
#if defined(__x86_64__) && defined(__GNUC__)
  h.arch = "x86_64";
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false, f16c = false, avx_vnni = false;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) f16c = (ecx >> 29) & 1;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) avx_vnni = (eax >> 4) & 1;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    amx_bf16 = (edx >> 22) & 1;
    amx_tile = (edx >> 24) & 1;
    amx_int8 = (edx >> 25) & 1;
  }
  h.features = {
      {"sse4.2", __builtin_cpu_supports("sse4.2") != 0},
      {"avx2", __builtin_cpu_supports("avx2") != 0},
      {"fma", __builtin_cpu_supports("fma") != 0},
      {"f16c", f16c},
      {"avx-vnni", avx_vnni},
      {"avx512f", __builtin_cpu_supports("avx512f") != 0},
      {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
      {"avx512vl", __builtin_cpu_supports("avx512vl") != 0},
      {"avx512vnni", __builtin_cpu_supports("avx512vnni") != 0},
      {"avx512bf16", __builtin_cpu_supports("avx512bf16") != 0},
      {"avx512vbmi", __builtin_cpu_supports("avx512vbmi") != 0},
      {"amx-tile", amx_tile},
      {"amx-int8", amx_int8},
      {"amx-bf16", amx_bf16},
  };
  // Capped below AVX-512 (MTPLX_KERNELS), this machine stands for one without bf16 instructions.
  h.fast_bf16 = (h.Has("avx512bf16") || h.Has("amx-bf16")) &&
                KernelCapFromEnvironment() >= KernelCap::kAvx512;
#elif defined(__aarch64__)
  h.arch = "aarch64";
  const unsigned long hw = getauxval(AT_HWCAP);
  const unsigned long hw2 = getauxval(AT_HWCAP2);
  h.features = {
      {"neon", (hw & (1ul << 1)) != 0},      // HWCAP_ASIMD
      {"dotprod", (hw & (1ul << 20)) != 0},  // HWCAP_ASIMDDP
      {"fp16", (hw & (1ul << 9)) != 0},      // HWCAP_FPHP
      {"i8mm", (hw2 & (1ul << 13)) != 0},    // HWCAP2_I8MM
      {"bf16", (hw2 & (1ul << 14)) != 0},    // HWCAP2_BF16
  };
  h.fast_bf16 = h.Has("bf16");
#else
  h.arch = "other";
#endif
}

const char* CapName(KernelCap cap) {
  switch (cap) {
    case KernelCap::kPortable:
      return "portable";
    case KernelCap::kAvx2:
      return "avx2";
    case KernelCap::kAvxVnni:
      return "avxvnni";
    case KernelCap::kAvx512:
      return "avx512";
    case KernelCap::kAmx:
      return "amx";
  }
  return "amx";
}

}  // namespace

bool HardwareInfo::Has(const std::string& feature) const {
  for (const auto& [name, present] : features)
    if (name == feature) return present;
  return false;
}

uint64_t LastLevelCacheBytes() {
  HardwareInfo h;
  ReadCaches(h);
  return h.l3_bytes > 0 ? h.l3_bytes : h.l2_bytes;
}

HardwareInfo DetectHardware() {
  HardwareInfo h;
  ReadFeatures(h);
  h.cpu_model = CpuModel();
  h.logical_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  CPU_ZERO(&set);
  h.usable_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : h.logical_cpus;
  ReadCaches(h);
  ReadMemory(h);
  const char* env = std::getenv("MTPLX_KERNELS");
  h.kernel_cap = env && *env ? std::string(CapName(KernelCapFromEnvironment())) : "none";
  h.matmul_kernel = QuantKernelName();
  h.avx512_kernels = Avx512FKernelsEnabled();
  h.splits_wide_vectors = SplitsWideVectors();
  return h;
}

}  // namespace mtplx::kernels
