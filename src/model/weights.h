// The model's weights, bound to the resident checkpoint image. Matrices point into the loaded
// safetensors data (no copies); only small vectors (norm gains, conv kernels, decay parameters)
// are converted to f32, with the norm convention of the checkpoint's origin resolved here so the
// forward pass always multiplies by the final gain.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/matrix.h"

namespace mtplx::model {

struct AttentionWeights {
  Matrix q_proj;  // [heads * head_dim * (gated ? 2 : 1), hidden], per head [query | gate]
  Matrix k_proj;  // [kv_heads * head_dim, hidden]
  Matrix v_proj;  // [kv_heads * head_dim, hidden]
  Matrix o_proj;  // [hidden, heads * head_dim]
  std::vector<float> q_norm;  // [head_dim] final gain
  std::vector<float> k_norm;  // [head_dim] final gain
};

struct DeltaNetWeights {
  Matrix in_qkv;                     // [conv_dim, hidden]: q | k | v, head-major
  Matrix in_z;                       // [value_dim, hidden]
  Matrix in_b;                       // [value_heads, hidden]
  Matrix in_a;                       // [value_heads, hidden]
  Matrix out_proj;                   // [hidden, value_dim]
  std::vector<float> conv_taps;      // [kernel, conv_dim]: the conv1d weights, tap-major
  std::vector<float> neg_exp_a_log;  // [value_heads]  -exp(A_log)
  std::vector<float> dt_bias;        // [value_heads]
  std::vector<float> norm;           // [value_dim_per_head] gated-norm weight (never shifted)
};

struct MlpWeights {
  Matrix gate;  // [inter, hidden]
  Matrix up;    // [inter, hidden]
  Matrix down;  // [hidden, inter]
};

struct MoeWeights {
  Matrix router;  // [experts, hidden]
  std::vector<MlpWeights> experts;
  bool has_shared = false;
  MlpWeights shared;
  Matrix shared_gate;  // [1, hidden]
};

struct LayerWeights {
  bool is_attention = false;
  bool is_moe = false;
  std::vector<float> input_norm;  // [hidden] final gain
  std::vector<float> post_norm;   // [hidden] final gain
  AttentionWeights attention;
  DeltaNetWeights delta;
  MlpWeights mlp;
  MoeWeights moe;
};

struct MtpWeights {
  bool present = false;
  Matrix fc;  // [hidden, 2 * hidden], columns [embedding | hidden]
  std::vector<float> pre_fc_norm_embedding;
  std::vector<float> pre_fc_norm_hidden;
  std::vector<float> norm;
  LayerWeights layer;  // one full-attention decoder layer
};

struct ModelWeights {
  Matrix embed;    // [vocab, hidden]
  Matrix lm_head;  // [vocab, hidden]; the embedding when tied
  std::vector<float> final_norm;
  std::vector<LayerWeights> layers;
  MtpWeights mtp;
  bool mlx_origin = false;  // norms stored as (1 + w), conv as [C, K, 1]
};

}  // namespace mtplx::model
