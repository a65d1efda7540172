// `mtplx convert`: a Hugging Face Qwen 3.5 checkpoint folder (config.json, safetensors with the
// MTP head inline, tokenizer and generation files) becomes an mtplx model pack, the layout the
// reference product ships: MLX-named trunk weights (bf16 as in the source, or MLX affine
// quantized) in model.safetensors or shards with model.safetensors.index.json, the MTP head in
// the mtp.safetensors sidecar, config.json with the quantization table, the tokenizer and
// generation files, and mtplx_runtime.json. The pack is written into a staging folder and moved
// into place only after everything (and the optional verifier) succeeded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "pack/runtime_manifest.h"

namespace mtplx::pack {

struct ConvertOptions {
  std::string src_dir;
  std::string out_dir;
  int bits = 0;  // 0: keep the source dtype; else MLX affine bits 2, 3, 4, 5, 6, 8
  int group_size = 64;
  int mtp_bits = -1;                       // -1: same as bits
  int mtp_group_size = -1;                 // -1: same as group_size
  int mtp_depth = 2;                       // mtp_depth_default, 1..kMaxMtpDepth
  std::optional<SamplerDefaults> sampler;  // else the source's generation defaults
  bool force = false;                      // replace a non-empty out_dir
  bool show_progress = true;
  int threads = 0;                    // 0: one per core
  uint64_t shard_bytes = 4ull << 30;  // largest trunk shard
  // Checks the finished pack in its staging folder before it is moved into place (the CLI loads
  // it with model::Model); its report becomes mtplx_runtime.json verified_on. Null: not checked.
  std::function<Result<std::string>(const std::string& dir)> verify;
};

struct ConvertSummary {
  std::string out_dir;
  std::string arch_id;
  int64_t tensors_in = 0;            // tensors in the source files
  int64_t tensors_out = 0;           // tensors in the pack (a quantized weight counts three)
  int64_t quantized = 0;             // weights stored quantized
  int64_t mtp_tensors = 0;           // tensors in the MTP sidecar
  std::vector<std::string> dropped;  // source tensors left out on purpose (vision, tied head)
  uint64_t bytes_in = 0;             // source safetensors bytes
  uint64_t bytes_out = 0;            // pack safetensors bytes
  uint64_t pack_bytes = 0;           // every file of the pack
  std::vector<std::string> files;    // file names in the pack
  std::string verified_on;
};

Result<ConvertSummary> ConvertCheckpoint(const ConvertOptions& options);

// The settings that reproduce a reference pack, for `convert --preset NAME` (each flag the user
// gives explicitly still wins):
//   optimized-speed  6-bit g64 trunk, bf16 MTP head, depth 2, sampler 0.6 / 0.95 / 20
//   moe-a3b          4-bit g64 trunk (MoE routers and shared-expert gates 8-bit by rule),
//                    4-bit g32 MTP head and experts, depth 2, sampler 0.6 / 0.95 / 20
struct ConvertPreset {
  const char* name;
  int bits, group_size, mtp_bits, mtp_group_size, mtp_depth;
  SamplerDefaults sampler;
};
const std::vector<ConvertPreset>& ConvertPresets();
Result<ConvertPreset> FindConvertPreset(const std::string& name);

// Parses "T,P,K" (e.g. "0.6,0.95,20").
Result<SamplerDefaults> ParseSampler(const std::string& text);

}  // namespace mtplx::pack
