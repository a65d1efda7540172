// Which hand-written SIMD kernels may run (internal to kernels/). Every dispatch point asks here,
// so that MTPLX_KERNELS=avx2 (or portable) makes one machine run what a CPU without AVX-512 (or
// without AVX2) runs: benchmarks compare the paths, and CI runs the model suites on them.
#pragma once

#include <string_view>

namespace mtplx::kernels {

// kAvxVnni: the AVX2 kernels with vpdpbusd on 256-bit registers (what an Intel client core from
// Alder Lake on runs); kAvx2: plain AVX2.
enum class KernelCap { kPortable, kAvx2, kAvxVnni, kAvx512, kAmx };

// The cap MTPLX_KERNELS names (amx, avx512, avxvnni, avx2 or portable; unset or unknown: no cap).
// It only lowers what the CPU supports, never raises it. Read once per process.
KernelCap KernelCapFromEnvironment();

// AVX512F present and not capped below AVX-512: the attention, Gated DeltaNet and sampler scan
// kernels (which need nothing beyond AVX512F).
bool Avx512FKernelsEnabled();

// Whether a CPU with this cpuid vendor string, family and model (the display values, extended
// fields folded in) executes each 256-bit instruction as two 128-bit halves: AMD Zen and Zen+
// (family 17h, models below 30h) and Hygon Dhyana (family 18h, the same core). Its AVX2 kernels
// then do half the arithmetic a cycle that their register width suggests, so a verify row costs
// a large share of a step even while the weights stream (x8 model: about half a step per row).
bool SplitsWideVectors(std::string_view vendor, unsigned family, unsigned model);

// Family and model as the vendors number them, decoded from cpuid leaf 1's eax: the extended
// fields count only where the base family is 0Fh (and, for the model, also 06h).
struct CpuFamilyModel {
  unsigned family = 0;
  unsigned model = 0;
};
CpuFamilyModel DecodeCpuSignature(unsigned leaf1_eax);
// The same for this CPU (false off x86).
bool SplitsWideVectors();

}  // namespace mtplx::kernels
