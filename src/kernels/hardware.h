// What this machine offers the kernels and which of them run, for `mtplx hardware` and for the
// notes other commands print: CPU model, SIMD features (x86: AVX2, FMA, F16C, AVX-512 F/BW/VL,
// VNNI, BF16, VBMI, AMX; ARM: NEON, dot product, BF16), cores this process may use, cache sizes
// and memory.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mtplx::kernels {

struct HardwareInfo {
  std::string arch;                                    // "x86_64", "aarch64", ...
  std::string cpu_model;                               // as /proc/cpuinfo names it
  int logical_cpus = 0;                                // online
  int usable_cpus = 0;                                 // in this process's affinity mask
  std::vector<std::pair<std::string, bool>> features;  // name, present (in a fixed order)
  uint64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // per cpu0's view; 0 when unknown
  uint64_t memory_total_bytes = 0, memory_available_bytes = 0;
  std::string kernel_cap;       // MTPLX_KERNELS, "none" when unset
  std::string matmul_kernel;    // the quantized matmul path: amx-int8, avx512-vnni, avx2, ...
  bool avx512_kernels = false;  // attention, Gated DeltaNet and sampler scans on AVX-512
  // 256-bit instructions run as two 128-bit halves (AMD Zen and Zen+, Hygon Dhyana).
  bool splits_wide_vectors = false;
  // Whether bf16 arithmetic is native here (else an FP16 sibling pack may suit better).
  bool fast_bf16 = false;

  bool Has(const std::string& feature) const;
};

HardwareInfo DetectHardware();
// The largest cache cpu0 sees (L3, else L2) from sysfs; 0 when unknown.
uint64_t LastLevelCacheBytes();

}  // namespace mtplx::kernels
