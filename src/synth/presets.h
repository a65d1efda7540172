// Synthetic model presets: the real Qwen 3.5 / Qwen3.5-MoE / Qwen3-Next config layouts at tiny
// sizes (spec section 10), plus the exact Qwen3.5-9B shapes for throughput work.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace mtplx::synth {

// The Hugging Face config.json of a preset.
Result<nlohmann::ordered_json> PresetConfig(const std::string& preset);
std::vector<std::string> PresetNames();
// generation_config.json for a config.
nlohmann::ordered_json GenerationConfig(const nlohmann::ordered_json& config);

}  // namespace mtplx::synth
