// The packed attention kernel for x86 CPUs with AVX2 and FMA but without the AVX-512 one
// (internal to kernels/): Haswell to Alder Lake clients, AMD Zen 1 to Zen 3.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/attention.h"

namespace mtplx::kernels {

// AVX2 and FMA present and MTPLX_KERNELS not capped below avx2 (false off x86).
bool Avx2AttentionEnabled();

// CausalAttention with exact products, head_dim a multiple of 8; needs Avx2AttentionEnabled().
void CausalAttentionAvx2(const AttentionDims& dims, const float* q, int64_t rows,
                         int64_t first_position, const KvPlanes& kv, float scale, float* out,
                         ThreadPool* pool);

}  // namespace mtplx::kernels
