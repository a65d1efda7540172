// The decoder-layer building blocks of the forward pass. Each works on M rows: one or more
// sequences' rows back to back (a batch), each sequence's at consecutive positions of its own
// state; `x` is the normalised input [M, hidden] and the result is written to `y`. Matrix
// products run over all M rows at once (the kernels give every row the same bits whatever else
// is in the batch); what reads a sequence's state (attention, convolution, recurrence) runs per
// sequence.
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

// One sequence's rows inside a batched layer call.
struct SequenceRows {
  state::SequenceState* state;
  int64_t begin = 0;     // its first row in the batch
  int64_t rows = 0;      // its rows in the batch
  int64_t position = 0;  // the position of its first row
  // Leading rows that only extend an attention cache with their keys and values (the MTP head's
  // history, see ForwardOptions::mtp_output_rows); only they are left out of the layer's output.
  int64_t history_rows = 0;
  state::VerifyCapture* capture = nullptr;  // per-row DeltaNet tapes (verify passes)
  DeltaNetPath delta_path = DeltaNetPath::kAuto;

  int64_t output_rows() const { return rows - history_rows; }
};

struct LayerContext {
  const io::ModelConfig& config;
  ThreadPool* pool;
  const std::vector<float>& rope_inv_freq;
  int64_t layer;  // index into each sequence state
  std::span<const SequenceRows> sequences;
  int64_t rows;  // all rows of the batch
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

// A sequence's first `history_rows` rows only extend its cache with their keys and values; y gets
// the outputs of the other rows of every sequence, in batch order.
void GatedAttention(const LayerContext& ctx, const AttentionWeights& w, const float* x, float* y);

// With a sequence's capture, runs its recurrent path and records what CommitVerify needs.
void GatedDeltaNet(const LayerContext& ctx, const DeltaNetWeights& w, const float* x, float* y);

void DenseMlp(const LayerContext& ctx, const MlpWeights& w, const float* x, float* y);

void SparseMoe(const LayerContext& ctx, const MoeWeights& w, const float* x, float* y);

}  // namespace mtplx::model
