#include "kernels/cpu.h"

#include <cstdlib>
#include <string>

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

}  // namespace mtplx::kernels
