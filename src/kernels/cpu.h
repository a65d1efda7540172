// Which hand-written SIMD kernels may run (internal to kernels/). Every dispatch point asks here,
// so that MTPLX_KERNELS=avx2 (or portable) makes one machine run what a CPU without AVX-512 (or
// without AVX2) runs: benchmarks compare the paths, and CI runs the model suites on them.
#pragma once

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

}  // namespace mtplx::kernels
