// Binds checkpoint tensors to ModelWeights: name normalisation across Hugging Face and MLX
// layouts, origin detection (norm convention, conv layout), quantized-triplet detection with the
// config's per-module overrides, expert layouts (fused, stacked switch_mlp, per-expert),
// Qwen3-Next grouped projections, tied heads, and the MTP head inline or in a sidecar.
#pragma once

#include "base/status.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "model/weights.h"

namespace mtplx::model {

// Strips the wrapper prefixes so every layout maps to one scheme: "embed_tokens.weight",
// "layers.N....", "norm.weight", "lm_head.weight", "mtp....". Returns "" for tensors the text
// model does not use (vision tower).
std::string NormalizeTensorName(const std::string& name);

// May permute rows of grouped Qwen3-Next projections in place inside the checkpoint image.
Result<ModelWeights> BindWeights(const io::ModelConfig& config, io::Checkpoint& checkpoint);

}  // namespace mtplx::model
