// The runtime contract of a model pack (mtplx_runtime.json), validated key by key when a model
// loads: the required keys (mtplx_version, arch_id, mtp_depth_max, recommended_profile,
// exactness_baseline, verified_on) must be there with the right types, the keys the engine uses
// (mtp_depth_default, sampler, recommended_draft_sampler, recommended_draft_lm_head, mtp_contract,
// served_model_id, min_engine_version, precision_variant, capabilities, mtp_tensor_count) must
// make sense when present, and a pack that needs a newer engine is refused. Every refusal names
// the file and the key. Packs without the file (plain Hugging Face checkpoints) have no contract.
// Whether the contract agrees with the tensors is checked by the model loader (model.cc).
#pragma once

#include <optional>
#include <string>

#include "base/status.h"

namespace mtplx::io {

// The deepest MTP draft the engine runs (a cycle verifies depth + 1 rows), and the mtp_depth_max
// that new packs are written with. A pack's mtp_depth_max (read as 1..16) caps every run of that
// pack below this (io/generation_config.h); above it, this is the cap.
inline constexpr int kMaxMtpDepth = 5;

struct RuntimeContract {
  std::string path;  // the file, for messages
  std::string mtplx_version, arch_id, recommended_profile;
  int mtp_depth_max = 0;
  std::optional<int> mtp_depth_default;
  std::optional<std::string> served_model_id, min_engine_version, precision_variant;
  std::optional<int> mtp_quant_bits;    // mtp_contract.mtp_quant_bits (0: not quantized)
  std::optional<int> mtp_tensor_count;  // tensors named mtp.* in the pack
  std::optional<bool> has_mtp;          // capabilities.mtp
};

// The contract of the pack in `dir`, or nullopt when it has no mtplx_runtime.json.
Result<std::optional<RuntimeContract>> LoadRuntimeContract(const std::string& dir,
                                                           const std::string& engine_version);
Result<RuntimeContract> ParseRuntimeContract(const std::string& json_text, const std::string& path,
                                             const std::string& engine_version);

// What the contract says of the MTP head against what the checkpoint holds: MTP claimed
// (capabilities.mtp) but absent, or mtp_tensor_count not the number of tensors named mtp.*.
Status CheckMtpTensors(const RuntimeContract& c, bool has_mtp, int64_t mtp_tensors);

// <0, 0, >0 as dotted version a is below, equal to or above b ("0.10.1" > "0.9"); non-numeric
// parts (a "-dev" suffix) are ignored.
int CompareVersions(const std::string& a, const std::string& b);

// This build's version (the project version CMake sets).
const char* EngineVersion();

}  // namespace mtplx::io
