// The decoder-layer building blocks of the forward pass. Each works on M rows at consecutive
// positions; `x` is the normalised input [M, hidden] and the result is written to `y`.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "io/model_config.h"
#include "kernels/matmul.h"
#include "model/model.h"
#include "model/weights.h"
#include "state/sequence_state.h"
#include "state/verify_capture.h"

namespace mtplx::model {

struct LayerContext {
  const io::ModelConfig& config;
  ThreadPool* pool;
  const std::vector<float>& rope_inv_freq;
  int64_t first_position;
  int64_t rows;
  kernels::Activations activations;

  // y = x W^T for `m` rows with this model's activation precision.
  void MatMul(const Matrix& w, const float* x, int64_t m, float* y) const {
    kernels::MatMul(w, x, m, y, pool, activations);
  }
  // Several matrices on the same `m` rows of x (activations prepared once, one pool hand-off).
  void MatMulSameInput(std::initializer_list<const Matrix*> ws, const float* x, int64_t m,
                       std::initializer_list<float*> ys) const {
    kernels::MatMulSameInput(std::span<const Matrix* const>(ws.begin(), ws.size()), x, m,
                             std::span<float* const>(ys.begin(), ys.size()), pool, activations);
  }
};

// The first `history_rows` rows only extend the cache with their keys and values; y gets the
// outputs of the other rows, [M - history_rows, hidden].
void GatedAttention(const LayerContext& ctx, const AttentionWeights& w,
                    state::AttentionCache& cache, const float* x, float* y,
                    int64_t history_rows = 0);

// With a capture, runs the recurrent path and records what CommitVerify needs.
void GatedDeltaNet(const LayerContext& ctx, const DeltaNetWeights& w, state::DeltaNetState& st,
                   DeltaNetPath path, state::DeltaCapture* capture, const float* x, float* y);

void DenseMlp(const LayerContext& ctx, const MlpWeights& w, const float* x, float* y);

void SparseMoe(const LayerContext& ctx, const MoeWeights& w, const float* x, float* y);

}  // namespace mtplx::model
