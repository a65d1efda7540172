// libFuzzer target for ParseModelConfig (config.json text).
//
// A config the parser accepts must be usable without further checks by the code that indexes it:
// one layer kind per layer, a rotary dimension inside the head, only supported quantization modes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/model_config.h"

namespace {

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = mtplx::io::ParseModelConfig(text, "config.json");
  if (!parsed.ok()) {
    Require(parsed.status().message().find("config.json") != std::string_view::npos);
    return 0;
  }
  const mtplx::io::ModelConfig& c = *parsed;
  Require(c.num_layers > 0 && static_cast<int64_t>(c.layer_types.size()) == c.num_layers);
  Require(c.rope.rotary_dim >= 0 && c.rope.rotary_dim <= c.head_dim && c.rope.rotary_dim % 2 == 0);
  Require(c.num_heads > 0 && c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0);
  Require(c.linear_key_heads > 0 && c.linear_value_heads % c.linear_key_heads == 0);
  int moe_layers = 0;
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    moe_layers += c.IsMoeLayer(layer) ? 1 : 0;
    if (!c.IsMoeLayer(layer)) Require(c.intermediate_size > 0);
    (void)c.IsFullAttention(layer);
  }
  if (moe_layers > 0)
    Require(c.experts_per_token >= 1 && c.experts_per_token <= c.num_experts);
  if (c.quant.present) {
    Require(c.QuantFor("lm_head").has_value() != (c.quant.overrides.count("lm_head") &&
                                                   !c.quant.overrides.at("lm_head")));
    Require(c.quant.global.mode == "affine");
    for (const auto& [module, spec] : c.quant.overrides) {
      Require(!spec || spec->mode == "affine");
      Require(c.QuantFor(module).has_value() == spec.has_value());
    }
  } else {
    Require(!c.QuantFor("lm_head").has_value());
  }
  return 0;
}
