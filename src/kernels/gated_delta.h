// Gated DeltaNet kernels: the causal depthwise convolution on the q/k/v stream and the delta-rule
// recurrence, in two forms that compute the same function:
//   * GdnRecurrent: one token at a time (decode, verify rows; the reference definition);
//   * GdnChunked: chunks of 64 tokens with a triangular solve per chunk (prefill).
// State per value head h is S_h in R^{Dk x Dv} (f32), stored [Hv, Dk, Dv].
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"

namespace mtplx::kernels {

struct GdnDims {
  int64_t key_heads;    // Hk
  int64_t value_heads;  // Hv (a multiple of Hk; value head h reads key head h / (Hv / Hk))
  int64_t key_dim;      // Dk
  int64_t value_dim;    // Dv
};

// Inputs for T tokens:
//   q, k : [T, Hk, Dk]  q already L2-normalised and scaled by Dk^-1/2, k L2-normalised
//   v    : [T, Hv, Dv]
//   g    : [T, Hv]      log decay (<= 0)
//   beta : [T, Hv]
// state: [Hv, Dk, Dv] updated in place; out: [T, Hv, Dv].
struct GdnInputs {
  const float* q;
  const float* k;
  const float* v;
  const float* g;
  const float* beta;
};

// delta_out (optional): [T, Hv, Dv] per-row updates beta * (v - S^T k), for GdnReplay.
// initial (optional): the state to start from, read by the first token, which writes its result
// into `state` (whose old contents are ignored); a verify pass keeps its starting state this way
// without copying it. The arithmetic is the same either way.
void GdnRecurrent(const GdnDims& dims, int64_t tokens, const GdnInputs& in, float* state,
                  float* out, ThreadPool* pool, float* delta_out = nullptr,
                  const float* initial = nullptr);

// Re-applies recorded rows to a state: S <- exp(g) S; S += k delta^T. Performs the same
// operations as GdnRecurrent, so the result is bit-identical to the original pass.
// keys: [T, Hk, Dk]; log_decay: [T, Hv]; deltas: [T, Hv, Dv]. initial (optional, T >= 1): the
// state to start from, read by the first row, which writes into `state` (its old contents are
// ignored), as in GdnRecurrent: a rollback replays from the verify pass's starting state without
// copying it back first.
void GdnReplay(const GdnDims& dims, int64_t tokens, const float* keys, const float* log_decay,
               const float* deltas, float* state, ThreadPool* pool, const float* initial = nullptr);

void GdnChunked(const GdnDims& dims, int64_t tokens, const GdnInputs& in, float* state, float* out,
                ThreadPool* pool, int64_t chunk = 64);

// Causal depthwise conv (kernel width K, no bias) followed by SiLU, over T rows of C channels.
// taps: the weights tap-major, [K, C] (tap K-1 multiplies the current token), so the loops run
// along channels; ConvTaps makes them once from the checkpoint's [C, K]. window: the previous K-1
// input rows [K-1, C], oldest first, updated in place to the last K-1 inputs.
void CausalConvSilu(const float* x, int64_t tokens, int64_t channels, const float* taps,
                    int64_t kernel, float* window, float* out);
std::vector<float> ConvTaps(const float* weight, int64_t channels, int64_t kernel);

}  // namespace mtplx::kernels
