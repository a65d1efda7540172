// ModelConfig: everything the engine needs from config.json, resolved once. Handles the nested
// multimodal layout (text_config), flat text-only exports and Qwen3-Next, HF v5 rope_parameters
// and legacy rope keys, and MLX quantization tables.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace mtplx::io {

enum class ModelFamily { kQwen35, kQwen35Moe, kQwen3Next };
enum class LayerKind { kLinearAttention, kFullAttention };

const char* ModelFamilyName(ModelFamily family);

struct RopeConfig {
  std::string type = "default";
  double theta = 10000000.0;
  double partial_rotary_factor = 0.25;
  int64_t rotary_dim = 64;  // int(head_dim * partial_rotary_factor)
  std::vector<int64_t> mrope_section;
  bool mrope_interleaved = false;
};

struct QuantSpec {
  int bits = 4;
  int group_size = 64;
  std::string mode = "affine";
};

struct QuantConfig {
  bool present = false;
  QuantSpec global;
  // Per-module overrides keyed by module path (no ".weight"); nullopt means "not quantized".
  std::map<std::string, std::optional<QuantSpec>> overrides;
};

struct ModelConfig {
  std::string architecture;
  std::string model_type;
  ModelFamily family = ModelFamily::kQwen35;

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  std::vector<LayerKind> layer_types;

  // Gated full attention.
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  bool attn_output_gate = true;
  bool attention_bias = false;

  // Gated DeltaNet.
  int64_t linear_key_heads = 0;
  int64_t linear_value_heads = 0;
  int64_t linear_key_dim = 0;
  int64_t linear_value_dim = 0;
  int64_t conv_kernel = 4;

  // Feed-forward.
  int64_t intermediate_size = 0;
  int64_t num_experts = 0;
  int64_t experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;
  bool norm_topk_prob = true;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;

  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;

  int64_t mtp_layers = 0;
  bool mtp_dedicated_embeddings = false;
  std::string mtp_norm_encoding;  // "delta" (store w, apply 1+w), "gain", or "" (detect)

  QuantConfig quant;

  bool IsFullAttention(int64_t layer) const {
    return layer_types[layer] == LayerKind::kFullAttention;
  }
  bool IsMoeLayer(int64_t layer) const;
  int64_t KeyDim() const { return linear_key_heads * linear_key_dim; }
  int64_t ValueDim() const { return linear_value_heads * linear_value_dim; }
  int64_t ConvDim() const { return 2 * KeyDim() + ValueDim(); }
  // Quantization that applies to a module (by its MLX path), or nullopt when unquantized.
  std::optional<QuantSpec> QuantFor(const std::string& module_path) const;
};

// Parses config.json text. `label` names the file in errors.
Result<ModelConfig> ParseModelConfig(std::string_view json_text, const std::string& label);
Result<ModelConfig> LoadModelConfig(const std::string& model_dir);

}  // namespace mtplx::io
