#include "synth/presets.h"

#include "base/strings.h"

namespace mtplx::synth {
namespace {

using Json = nlohmann::ordered_json;

Json LayerTypes(int layers, int interval) {
  Json types = Json::array();
  for (int i = 0; i < layers; ++i)
    types.push_back((i + 1) % interval == 0 ? "full_attention" : "linear_attention");
  return types;
}

Json TinyTextConfig(const char* model_type, bool tied) {
  Json t;
  t["model_type"] = model_type;
  t["vocab_size"] = 1024;
  t["hidden_size"] = 128;
  t["num_hidden_layers"] = 8;
  t["layer_types"] = LayerTypes(8, 4);
  t["full_attention_interval"] = 4;
  t["num_attention_heads"] = 4;
  t["num_key_value_heads"] = 2;
  t["head_dim"] = 32;
  t["attn_output_gate"] = true;
  t["attention_bias"] = false;
  t["attention_dropout"] = 0.0;
  t["linear_num_key_heads"] = 2;
  t["linear_num_value_heads"] = 4;
  t["linear_key_head_dim"] = 32;
  t["linear_value_head_dim"] = 32;
  t["linear_conv_kernel_dim"] = 4;
  t["hidden_act"] = "silu";
  t["rms_norm_eps"] = 1e-6;
  t["max_position_embeddings"] = 4096;
  t["partial_rotary_factor"] = 0.25;
  t["rope_parameters"] = {{"rope_type", "default"},
                          {"rope_theta", 10000000},
                          {"partial_rotary_factor", 0.25},
                          {"mrope_section", {2, 1, 1}},
                          {"mrope_interleaved", true}};
  t["mtp_num_hidden_layers"] = 1;
  t["mtp_use_dedicated_embeddings"] = false;
  t["mamba_ssm_dtype"] = "float32";
  t["output_gate_type"] = "swish";
  t["tie_word_embeddings"] = tied;
  t["dtype"] = "bfloat16";
  t["bos_token_id"] = 960;
  t["eos_token_id"] = 960;
  t["pad_token_id"] = nullptr;
  t["initializer_range"] = 0.02;
  t["use_cache"] = true;
  return t;
}

Json TinyVision(int out_hidden) {
  return {{"model_type", "qwen3_5_vision"},
          {"depth", 2},
          {"hidden_size", 64},
          {"num_heads", 2},
          {"intermediate_size", 128},
          {"hidden_act", "gelu_pytorch_tanh"},
          {"in_channels", 3},
          {"patch_size", 16},
          {"temporal_patch_size", 2},
          {"spatial_merge_size", 2},
          {"out_hidden_size", out_hidden},
          {"num_position_embeddings", 64},
          {"deepstack_visual_indexes", Json::array()}};
}

Json Wrapper(const char* arch, const char* model_type, bool tied, Json text, int image_base) {
  Json c;
  c["architectures"] = {arch};
  c["model_type"] = model_type;
  c["image_token_id"] = image_base + 3;
  c["video_token_id"] = image_base + 4;
  c["vision_start_token_id"] = image_base;
  c["vision_end_token_id"] = image_base + 1;
  c["tie_word_embeddings"] = tied;
  c["text_config"] = std::move(text);
  return c;
}

Json DenseTiny() {
  Json text = TinyTextConfig("qwen3_5_text", true);
  text["intermediate_size"] = 256;
  text["mlp_only_layers"] = Json::array();
  Json c = Wrapper("Qwen3_5ForConditionalGeneration", "qwen3_5", true, text, 969);
  c["vision_config"] = TinyVision(128);
  return c;
}

Json MoeTiny() {
  Json text = TinyTextConfig("qwen3_5_moe_text", false);
  text["num_experts"] = 8;
  text["num_experts_per_tok"] = 2;
  text["moe_intermediate_size"] = 64;
  text["shared_expert_intermediate_size"] = 128;
  text["router_aux_loss_coef"] = 0.001;
  text["output_router_logits"] = false;
  Json c = Wrapper("Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe", false, text, 969);
  c["vision_config"] = TinyVision(128);
  return c;
}

Json NextTiny() {
  Json c = TinyTextConfig("qwen3_next", false);
  c.erase("rope_parameters");
  c.erase("layer_types");
  c.erase("mtp_num_hidden_layers");
  c.erase("mtp_use_dedicated_embeddings");
  c.erase("output_gate_type");
  Json out;
  out["architectures"] = {"Qwen3NextForCausalLM"};
  for (auto it = c.begin(); it != c.end(); ++it) out[it.key()] = it.value();
  out["rope_theta"] = 5000000;
  out["rope_scaling"] = nullptr;
  out["intermediate_size"] = 256;
  out["decoder_sparse_step"] = 1;
  out["mlp_only_layers"] = {1};
  out["norm_topk_prob"] = true;
  out["num_experts"] = 8;
  out["num_experts_per_tok"] = 2;
  out["moe_intermediate_size"] = 64;
  out["shared_expert_intermediate_size"] = 128;
  out["tie_word_embeddings"] = false;
  return out;
}

Json Qwen35_9B() {
  Json t;
  t["model_type"] = "qwen3_5_text";
  t["vocab_size"] = 248320;
  t["hidden_size"] = 4096;
  t["num_hidden_layers"] = 32;
  t["layer_types"] = LayerTypes(32, 4);
  t["full_attention_interval"] = 4;
  t["num_attention_heads"] = 16;
  t["num_key_value_heads"] = 4;
  t["head_dim"] = 256;
  t["attn_output_gate"] = true;
  t["attention_bias"] = false;
  t["attention_dropout"] = 0.0;
  t["linear_num_key_heads"] = 16;
  t["linear_num_value_heads"] = 32;
  t["linear_key_head_dim"] = 128;
  t["linear_value_head_dim"] = 128;
  t["linear_conv_kernel_dim"] = 4;
  t["intermediate_size"] = 12288;
  t["hidden_act"] = "silu";
  t["mlp_only_layers"] = Json::array();
  t["rms_norm_eps"] = 1e-6;
  t["max_position_embeddings"] = 262144;
  t["partial_rotary_factor"] = 0.25;
  t["rope_parameters"] = {{"rope_type", "default"},
                          {"rope_theta", 10000000},
                          {"partial_rotary_factor", 0.25},
                          {"mrope_section", {11, 11, 10}},
                          {"mrope_interleaved", true}};
  t["mtp_num_hidden_layers"] = 1;
  t["mtp_use_dedicated_embeddings"] = false;
  t["mamba_ssm_dtype"] = "float32";
  t["tie_word_embeddings"] = false;
  t["dtype"] = "bfloat16";
  t["bos_token_id"] = 248044;
  t["eos_token_id"] = 248044;
  t["pad_token_id"] = nullptr;
  t["initializer_range"] = 0.02;
  t["use_cache"] = true;
  Json c = Wrapper("Qwen3_5ForConditionalGeneration", "qwen3_5", false, t, 248053);
  c["vision_config"] = {{"model_type", "qwen3_5_vision"},
                        {"depth", 27},
                        {"hidden_size", 1152},
                        {"num_heads", 16},
                        {"intermediate_size", 4304},
                        {"hidden_act", "gelu_pytorch_tanh"},
                        {"in_channels", 3},
                        {"patch_size", 16},
                        {"temporal_patch_size", 2},
                        {"spatial_merge_size", 2},
                        {"out_hidden_size", 4096},
                        {"num_position_embeddings", 2304},
                        {"deepstack_visual_indexes", Json::array()}};
  return c;
}

}  // namespace

std::vector<std::string> PresetNames() {
  return {"dense-tiny", "moe-tiny", "next-tiny", "qwen35-9b"};
}

Result<Json> PresetConfig(const std::string& preset) {
  if (preset == "dense-tiny") return DenseTiny();
  if (preset == "moe-tiny") return MoeTiny();
  if (preset == "next-tiny") return NextTiny();
  if (preset == "qwen35-9b") return Qwen35_9B();
  return InvalidArgument(StrCat("unknown preset '", preset,
                                "' (choose dense-tiny, moe-tiny, next-tiny or qwen35-9b)"));
}

Json GenerationConfig(const Json& config) {
  const Json& text = config.contains("text_config") ? config["text_config"] : config;
  const int eos = text["eos_token_id"].get<int>();  // <|endoftext|>; <|im_end|> follows it
  return {{"bos_token_id", eos}, {"eos_token_id", {eos + 2, eos}},
          {"pad_token_id", eos}, {"do_sample", true},
          {"temperature", 1.0},  {"top_k", 20},
          {"top_p", 0.95}};
}

}  // namespace mtplx::synth
