// Generation defaults of a model folder: stop ids (generation_config.json eos_token_id, a number
// or a list) and sampler defaults (mtplx_runtime.json sampler, else generation_config.json,
// else temperature 0.6 / top-p 0.95 / top-k 20; the penalties come from mtplx_runtime.json
// alone, else 0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace mtplx::io {

struct GenerationDefaults {
  std::vector<int32_t> stop_ids;
  double temperature = 0.6;
  double top_p = 0.95;
  int top_k = 20;
  double min_p = 0.0;
  double presence_penalty = 0.0;  // OpenAI semantics, mtplx_runtime.json sampler only
  double frequency_penalty = 0.0;
  std::string source = "built-in";  // which file the sampler values came from
  int mtp_depth = 2;                // mtplx_runtime.json mtp_depth_default / recommended_mtp_depth
};

Result<GenerationDefaults> LoadGenerationDefaults(const std::string& model_dir);

}  // namespace mtplx::io
