// Function multiversioning for the plain loops of kernels/ (internal to kernels/).
//
// The library is built for baseline x86-64; a function marked MTPLX_TARGET_CLONES is also
// compiled for AVX-512 and AVX2 and the loader picks the best clone for the CPU. The build uses
// -ffp-contract=off, so every clone performs the same operations in the same order (wider vectors
// only run more independent lanes at once) and results are identical whichever clone runs. Loops
// whose order a clone could change (reductions) keep an explicit lane structure.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define MTPLX_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MTPLX_TARGET_CLONES
#endif
