// Generation defaults of a model folder: stop ids (generation_config.json eos_token_id, a number
// or a list) and sampler defaults (mtplx_runtime.json sampler, else generation_config.json,
// else temperature 0.6 / top-p 0.95 / top-k 20; the penalties come from mtplx_runtime.json
// alone, else 0) and the draft sampler a pack recommends (mtplx_runtime.json).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/runtime_contract.h"

namespace mtplx::io {

// mtplx_runtime.json recommended_draft_sampler: the values a pack's author found to draft best
// with (each may be absent: the request's own value). Exactness does not depend on them.
struct DraftSamplerDefaults {
  std::optional<double> temperature, top_p;
  std::optional<int> top_k;
};

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
  // mtplx_runtime.json mtp_depth_max, a ceiling on every draft depth a run uses (pinned, tuned or
  // adaptive), within 1..kMaxMtpDepth; mtp_depth is at most this.
  int mtp_depth_max = kMaxMtpDepth;
  DraftSamplerDefaults draft;
};

Result<GenerationDefaults> LoadGenerationDefaults(const std::string& model_dir);

}  // namespace mtplx::io
