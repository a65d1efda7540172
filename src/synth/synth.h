// `mtplx synth`: writes a complete synthetic checkpoint (config, generation config, tokenizer,
// chat template, safetensors with the MTP head) in the exact Hugging Face or MLX layout,
// deterministic from a seed. Every weight value depends only on (seed, logical tensor, row), so
// the HF and MLX copies of a preset hold the same model.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace mtplx::synth {

// Bumped whenever what WriteSyntheticCheckpoint writes changes, so caches of generated
// checkpoints (the tests' build/test-models) are regenerated rather than reused stale.
inline constexpr int kOutputVersion = 2;

struct SynthOptions {
  std::string preset = "dense-tiny";
  std::string out_dir;
  std::string format = "hf";  // "hf" or "mlx"
  int bits = 0;               // 0: unquantized bf16 (MLX format only supports quantized or 0)
  int group_size = 64;
  uint64_t seed = 0;
  bool progress = true;
  int threads = 0;
  // Keep the MTP experts of a MoE preset fused like the trunk (Qwen3.6) instead of per expert.
  bool fused_mtp_experts = false;
  // Shard size limit in bytes (0: one file).
  uint64_t shard_bytes = 4ull << 30;
};

Status WriteSyntheticCheckpoint(const SynthOptions& options);

}  // namespace mtplx::synth
