#include "pack/runtime_manifest.h"

#include <algorithm>
#include <ctime>

#ifndef MTPLX_VERSION
#define MTPLX_VERSION "0.0.0"
#endif

namespace mtplx::pack {
namespace {

using Json = nlohmann::ordered_json;

std::string QuantLabel(int bits, int group_size, const std::string& precision) {
  if (bits == 0) return precision;
  return "affine " + std::to_string(bits) + "-bit g" + std::to_string(group_size);
}

// Free-form in the reference product: what a user may expect against the source checkpoint.
Json ExactnessBaseline(const RuntimeInfo& info) {
  const bool lossless = info.bits == 0 && (!info.has_mtp || info.mtp_bits == 0);
  Json baseline = {{"reference", "source checkpoint (" + info.source_name + ")"},
                   {"trunk", QuantLabel(info.bits, info.group_size, info.precision_variant)}};
  if (info.has_mtp)
    baseline["mtp"] = QuantLabel(info.mtp_bits, info.mtp_group_size, info.precision_variant);
  baseline["max_abs_logit_diff"] = lossless ? Json(0.0) : Json(nullptr);
  baseline["note"] = lossless ? "weights byte-identical to the source; logits bit-identical"
                              : "affine quantization is lossy; decoding stays exact against "
                                "this pack's own plain decode";
  return baseline;
}

Json MtpContract(const RuntimeInfo& info) {
  return {{"base_hidden_variant", "post_norm"}, {"hidden_variant", "post_norm"},
          {"concat_order", "embedding_hidden"}, {"mtp_position_mode", "cache"},
          {"mtp_quant_bits", info.mtp_bits},    {"mtp_quant_group_size", info.mtp_group_size},
          {"mtp_quant_mode", "affine"},         {"mtp_prequantized", info.mtp_bits > 0}};
}

}  // namespace

const char* MtplxVersion() { return MTPLX_VERSION; }

std::string ArchId(const std::string& model_family, bool has_mtp) {
  const std::string base = model_family == "qwen3_next" ? "qwen3-next" : model_family;
  return has_mtp ? base + "-mtp" : base;
}

std::string UtcTimestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

nlohmann::ordered_json BuildRuntimeManifest(const RuntimeInfo& info) {
  Json m;
  m["mtplx_version"] = MtplxVersion();
  m["arch_id"] = info.arch_id;
  m["model_family"] = info.model_family;
  m["mtp_depth_max"] = kMaxMtpDepth;
  m["mtp_depth_default"] = std::clamp(info.mtp_depth_default, 1, kMaxMtpDepth);
  m["recommended_profile"] = "sustained";
  m["exactness_baseline"] = ExactnessBaseline(info);
  m["verified_on"] = info.verified_on;
  m["sampler"] = {{"temperature", info.sampler.temperature},
                  {"top_p", info.sampler.top_p},
                  {"top_k", info.sampler.top_k}};
  if (info.sampler.presence_penalty != 0.0)
    m["sampler"]["presence_penalty"] = info.sampler.presence_penalty;
  if (info.sampler.frequency_penalty != 0.0)
    m["sampler"]["frequency_penalty"] = info.sampler.frequency_penalty;
  m["mtp_contract"] = MtpContract(info);
  m["capabilities"] = {{"vision", false}, {"mtp", info.has_mtp}};
  m["mtp_tensor_count"] = info.mtp_tensor_count;
  if (info.has_mtp) m["mtp_sidecar"] = "mtp.safetensors (HF names, zero-centred norms)";
  m["precision_variant"] = info.precision_variant;
  Json hashes = Json::object();
  for (const auto& [file, digest] : info.source_sha256) hashes[file] = digest;
  m["forge_provenance"] = {{"source_name", info.source_name},
                           {"source_format", "hf"},
                           {"source_sha256", hashes},
                           {"forge_recipe",
                            {{"tool", "mtplx convert"},
                             {"bits", info.bits},
                             {"group_size", info.group_size},
                             {"mtp_bits", info.mtp_bits},
                             {"mtp_group_size", info.mtp_group_size}}},
                           {"forged_at", info.forged_at},
                           {"mtplx_version", MtplxVersion()}};
  return m;
}

}  // namespace mtplx::pack
