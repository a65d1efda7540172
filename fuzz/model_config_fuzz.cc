// libFuzzer target for ParseModelConfig (config.json text).
//
// Each input is parsed twice over: as a whole config.json, and, when it is a JSON object, as an
// RFC 7386 merge patch onto known-good configs (a nested Qwen3.5 text_config, a nested Qwen3.5-MoE
// wrapper and a flat Qwen3-Next config), so that single odd values reach validation instead of
// stopping at a missing key. A config the parser accepts must be usable without further checks
// by the code that indexes it: one layer kind per layer, a rotary dimension inside the head,
// dense layers with an MLP size, only supported quantization modes.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "io/model_config.h"

namespace {

using nlohmann::json;

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

json TextConfig() {
  json types = json::array();
  for (int i = 0; i < 8; ++i) types.push_back((i + 1) % 4 ? "linear_attention" : "full_attention");
  return {{"model_type", "qwen3_5_text"},
          {"vocab_size", 1024},
          {"hidden_size", 128},
          {"num_hidden_layers", 8},
          {"layer_types", types},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 32},
          {"linear_num_key_heads", 2},
          {"linear_num_value_heads", 4},
          {"linear_key_head_dim", 32},
          {"linear_value_head_dim", 32},
          {"linear_conv_kernel_dim", 4},
          {"intermediate_size", 256},
          {"rms_norm_eps", 1e-6},
          {"rope_parameters",
           {{"rope_type", "default"},
            {"rope_theta", 10000000},
            {"partial_rotary_factor", 0.25},
            {"mrope_section", {2, 1, 1}},
            {"mrope_interleaved", true}}},
          {"mtp_num_hidden_layers", 1}};
}

// (base config, whether the patch applies to its text_config)
struct Base {
  json config;
  bool patch_text;
};

const std::vector<Base>& Bases() {
  static const auto* bases = [] {
    auto* out = new std::vector<Base>();
    json dense = {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
                  {"model_type", "qwen3_5"},
                  {"text_config", TextConfig()}};
    out->push_back({dense, true});
    json moe = dense;
    moe["architectures"] = {"Qwen3_5MoeForConditionalGeneration"};
    moe["text_config"].update(
        {{"num_experts", 8}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 64}});
    moe["quantization"] = {{"bits", 4}, {"group_size", 64}, {"lm_head", false}};
    out->push_back({moe, false});
    json next = TextConfig();
    next.erase("layer_types");
    next.erase("rope_parameters");
    next.update({{"architectures", {"Qwen3NextForCausalLM"}},
                 {"model_type", "qwen3_next"},
                 {"num_experts", 8},
                 {"num_experts_per_tok", 2},
                 {"moe_intermediate_size", 64},
                 {"decoder_sparse_step", 1},
                 {"mlp_only_layers", {1}},
                 {"rope_theta", 5000000}});
    out->push_back({next, false});
    return out;
  }();
  return *bases;
}

void Check(std::string_view text) {
  const auto parsed = mtplx::io::ParseModelConfig(text, "config.json");
  if (!parsed.ok()) {
    Require(parsed.status().message().find("config.json") != std::string::npos);
    return;
  }
  const mtplx::io::ModelConfig& c = *parsed;
  Require(c.num_layers > 0 && static_cast<int64_t>(c.layer_types.size()) == c.num_layers);
  Require(c.rope.rotary_dim >= 0 && c.rope.rotary_dim <= c.head_dim && c.rope.rotary_dim % 2 == 0);
  Require(c.num_heads > 0 && c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0);
  Require(c.linear_key_heads > 0 && c.linear_value_heads % c.linear_key_heads == 0);
  bool any_moe = false;
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    any_moe |= c.IsMoeLayer(layer);
    if (!c.IsMoeLayer(layer)) Require(c.intermediate_size > 0);
    (void)c.IsFullAttention(layer);
  }
  if (any_moe) Require(c.experts_per_token >= 1 && c.experts_per_token <= c.num_experts);
  if (c.quant.present) {
    Require(c.quant.global.mode == "affine");
    for (const auto& [module, spec] : c.quant.overrides) {
      Require(!spec || spec->mode == "affine");
      Require(c.QuantFor(module).has_value() == spec.has_value());
    }
  } else {
    Require(!c.QuantFor("lm_head").has_value());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Check(text);
  const json patch = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (patch.is_discarded() || !patch.is_object()) return 0;
  for (const Base& base : Bases()) {
    json merged = base.config;
    (base.patch_text ? merged["text_config"] : merged).merge_patch(patch);
    Check(merged.dump());
  }
  return 0;
}
