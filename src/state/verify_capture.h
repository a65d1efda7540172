// What a multi-row verify forward records so that keeping only its first `keep` rows is exact.
//
// Attention caches are simply truncated. A Gated DeltaNet layer cannot be: its recurrent matrix
// folds every row in. So the verify pass keeps, per DeltaNet layer, the state it started from and
// a tape of each row's decay g, normalised key k and update delta = beta * (v - S^T k). Replaying
// S <- exp(g) * S; S += k delta^T for the kept rows performs exactly the operations the forward
// performed, so the committed state is bit-identical to having decoded those rows one by one.
// The conv window is rebuilt from the starting window and the kept rows' pre-conv inputs.
// A capture may be reused across verify passes: its buffers are recycled, not reallocated.
#pragma once

#include <cstdint>
#include <vector>

namespace mtplx::state {

struct DeltaCapture {
  std::vector<float> initial_conv;       // [conv_history, conv_channels]
  std::vector<float> initial_recurrent;  // [value_heads, key_dim, value_dim]
  std::vector<float> conv_inputs;        // [rows, conv_channels], pre-conv q|k|v
  std::vector<float> keys;               // [rows, key_heads * key_dim], L2-normalised
  std::vector<float> log_decay;          // [rows, value_heads]
  std::vector<float> deltas;             // [rows, value_heads * value_dim]
};

struct VerifyCapture {
  int64_t start_position = 0;
  int64_t rows = 0;
  std::vector<DeltaCapture> layers;  // indexed by layer; attention layers leave theirs empty
};

}  // namespace mtplx::state
