#include "io/generation_config.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/strings.h"

namespace mtplx::io {
namespace {

using nlohmann::json;

Result<json> ReadJson(const std::string& path) {
  MTPLX_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded() || !value.is_object())
    return InvalidArgument(StrCat(path, ": not a valid JSON object"));
  return value;
}

void ReadSampler(const json& obj, GenerationDefaults& d) {
  if (obj.contains("temperature") && obj["temperature"].is_number())
    d.temperature = obj["temperature"].get<double>();
  if (obj.contains("top_p") && obj["top_p"].is_number()) d.top_p = obj["top_p"].get<double>();
  if (obj.contains("top_k") && obj["top_k"].is_number_integer()) d.top_k = obj["top_k"].get<int>();
  if (obj.contains("min_p") && obj["min_p"].is_number()) d.min_p = obj["min_p"].get<double>();
}

// OpenAI-style penalties, clamped to their range: Hugging Face's generation_config.json has none
// (its repetition_penalty is a different, multiplicative rule).
void ReadPenalties(const json& obj, GenerationDefaults& d) {
  for (auto [key, field] : {std::pair{"presence_penalty", &d.presence_penalty},
                            std::pair{"frequency_penalty", &d.frequency_penalty}})
    if (obj.contains(key) && obj[key].is_number())
      *field = std::clamp(obj[key].get<double>(), -2.0, 2.0);
}

void ReadDraftSampler(const json& obj, DraftSamplerDefaults& d) {
  if (obj.contains("temperature") && obj["temperature"].is_number() &&
      obj["temperature"].get<double>() >= 0)
    d.temperature = obj["temperature"].get<double>();
  if (obj.contains("top_p") && obj["top_p"].is_number() && obj["top_p"].get<double>() > 0 &&
      obj["top_p"].get<double>() <= 1)
    d.top_p = obj["top_p"].get<double>();
  if (obj.contains("top_k") && obj["top_k"].is_number_integer() && obj["top_k"].get<int>() >= 0)
    d.top_k = obj["top_k"].get<int>();
}

void ReadStopIds(const json& value, std::vector<int32_t>& out) {
  if (value.is_number_integer()) out.push_back(value.get<int32_t>());
  if (value.is_array())
    for (const auto& v : value)
      if (v.is_number_integer()) out.push_back(v.get<int32_t>());
}

}  // namespace

Result<GenerationDefaults> LoadGenerationDefaults(const std::string& model_dir) {
  GenerationDefaults d;
  const std::string gen_path = JoinPath(model_dir, "generation_config.json");
  if (FileExists(gen_path)) {
    MTPLX_ASSIGN_OR_RETURN(json gen, ReadJson(gen_path));
    if (gen.contains("eos_token_id")) ReadStopIds(gen["eos_token_id"], d.stop_ids);
    ReadSampler(gen, d);
    d.source = "generation_config.json";
  }
  const std::string runtime_path = JoinPath(model_dir, "mtplx_runtime.json");
  if (FileExists(runtime_path)) {
    MTPLX_ASSIGN_OR_RETURN(json runtime, ReadJson(runtime_path));
    if (runtime.contains("mtp_depth_max") && runtime["mtp_depth_max"].is_number_integer())
      d.mtp_depth_max = std::clamp(runtime["mtp_depth_max"].get<int>(), 1, kMaxMtpDepth);
    d.mtp_depth = std::min(d.mtp_depth, d.mtp_depth_max);
    for (const char* key : {"recommended_mtp_depth", "mtp_depth_default"})
      if (runtime.contains(key) && runtime[key].is_number_integer())
        d.mtp_depth = std::clamp(runtime[key].get<int>(), 1, d.mtp_depth_max);
    if (runtime.contains("sampler") && runtime["sampler"].is_object()) {
      ReadSampler(runtime["sampler"], d);
      ReadPenalties(runtime["sampler"], d);
      d.source = "mtplx_runtime.json";
    }
    if (runtime.contains("recommended_draft_sampler") &&
        runtime["recommended_draft_sampler"].is_object())
      ReadDraftSampler(runtime["recommended_draft_sampler"], d.draft);
  }
  if (d.stop_ids.empty()) {
    const std::string config_path = JoinPath(model_dir, "config.json");
    if (FileExists(config_path)) {
      MTPLX_ASSIGN_OR_RETURN(json config, ReadJson(config_path));
      const json& text = config.contains("text_config") ? config["text_config"] : config;
      if (text.contains("eos_token_id")) ReadStopIds(text["eos_token_id"], d.stop_ids);
    }
  }
  return d;
}

}  // namespace mtplx::io
