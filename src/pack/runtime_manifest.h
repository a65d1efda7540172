// mtplx_runtime.json: the runtime contract of a model pack (reference product §4.2). The required
// keys (mtplx_version, arch_id, mtp_depth_max, recommended_profile, exactness_baseline,
// verified_on) plus the defaults the engine reads back through io::LoadGenerationDefaults
// (mtp_depth_default, sampler) and the record of how the pack was made.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "io/runtime_contract.h"

namespace mtplx::pack {

// The project version (CMake's PROJECT_VERSION), written into packs.
const char* MtplxVersion();

// The deepest MTP draft the engine runs, written as a new pack's mtp_depth_max.
inline constexpr int kMaxMtpDepth = io::kMaxMtpDepth;

struct SamplerDefaults {
  double temperature = 0.6;
  double top_p = 0.95;
  int top_k = 20;
  double presence_penalty = 0.0;  // written only when set
  double frequency_penalty = 0.0;
};

struct RuntimeInfo {
  std::string arch_id;       // "qwen3_5-mtp", "qwen3_5_moe-mtp", "qwen3-next-mtp", ...
  std::string model_family;  // "qwen3_5", "qwen3_5_moe", "qwen3_next"
  bool has_mtp = false;
  int mtp_tensor_count = 0;   // tensors in the MTP sidecar (a quantized weight counts three)
  int mtp_depth_default = 2;  // 1..kMaxMtpDepth
  SamplerDefaults sampler;
  int bits = 0;  // trunk quantization (0: source dtype)
  int group_size = 64;
  int mtp_bits = 0;
  int mtp_group_size = 64;
  std::string precision_variant = "bf16";  // float dtype of the weights, scales and biases
  // The source folder's own name: a pack records names and hashes, never a path of the machine
  // that made it.
  std::string source_name;
  std::map<std::string, std::string> source_sha256;  // source file name -> digest
  std::string forged_at;                             // UTC ISO-8601
  std::string verified_on;                           // what checked the pack, or why nothing did
};

nlohmann::ordered_json BuildRuntimeManifest(const RuntimeInfo& info);

// "qwen3_5" / "qwen3_5_moe" / "qwen3-next" (+ "-mtp" when the pack drafts with its MTP head).
std::string ArchId(const std::string& model_family, bool has_mtp);

// The current time as "2025-01-31T12:34:56Z".
std::string UtcTimestamp();

}  // namespace mtplx::pack
