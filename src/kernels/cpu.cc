#include "kernels/cpu.h"

#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace mtplx::kernels {

KernelCap KernelCapFromEnvironment() {
  static const KernelCap cap = [] {
    const char* value = std::getenv("MTPLX_KERNELS");
    const std::string name = value ? value : "";
    if (name == "avx512") return KernelCap::kAvx512;
    if (name == "avxvnni") return KernelCap::kAvxVnni;
    if (name == "avx2") return KernelCap::kAvx2;
    if (name == "portable") return KernelCap::kPortable;
    return KernelCap::kAmx;
  }();
  return cap;
}

bool Avx512FKernelsEnabled() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool enabled = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0 &&
           KernelCapFromEnvironment() >= KernelCap::kAvx512;
  }();
  return enabled;
#else
  return false;
#endif
}

bool SplitsWideVectors(std::string_view vendor, unsigned family, unsigned model) {
  if (vendor == "HygonGenuine") return family == 0x18;
  return vendor == "AuthenticAMD" && family == 0x17 && model < 0x30;
}

CpuFamilyModel DecodeCpuSignature(unsigned leaf1_eax) {
  const unsigned base_family = (leaf1_eax >> 8) & 0xf;
  const unsigned base_model = (leaf1_eax >> 4) & 0xf;
  CpuFamilyModel decoded;
  decoded.family = base_family == 0xf ? base_family + ((leaf1_eax >> 20) & 0xff) : base_family;
  decoded.model = base_family == 0xf || base_family == 0x6
                      ? base_model | (((leaf1_eax >> 16) & 0xf) << 4)
                      : base_model;
  return decoded;
}

bool SplitsWideVectors() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool splits = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
    char vendor[13] = {};
    std::memcpy(vendor, &ebx, 4);
    std::memcpy(vendor + 4, &edx, 4);
    std::memcpy(vendor + 8, &ecx, 4);
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const CpuFamilyModel signature = DecodeCpuSignature(eax);
    return SplitsWideVectors(vendor, signature.family, signature.model);
  }();
  return splits;
#else
  return false;
#endif
}

}  // namespace mtplx::kernels
