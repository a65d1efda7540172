// config.json and generation defaults: every layout the parser must understand, and errors that
// name the file and the offending key.
#include "io/model_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file.h"
#include "io/generation_config.h"
#include "support/test_support.h"

namespace mtplx::io {
namespace {

using Json = nlohmann::json;

constexpr char kLabel[] = "models/tiny/config.json";

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

Json LayerTypes(int layers, int interval) {
  Json types = Json::array();
  for (int i = 0; i < layers; ++i)
    types.push_back((i + 1) % interval == 0 ? "full_attention" : "linear_attention");
  return types;
}

// The text part of a tiny Qwen3.5 config (8 layers, head_dim 32, rotary_dim 8).
Json TextConfig() {
  Json t;
  t["model_type"] = "qwen3_5_text";
  t["vocab_size"] = 1024;
  t["hidden_size"] = 128;
  t["num_hidden_layers"] = 8;
  t["layer_types"] = LayerTypes(8, 4);
  t["num_attention_heads"] = 4;
  t["num_key_value_heads"] = 2;
  t["head_dim"] = 32;
  t["linear_num_key_heads"] = 2;
  t["linear_num_value_heads"] = 4;
  t["linear_key_head_dim"] = 32;
  t["linear_value_head_dim"] = 16;
  t["linear_conv_kernel_dim"] = 4;
  t["intermediate_size"] = 256;
  t["rms_norm_eps"] = 1e-6;
  t["max_position_embeddings"] = 4096;
  t["rope_parameters"] = {{"rope_type", "default"},
                          {"rope_theta", 10000000},
                          {"partial_rotary_factor", 0.25},
                          {"mrope_section", {2, 1, 1}},
                          {"mrope_interleaved", true}};
  t["mtp_num_hidden_layers"] = 1;
  t["eos_token_id"] = 960;
  return t;
}

// Qwen3_5ForConditionalGeneration: a wrapper with text_config.
Json Nested() {
  Json c;
  c["architectures"] = {"Qwen3_5ForConditionalGeneration"};
  c["model_type"] = "qwen3_5";
  c["text_config"] = TextConfig();
  c["vision_config"] = {{"depth", 2}};
  return c;
}

// Qwen3_5ForCausalLM exported flat (no text_config).
Json Flat() {
  Json c = TextConfig();
  c["architectures"] = {"Qwen3_5ForCausalLM"};
  c["model_type"] = "qwen3_5_text";
  return c;
}

Json MoeNested() {
  Json c = Nested();
  c["architectures"] = {"Qwen3_5MoeForConditionalGeneration"};
  c["model_type"] = "qwen3_5_moe";
  Json& t = c["text_config"];
  t["model_type"] = "qwen3_5_moe_text";
  t.erase("intermediate_size");
  t["num_experts"] = 8;
  t["num_experts_per_tok"] = 2;
  t["moe_intermediate_size"] = 64;
  t["shared_expert_intermediate_size"] = 128;
  return c;
}

// Qwen3-Next: flat, legacy rope keys, full_attention_interval, sparse-step MoE.
Json Next() {
  Json c = TextConfig();
  c.erase("layer_types");
  c.erase("rope_parameters");
  c.erase("mtp_num_hidden_layers");
  c["architectures"] = {"Qwen3NextForCausalLM"};
  c["model_type"] = "qwen3_next";
  c["full_attention_interval"] = 4;
  c["rope_theta"] = 5000000;
  c["partial_rotary_factor"] = 0.25;
  c["rope_scaling"] = nullptr;
  c["decoder_sparse_step"] = 1;
  c["mlp_only_layers"] = {1};
  c["norm_topk_prob"] = true;
  c["num_experts"] = 8;
  c["num_experts_per_tok"] = 2;
  c["moe_intermediate_size"] = 64;
  c["shared_expert_intermediate_size"] = 128;
  return c;
}

Result<ModelConfig> Parse(const Json& config) { return ParseModelConfig(config.dump(), kLabel); }

ModelConfig ParseOk(const Json& config) {
  auto parsed = Parse(config);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << config.dump(1);
  return parsed.ok() ? *parsed : ModelConfig{};
}

void ExpectError(const Json& config, StatusCode code, const std::vector<std::string>& needles) {
  auto parsed = Parse(config);
  ASSERT_FALSE(parsed.ok()) << config.dump(1);
  EXPECT_EQ(parsed.status().code(), code) << parsed.status().ToString();
  EXPECT_TRUE(Contains(parsed.status().message(), kLabel)) << parsed.status().message();
  for (const auto& n : needles)
    EXPECT_TRUE(Contains(parsed.status().message(), n)) << parsed.status().message();
}

std::vector<LayerKind> Kinds(const std::string& pattern) {
  std::vector<LayerKind> out;
  for (char ch : pattern)
    out.push_back(ch == 'F' ? LayerKind::kFullAttention : LayerKind::kLinearAttention);
  return out;
}

// --- Layouts ------------------------------------------------------------------------------------

TEST(ModelConfigTest, ParsesNestedConfig) {
  const ModelConfig c = ParseOk(Nested());
  EXPECT_EQ(c.architecture, "Qwen3_5ForConditionalGeneration");
  EXPECT_EQ(c.model_type, "qwen3_5");
  EXPECT_EQ(c.family, ModelFamily::kQwen35);
  EXPECT_STREQ(ModelFamilyName(c.family), "qwen3_5");
  EXPECT_EQ(c.vocab_size, 1024);
  EXPECT_EQ(c.hidden_size, 128);
  EXPECT_EQ(c.num_layers, 8);
  EXPECT_EQ(c.layer_types, Kinds("LLLFLLLF"));
  EXPECT_TRUE(c.IsFullAttention(3));
  EXPECT_FALSE(c.IsFullAttention(0));
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_TRUE(c.attn_output_gate);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.linear_key_heads, 2);
  EXPECT_EQ(c.linear_value_heads, 4);
  EXPECT_EQ(c.linear_key_dim, 32);
  EXPECT_EQ(c.linear_value_dim, 16);
  EXPECT_EQ(c.KeyDim(), 64);
  EXPECT_EQ(c.ValueDim(), 64);
  EXPECT_EQ(c.ConvDim(), 192);
  EXPECT_EQ(c.conv_kernel, 4);
  EXPECT_EQ(c.intermediate_size, 256);
  EXPECT_EQ(c.num_experts, 0);
  EXPECT_FALSE(c.IsMoeLayer(0));
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.max_position_embeddings, 4096);
  EXPECT_EQ(c.mtp_layers, 1);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.quant.present);
  EXPECT_FALSE(c.QuantFor("model.layers.0.mlp.up_proj").has_value());
}

TEST(ModelConfigTest, FlatAndNestedConfigsAgree) {
  const ModelConfig nested = ParseOk(Nested());
  const ModelConfig flat = ParseOk(Flat());
  EXPECT_EQ(flat.family, ModelFamily::kQwen35);
  EXPECT_EQ(flat.architecture, "Qwen3_5ForCausalLM");
  EXPECT_EQ(flat.model_type, "qwen3_5_text");
  EXPECT_EQ(flat.vocab_size, nested.vocab_size);
  EXPECT_EQ(flat.num_layers, nested.num_layers);
  EXPECT_EQ(flat.layer_types, nested.layer_types);
  EXPECT_EQ(flat.head_dim, nested.head_dim);
  EXPECT_EQ(flat.rope.rotary_dim, nested.rope.rotary_dim);
  EXPECT_EQ(flat.rope.mrope_section, nested.rope.mrope_section);
}

TEST(ModelConfigTest, NestedKeysAreReadFromTextConfigOnly) {
  // A text key at the wrapper level does not satisfy the text_config.
  Json c = Nested();
  c["vocab_size"] = 5;
  EXPECT_EQ(ParseOk(c).vocab_size, 1024);
  c["text_config"].erase("vocab_size");
  ExpectError(c, StatusCode::kInvalidArgument, {"(text_config)", "'vocab_size'"});
}

TEST(ModelConfigTest, FamilyFromModelTypeWhenArchitecturesIsAbsent) {
  Json c = Flat();
  c.erase("architectures");
  for (const char* type : {"qwen3_5", "qwen3_5_text"}) {
    c["model_type"] = type;
    EXPECT_EQ(ParseOk(c).family, ModelFamily::kQwen35);
  }
  Json m = MoeNested();
  m.erase("architectures");
  EXPECT_EQ(ParseOk(m).family, ModelFamily::kQwen35Moe);
  m["model_type"] = "qwen3_5_moe_text";
  EXPECT_EQ(ParseOk(m).family, ModelFamily::kQwen35Moe);
  Json n = Next();
  n["architectures"] = Json::array();
  EXPECT_EQ(ParseOk(n).family, ModelFamily::kQwen3Next);
}

TEST(ModelConfigTest, HeadDimAndKvHeadsDefaults) {
  Json c = Flat();
  c.erase("head_dim");
  c.erase("num_key_value_heads");
  c.erase("rope_parameters");  // mrope_section was sized for head_dim 32
  const ModelConfig parsed = ParseOk(c);
  EXPECT_EQ(parsed.head_dim, 32);  // hidden_size / num_attention_heads
  EXPECT_EQ(parsed.num_kv_heads, 4);
  EXPECT_EQ(parsed.rope.rotary_dim, 8);
}

// --- tie_word_embeddings ------------------------------------------------------------------------

TEST(ModelConfigTest, TieWordEmbeddingsTextConfigWins) {
  Json c = Nested();
  EXPECT_FALSE(ParseOk(c).tie_word_embeddings);
  c["tie_word_embeddings"] = true;  // top level only
  EXPECT_TRUE(ParseOk(c).tie_word_embeddings);
  c["text_config"]["tie_word_embeddings"] = false;  // text_config overrides the top level
  EXPECT_FALSE(ParseOk(c).tie_word_embeddings);
  c["tie_word_embeddings"] = false;
  c["text_config"]["tie_word_embeddings"] = true;
  EXPECT_TRUE(ParseOk(c).tie_word_embeddings);
  c.erase("tie_word_embeddings");
  EXPECT_TRUE(ParseOk(c).tie_word_embeddings);
  c["text_config"]["tie_word_embeddings"] = nullptr;  // null counts as absent
  c["tie_word_embeddings"] = true;
  EXPECT_TRUE(ParseOk(c).tie_word_embeddings);
  Json flat = Flat();
  flat["tie_word_embeddings"] = true;
  EXPECT_TRUE(ParseOk(flat).tie_word_embeddings);
}

TEST(ModelConfigTest, TieWordEmbeddingsMustBeBool) {
  Json c = Nested();
  c["text_config"]["tie_word_embeddings"] = 1;
  ExpectError(c, StatusCode::kInvalidArgument, {"'tie_word_embeddings'", "true or false"});
  Json top = Nested();
  top["tie_word_embeddings"] = "yes";
  ExpectError(top, StatusCode::kInvalidArgument, {"'tie_word_embeddings'", "true or false"});
}

// --- Layer types --------------------------------------------------------------------------------

TEST(ModelConfigTest, LayerTypesListWinsOverInterval) {
  Json c = Flat();
  c["layer_types"] = {"full_attention",   "linear_attention", "attention",
                      "linear_attention", "linear_attention", "linear_attention",
                      "linear_attention", "full_attention"};
  c["full_attention_interval"] = 2;  // ignored when the list is present
  EXPECT_EQ(ParseOk(c).layer_types, Kinds("FLFLLLLF"));
}

TEST(ModelConfigTest, FullAttentionIntervalFallback) {
  Json c = Flat();
  c.erase("layer_types");
  EXPECT_EQ(ParseOk(c).layer_types, Kinds("LLLFLLLF"));  // default interval 4
  c["full_attention_interval"] = 2;
  EXPECT_EQ(ParseOk(c).layer_types, Kinds("LFLFLFLF"));
  c["full_attention_interval"] = 1;
  EXPECT_EQ(ParseOk(c).layer_types, Kinds("FFFFFFFF"));
  c["full_attention_interval"] = 3;
  EXPECT_EQ(ParseOk(c).layer_types, Kinds("LLFLLFLL"));
  c["layer_types"] = nullptr;  // null list: fall back too
  EXPECT_EQ(ParseOk(c).layer_types, Kinds("LLFLLFLL"));
  for (int bad : {0, -4}) {
    c["full_attention_interval"] = bad;
    ExpectError(c, StatusCode::kInvalidArgument, {"full_attention_interval must be positive"});
  }
  c["full_attention_interval"] = 2.5;
  ExpectError(c, StatusCode::kInvalidArgument, {"'full_attention_interval'", "integer"});
}

TEST(ModelConfigTest, RejectsLayerTypesOfTheWrongLength) {
  Json c = Nested();
  c["text_config"]["layer_types"] = LayerTypes(6, 3);
  ExpectError(c, StatusCode::kInvalidArgument,
              {"layer_types has 6 entries", "num_hidden_layers is 8", "(text_config)"});
  c["text_config"]["layer_types"] = LayerTypes(9, 3);
  ExpectError(c, StatusCode::kInvalidArgument, {"layer_types has 9 entries"});
  c["text_config"]["layer_types"] = Json::array();
  ExpectError(c, StatusCode::kInvalidArgument, {"layer_types has 0 entries"});
}

TEST(ModelConfigTest, RejectsUnknownLayerTypes) {
  Json c = Flat();
  c["layer_types"][2] = "sliding_attention";
  ExpectError(c, StatusCode::kInvalidArgument, {"unknown layer type", "sliding_attention"});
  c["layer_types"][2] = 7;
  ExpectError(c, StatusCode::kInvalidArgument, {"unknown layer type", "7"});
}

TEST(ModelConfigTest, RejectsAbsurdLayerCounts) {
  // Without a layer_types list the layer kinds are generated from num_hidden_layers; a huge
  // count must be refused, not allocated.
  Json c = Next();
  c["num_hidden_layers"] = 4000000000000000000LL;
  ExpectError(c, StatusCode::kInvalidArgument, {"num_hidden_layers"});
  c["num_hidden_layers"] = 0;
  ExpectError(c, StatusCode::kInvalidArgument, {"num_hidden_layers must be positive"});
  c["num_hidden_layers"] = -3;
  ExpectError(c, StatusCode::kInvalidArgument, {"num_hidden_layers"});
}

TEST(ModelConfigTest, RejectsImplausibleSizesBeforeUsingThem) {
  // A crafted config must be refused with the key named, before its sizes are multiplied into
  // tensor shapes or memory estimates.
  for (const char* key : {"vocab_size", "hidden_size", "num_attention_heads", "head_dim",
                          "linear_num_value_heads", "linear_key_head_dim", "intermediate_size",
                          "mtp_num_hidden_layers", "max_position_embeddings"}) {
    Json c = Flat();
    c[key] = 4000000000000000000LL;
    ExpectError(c, StatusCode::kInvalidArgument, {key, "implausibly large"});
  }
  Json c = Flat();
  c["max_position_embeddings"] = 0;
  ExpectError(c, StatusCode::kInvalidArgument, {"max_position_embeddings must be positive"});
  c = Flat();
  c["mtp_num_hidden_layers"] = -1;
  ExpectError(c, StatusCode::kInvalidArgument, {"mtp_num_hidden_layers must not be negative"});
  c = Flat();
  c["rms_norm_eps"] = -1e-6;
  ExpectError(c, StatusCode::kInvalidArgument, {"rms_norm_eps"});
  // The largest real shapes stay well inside the limits.
  c = Flat();
  c["vocab_size"] = 248320;
  c["max_position_embeddings"] = 1048576;
  ParseOk(c);
}

// --- RoPE ---------------------------------------------------------------------------------------

TEST(ModelConfigTest, RopeFromRopeParameters) {
  const ModelConfig c = ParseOk(Nested());
  EXPECT_EQ(c.rope.type, "default");
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e7);
  EXPECT_DOUBLE_EQ(c.rope.partial_rotary_factor, 0.25);
  EXPECT_EQ(c.rope.rotary_dim, 8);
  EXPECT_EQ(c.rope.mrope_section, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_TRUE(c.rope.mrope_interleaved);

  Json j = Nested();
  Json& p = j["text_config"]["rope_parameters"];
  p["rope_type"] = "yarn";
  p["rope_theta"] = 250000.5;
  p["partial_rotary_factor"] = 0.5;
  p["mrope_section"] = {4, 2, 2};
  p.erase("mrope_interleaved");
  j["text_config"]["rope_theta"] = 1.0;  // rope_parameters wins over the legacy key
  const ModelConfig d = ParseOk(j);
  EXPECT_EQ(d.rope.type, "yarn");
  EXPECT_DOUBLE_EQ(d.rope.theta, 250000.5);
  EXPECT_DOUBLE_EQ(d.rope.partial_rotary_factor, 0.5);
  EXPECT_EQ(d.rope.rotary_dim, 16);
  EXPECT_FALSE(d.rope.mrope_interleaved);
}

TEST(ModelConfigTest, RopeParametersFallBackToLegacyKeys) {
  Json c = Flat();
  c["rope_parameters"] = {{"rope_type", "default"}};
  c["rope_theta"] = 123456;
  c["partial_rotary_factor"] = 0.5;
  const ModelConfig parsed = ParseOk(c);
  EXPECT_DOUBLE_EQ(parsed.rope.theta, 123456);
  EXPECT_DOUBLE_EQ(parsed.rope.partial_rotary_factor, 0.5);
  EXPECT_EQ(parsed.rope.rotary_dim, 16);
  EXPECT_TRUE(parsed.rope.mrope_section.empty());
}

TEST(ModelConfigTest, LegacyRopeKeys) {
  Json c = Flat();
  c.erase("rope_parameters");
  ModelConfig parsed = ParseOk(c);
  EXPECT_EQ(parsed.rope.type, "default");
  EXPECT_DOUBLE_EQ(parsed.rope.theta, 1e7);  // Qwen3.5 default
  EXPECT_DOUBLE_EQ(parsed.rope.partial_rotary_factor, 0.25);
  EXPECT_TRUE(parsed.rope.mrope_section.empty());
  EXPECT_FALSE(parsed.rope.mrope_interleaved);

  c["rope_theta"] = 640000;
  c["partial_rotary_factor"] = 0.5;
  c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  parsed = ParseOk(c);
  EXPECT_EQ(parsed.rope.type, "linear");
  EXPECT_DOUBLE_EQ(parsed.rope.theta, 640000);
  EXPECT_EQ(parsed.rope.rotary_dim, 16);

  c["rope_scaling"] = {{"rope_type", "yarn"}, {"type", "linear"}};  // rope_type wins
  EXPECT_EQ(ParseOk(c).rope.type, "yarn");
  c["rope_scaling"] = {{"mrope_section", {4, 2, 2}}, {"mrope_interleaved", true}};
  parsed = ParseOk(c);
  EXPECT_EQ(parsed.rope.type, "default");
  EXPECT_EQ(parsed.rope.mrope_section, (std::vector<int64_t>{4, 2, 2}));
  EXPECT_TRUE(parsed.rope.mrope_interleaved);

  // Qwen3-Next defaults to theta 5e6 when the key is absent.
  Json n = Next();
  n.erase("rope_theta");
  EXPECT_DOUBLE_EQ(ParseOk(n).rope.theta, 5e6);
}

TEST(ModelConfigTest, RejectsMistypedRopeKeys) {
  Json c = Flat();
  c["rope_parameters"]["rope_theta"] = "big";
  ExpectError(c, StatusCode::kInvalidArgument, {"rope_parameters", "'rope_theta'", "number"});
  c = Flat();
  c["rope_parameters"]["mrope_section"] = {2, "1", 1};
  ExpectError(c, StatusCode::kInvalidArgument, {"'mrope_section'", "integers"});
  c = Flat();
  c["rope_parameters"]["mrope_interleaved"] = "true";
  ExpectError(c, StatusCode::kInvalidArgument, {"'mrope_interleaved'", "true or false"});
  c = Flat();
  c["rope_parameters"]["rope_type"] = 3;
  ExpectError(c, StatusCode::kInvalidArgument, {"'rope_type'", "string"});
  c = Flat();
  c.erase("rope_parameters");
  c["rope_theta"] = true;
  ExpectError(c, StatusCode::kInvalidArgument, {"'rope_theta'", "number"});
}

TEST(ModelConfigTest, RotaryDim) {
  Json c = Flat();
  c.erase("rope_parameters");
  for (const auto& [factor, dim] : std::vector<std::pair<double, int64_t>>{
           {0.25, 8}, {0.5, 16}, {1.0, 32}, {0.0, 0}, {0.1875, 6}}) {
    c["partial_rotary_factor"] = factor;
    EXPECT_EQ(ParseOk(c).rope.rotary_dim, dim) << factor;
  }
  c["head_dim"] = 256;
  c["partial_rotary_factor"] = 0.25;
  EXPECT_EQ(ParseOk(c).rope.rotary_dim, 64);
  // Odd, larger than head_dim, or negative rotary dimensions are refused.
  c["head_dim"] = 32;
  for (double factor : {0.1, 1.5, -0.25}) {
    c["partial_rotary_factor"] = factor;
    ExpectError(c, StatusCode::kInvalidArgument, {"rotary dimension"});
  }
}

TEST(ModelConfigTest, RejectsRotaryFactorsThatOverflow) {
  // head_dim * partial_rotary_factor beyond the int64 range must be an error, not undefined
  // behaviour in the float-to-int conversion.
  Json c = Flat();
  c.erase("rope_parameters");
  for (double factor : {1e300, -1e300, 1e19, 3e18}) {
    c["partial_rotary_factor"] = factor;
    ExpectError(c, StatusCode::kInvalidArgument, {"rotary dimension"});
  }
  c["partial_rotary_factor"] = 1.0;
  c["head_dim"] = 9223372036854775807LL;  // 2^63 - 1 becomes 2^63 as a double
  ExpectError(c, StatusCode::kInvalidArgument, {});
}

TEST(ModelConfigTest, MropeSectionMustSumToHalfTheRotaryDim) {
  Json c = Nested();
  c["text_config"]["rope_parameters"]["mrope_section"] = {2, 1, 2};
  ExpectError(c, StatusCode::kInvalidArgument, {"mrope_section sums to 5", "rotary_dim/2 is 4"});
  c["text_config"]["rope_parameters"]["mrope_section"] = {4};
  EXPECT_EQ(ParseOk(c).rope.mrope_section, (std::vector<int64_t>{4}));
  c["text_config"]["rope_parameters"]["mrope_section"] = {6, -2};
  ExpectError(c, StatusCode::kInvalidArgument, {"mrope_section"});
  // Entries whose sum overflows int64 are refused without overflowing.
  c["text_config"]["rope_parameters"]["mrope_section"] = {9223372036854775807LL,
                                                          9223372036854775807LL, 6};
  ExpectError(c, StatusCode::kInvalidArgument, {"mrope_section"});
  c["text_config"]["rope_parameters"]["mrope_section"] = {-9223372036854775807LL - 1,
                                                          -9223372036854775807LL - 1, 4};
  ExpectError(c, StatusCode::kInvalidArgument, {"mrope_section"});
  c["text_config"]["rope_parameters"]["mrope_section"] = Json::array();
  EXPECT_TRUE(ParseOk(c).rope.mrope_section.empty());
}

// --- MoE ----------------------------------------------------------------------------------------

TEST(ModelConfigTest, Qwen3NextFlatConfig) {
  Json c = Next();
  ModelConfig parsed = ParseOk(c);
  EXPECT_EQ(parsed.family, ModelFamily::kQwen3Next);
  EXPECT_STREQ(ModelFamilyName(parsed.family), "qwen3_next");
  EXPECT_EQ(parsed.layer_types, Kinds("LLLFLLLF"));
  EXPECT_DOUBLE_EQ(parsed.rope.theta, 5e6);
  EXPECT_EQ(parsed.rope.type, "default");  // rope_scaling: null
  EXPECT_EQ(parsed.num_experts, 8);
  EXPECT_EQ(parsed.experts_per_token, 2);
  EXPECT_EQ(parsed.moe_intermediate_size, 64);
  EXPECT_EQ(parsed.shared_expert_intermediate_size, 128);
  EXPECT_EQ(parsed.mlp_only_layers, (std::vector<int64_t>{1}));
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(parsed.IsMoeLayer(i), i != 1) << i;
  EXPECT_TRUE(parsed.norm_topk_prob);
  EXPECT_EQ(parsed.mtp_layers, 1);

  c["decoder_sparse_step"] = 2;
  c["mlp_only_layers"] = {3};
  c["norm_topk_prob"] = false;
  parsed = ParseOk(c);
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(parsed.IsMoeLayer(i), i == 1 || i == 5 || i == 7) << i;
  EXPECT_FALSE(parsed.norm_topk_prob);  // Qwen3-Next reads the key

  c["decoder_sparse_step"] = 0;  // no sparse layers at all
  parsed = ParseOk(c);
  for (int64_t i = 0; i < 8; ++i) EXPECT_FALSE(parsed.IsMoeLayer(i)) << i;
}

TEST(ModelConfigTest, DenseLayersNeedAnIntermediateSize) {
  Json c = Next();
  c.erase("intermediate_size");
  ExpectError(c, StatusCode::kInvalidArgument, {"layer 1 is dense", "intermediate_size"});
  c["mlp_only_layers"] = Json::array();
  EXPECT_TRUE(ParseOk(c).IsMoeLayer(1));
}

TEST(ModelConfigTest, Qwen35MoeEveryLayerIsMoe) {
  Json c = MoeNested();
  c["text_config"]["mlp_only_layers"] = {0, 1};  // ignored by Qwen3.5-MoE
  c["text_config"]["decoder_sparse_step"] = 2;
  c["text_config"]["norm_topk_prob"] = false;  // forced true
  const ModelConfig parsed = ParseOk(c);
  EXPECT_EQ(parsed.family, ModelFamily::kQwen35Moe);
  EXPECT_STREQ(ModelFamilyName(parsed.family), "qwen3_5_moe");
  for (int64_t i = 0; i < 8; ++i) EXPECT_TRUE(parsed.IsMoeLayer(i)) << i;
  EXPECT_TRUE(parsed.norm_topk_prob);
  // norm_topk_prob is not even read, so a mistyped value does not matter.
  c["text_config"]["norm_topk_prob"] = "no";
  EXPECT_TRUE(ParseOk(c).norm_topk_prob);
}

TEST(ModelConfigTest, RejectsInconsistentMoe) {
  Json c = MoeNested();
  c["text_config"]["num_experts_per_tok"] = 9;
  ExpectError(c, StatusCode::kInvalidArgument, {"num_experts_per_tok"});
  c["text_config"]["num_experts_per_tok"] = 0;
  ExpectError(c, StatusCode::kInvalidArgument, {"num_experts_per_tok"});
  c = MoeNested();
  c["text_config"].erase("moe_intermediate_size");
  ExpectError(c, StatusCode::kInvalidArgument, {"moe_intermediate_size"});
}

// --- MTP ----------------------------------------------------------------------------------------

TEST(ModelConfigTest, MtpLayers) {
  Json c = Next();  // no mtp keys at all
  EXPECT_EQ(ParseOk(c).mtp_layers, 1);
  c["num_nextn_predict_layers"] = 3;
  EXPECT_EQ(ParseOk(c).mtp_layers, 3);
  c["mtp_num_hidden_layers"] = 2;  // the Qwen3.5 key wins
  EXPECT_EQ(ParseOk(c).mtp_layers, 2);
  c["mtp_num_hidden_layers"] = 0;
  EXPECT_EQ(ParseOk(c).mtp_layers, 0);
  c["mtp_num_hidden_layers"] = nullptr;
  EXPECT_EQ(ParseOk(c).mtp_layers, 3);
  c["num_nextn_predict_layers"] = "3";
  ExpectError(c, StatusCode::kInvalidArgument, {"'num_nextn_predict_layers'", "integer"});
}

TEST(ModelConfigTest, MtpExtras) {
  Json c = Nested();
  EXPECT_FALSE(ParseOk(c).mtp_dedicated_embeddings);
  EXPECT_EQ(ParseOk(c).mtp_norm_encoding, "");
  c["text_config"]["mtp_use_dedicated_embeddings"] = true;
  c["mtp_norm_encoding"] = "gain";
  EXPECT_TRUE(ParseOk(c).mtp_dedicated_embeddings);
  EXPECT_EQ(ParseOk(c).mtp_norm_encoding, "gain");
  c["mtplx_mtp_norm_encoding"] = "delta";  // the mtplx key wins
  EXPECT_EQ(ParseOk(c).mtp_norm_encoding, "delta");
}

// --- Quantization -------------------------------------------------------------------------------

Json QuantTable() {
  return {{"group_size", 32},
          {"bits", 4},
          {"mode", "affine"},
          {"model.layers.0.mlp.gate", {{"bits", 8}}},
          {"model.layers.1.mlp.gate", {{"group_size", 64}, {"bits", 8}}},
          {"lm_head", false},
          {"model.embed_tokens", true}};
}

void ExpectQuantTable(const ModelConfig& c) {
  ASSERT_TRUE(c.quant.present);
  EXPECT_EQ(c.quant.global.bits, 4);
  EXPECT_EQ(c.quant.global.group_size, 32);
  EXPECT_EQ(c.quant.global.mode, "affine");
  const auto plain = c.QuantFor("model.layers.3.self_attn.q_proj");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->bits, 4);
  EXPECT_EQ(plain->group_size, 32);
  const auto gate0 = c.QuantFor("model.layers.0.mlp.gate");  // bits overridden, group inherited
  ASSERT_TRUE(gate0.has_value());
  EXPECT_EQ(gate0->bits, 8);
  EXPECT_EQ(gate0->group_size, 32);
  EXPECT_EQ(gate0->mode, "affine");
  const auto gate1 = c.QuantFor("model.layers.1.mlp.gate");
  ASSERT_TRUE(gate1.has_value());
  EXPECT_EQ(gate1->bits, 8);
  EXPECT_EQ(gate1->group_size, 64);
  EXPECT_FALSE(c.QuantFor("lm_head").has_value());      // false: not quantized
  const auto embed = c.QuantFor("model.embed_tokens");  // true: the global spec
  ASSERT_TRUE(embed.has_value());
  EXPECT_EQ(embed->bits, 4);
  // Overrides are keyed by the exact module path.
  ASSERT_TRUE(c.QuantFor("model.layers.0.mlp.gate.weight").has_value());
  EXPECT_EQ(c.QuantFor("model.layers.0.mlp.gate.weight")->bits, 4);
}

TEST(ModelConfigTest, QuantizationTableInEveryPlace) {
  for (const char* key : {"quantization", "quantization_config"}) {
    SCOPED_TRACE(key);
    Json top = Nested();
    top[key] = QuantTable();
    ExpectQuantTable(ParseOk(top));
    Json text = Nested();
    text["text_config"][key] = QuantTable();
    ExpectQuantTable(ParseOk(text));
    Json flat = Flat();
    flat[key] = QuantTable();
    ExpectQuantTable(ParseOk(flat));
  }
}

TEST(ModelConfigTest, QuantizationPrecedence) {
  // The top level is searched before text_config, "quantization" before "quantization_config".
  Json c = Nested();
  c["text_config"]["quantization"] = {{"bits", 8}, {"group_size", 64}};
  c["quantization_config"] = {{"bits", 6}, {"group_size", 64}};
  EXPECT_EQ(ParseOk(c).quant.global.bits, 6);
  c["quantization"] = {{"bits", 3}, {"group_size", 64}};
  EXPECT_EQ(ParseOk(c).quant.global.bits, 3);
  c.erase("quantization");
  c.erase("quantization_config");
  EXPECT_EQ(ParseOk(c).quant.global.bits, 8);
  c["quantization"] = nullptr;  // not an object: skipped
  EXPECT_EQ(ParseOk(c).quant.global.bits, 8);
}

TEST(ModelConfigTest, QuantizationDefaults) {
  Json c = Flat();
  c["quantization"] = Json::object();
  const ModelConfig parsed = ParseOk(c);
  ASSERT_TRUE(parsed.quant.present);
  EXPECT_EQ(parsed.quant.global.bits, 4);
  EXPECT_EQ(parsed.quant.global.group_size, 64);
  EXPECT_EQ(parsed.quant.global.mode, "affine");
  EXPECT_TRUE(parsed.quant.overrides.empty());
}

TEST(ModelConfigTest, RejectsUnsupportedQuantizationMode) {
  Json c = Nested();
  c["quantization"] = {{"bits", 4}, {"group_size", 32}, {"mode", "mxfp4"}};
  ExpectError(c, StatusCode::kUnimplemented, {"'mxfp4'", "affine only"});
  c.erase("quantization");
  c["text_config"]["quantization_config"] = {{"bits", 4}, {"group_size", 32}, {"mode", "nvfp4"}};
  ExpectError(c, StatusCode::kUnimplemented, {"'nvfp4'"});
}

TEST(ModelConfigTest, RejectsUnsupportedQuantizationModeInAnOverride) {
  // A per-module override in an unsupported mode must not be decoded as affine.
  Json c = Nested();
  c["quantization"] = {{"bits", 4},
                       {"group_size", 32},
                       {"model.layers.0.mlp.experts", {{"mode", "mxfp4"}, {"group_size", 32}}}};
  ExpectError(c, StatusCode::kUnimplemented, {"'mxfp4'", "model.layers.0.mlp.experts"});
}

// --- Errors -------------------------------------------------------------------------------------

TEST(ModelConfigTest, RejectsTextThatIsNotAJsonObject) {
  for (const char* text : {"", "{", "[]", "null", "\"config\"", "{\"a\":1}}"}) {
    auto parsed = ParseModelConfig(text, kLabel);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(parsed.status().message(), kLabel));
    EXPECT_TRUE(Contains(parsed.status().message(), "not a valid JSON object"));
  }
}

TEST(ModelConfigTest, RejectsUnknownArchitectureByName) {
  Json c = Nested();
  c["architectures"] = {"LlamaForCausalLM"};
  ExpectError(c, StatusCode::kUnimplemented, {"'LlamaForCausalLM'", "unsupported architecture"});
  c["architectures"] = {"Qwen3ForCausalLM", "Qwen3_5ForCausalLM"};  // only the first counts
  ExpectError(c, StatusCode::kUnimplemented, {"'Qwen3ForCausalLM'"});
  c.erase("architectures");
  c["model_type"] = "llama";
  ExpectError(c, StatusCode::kUnimplemented, {"model_type 'llama'"});
  c.erase("model_type");
  ExpectError(c, StatusCode::kUnimplemented, {"unsupported architecture"});
}

TEST(ModelConfigTest, RejectsMissingRequiredKeysByName) {
  for (const char* key : {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                          "linear_num_key_heads", "linear_num_value_heads"}) {
    SCOPED_TRACE(key);
    Json nested = Nested();
    nested["text_config"].erase(key);
    ExpectError(nested, StatusCode::kInvalidArgument,
                {"missing required key '" + std::string(key) + "'", "(text_config)"});
    Json flat = Flat();
    flat[key] = nullptr;  // null counts as missing
    ExpectError(flat, StatusCode::kInvalidArgument,
                {"missing required key '" + std::string(key) + "'"});
  }
}

TEST(ModelConfigTest, RejectsWrongKeyTypesByName) {
  const std::vector<std::pair<std::string, Json>> cases = {
      {"hidden_size", "128"},      {"vocab_size", 1024.5},          {"num_hidden_layers", true},
      {"head_dim", Json::array()}, {"rms_norm_eps", "1e-6"},        {"attention_bias", 0},
      {"attn_output_gate", "yes"}, {"mlp_only_layers", 1},          {"mlp_only_layers", {1.5}},
      {"num_experts", "8"},        {"max_position_embeddings", 1e5}};
  for (const auto& [key, value] : cases) {
    SCOPED_TRACE(key + " = " + value.dump());
    Json c = Flat();
    c[key] = value;
    ExpectError(c, StatusCode::kInvalidArgument, {"'" + key + "'"});
  }
  Json top = Nested();
  top["model_type"] = 35;
  ExpectError(top, StatusCode::kInvalidArgument, {"'model_type'", "string"});
}

TEST(ModelConfigTest, RejectsInvalidDimensions) {
  Json c = Flat();
  c["num_key_value_heads"] = 3;
  ExpectError(c, StatusCode::kInvalidArgument, {"num_key_value_heads"});
  c = Flat();
  c["linear_num_value_heads"] = 3;
  ExpectError(c, StatusCode::kInvalidArgument, {"linear_num_key_heads"});
  c = Flat();
  c["linear_conv_kernel_dim"] = 17;
  ExpectError(c, StatusCode::kInvalidArgument, {"linear_conv_kernel_dim"});
  c = Flat();
  c["hidden_size"] = -128;
  ExpectError(c, StatusCode::kInvalidArgument, {"must be positive"});
  c = Flat();
  c["num_attention_heads"] = 0;
  c.erase("head_dim");
  ExpectError(c, StatusCode::kInvalidArgument, {"num_attention_heads"});
}

TEST(ModelConfigTest, LoadModelConfigFromAFolder) {
  const std::string dir = testing::MakeTempDir("mtplx-config");
  auto missing = LoadModelConfig(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(missing.status().message(), JoinPath(dir, "config.json")));
  ASSERT_TRUE(WriteTextFile(JoinPath(dir, "config.json"), Nested().dump(2)).ok());
  auto loaded = LoadModelConfig(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->num_layers, 8);
  Json bad = Nested();
  bad["text_config"].erase("vocab_size");
  ASSERT_TRUE(WriteTextFile(JoinPath(dir, "config.json"), bad.dump()).ok());
  auto refused = LoadModelConfig(dir);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), JoinPath(dir, "config.json")));
  EXPECT_TRUE(Contains(refused.status().message(), "'vocab_size'"));
}

// --- Generation defaults ------------------------------------------------------------------------

class GenerationDefaultsTest : public ::testing::Test {
 protected:
  void Write(const std::string& name, const Json& value) {
    ASSERT_TRUE(WriteTextFile(JoinPath(dir_, name), value.dump()).ok());
  }
  GenerationDefaults Load() {
    auto d = LoadGenerationDefaults(dir_);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *d : GenerationDefaults{};
  }
  std::string dir_ = testing::MakeTempDir("mtplx-generation");
};

TEST_F(GenerationDefaultsTest, BuiltInWhenNothingIsThere) {
  const GenerationDefaults d = Load();
  EXPECT_TRUE(d.stop_ids.empty());
  EXPECT_DOUBLE_EQ(d.temperature, 0.6);
  EXPECT_DOUBLE_EQ(d.top_p, 0.95);
  EXPECT_EQ(d.top_k, 20);
  EXPECT_DOUBLE_EQ(d.min_p, 0.0);
  EXPECT_EQ(d.source, "built-in");
}

TEST_F(GenerationDefaultsTest, EosTokenIdNumberOrList) {
  Write("generation_config.json", {{"eos_token_id", 248046}});
  GenerationDefaults d = Load();
  EXPECT_EQ(d.stop_ids, (std::vector<int32_t>{248046}));
  EXPECT_EQ(d.source, "generation_config.json");
  EXPECT_DOUBLE_EQ(d.temperature, 0.6);  // sampler keys absent: built-in values stay

  Write("generation_config.json", {{"eos_token_id", {248046, 248044, "x", 1.5, 7}}});
  EXPECT_EQ(Load().stop_ids, (std::vector<int32_t>{248046, 248044, 7}));
}

TEST_F(GenerationDefaultsTest, SamplerFromGenerationConfig) {
  Write(
      "generation_config.json",
      {{"eos_token_id", 1}, {"temperature", 1.0}, {"top_p", 0.8}, {"top_k", 40}, {"min_p", 0.05}});
  const GenerationDefaults d = Load();
  EXPECT_DOUBLE_EQ(d.temperature, 1.0);
  EXPECT_DOUBLE_EQ(d.top_p, 0.8);
  EXPECT_EQ(d.top_k, 40);
  EXPECT_DOUBLE_EQ(d.min_p, 0.05);
}

TEST_F(GenerationDefaultsTest, RuntimeSamplerOverridesGenerationConfig) {
  Write("generation_config.json",
        {{"eos_token_id", {5, 6}}, {"temperature", 1.0}, {"top_p", 0.8}, {"top_k", 40}});
  Write("mtplx_runtime.json", {{"sampler", {{"temperature", 0.3}, {"top_k", 8}}}});
  const GenerationDefaults d = Load();
  EXPECT_EQ(d.source, "mtplx_runtime.json");
  EXPECT_DOUBLE_EQ(d.temperature, 0.3);
  EXPECT_EQ(d.top_k, 8);
  EXPECT_DOUBLE_EQ(d.top_p, 0.8);  // not in the runtime file: generation_config.json's
  EXPECT_EQ(d.stop_ids, (std::vector<int32_t>{5, 6}));

  // A runtime file without a sampler object changes nothing.
  Write("mtplx_runtime.json", {{"sampler", "fast"}});
  const GenerationDefaults e = Load();
  EXPECT_EQ(e.source, "generation_config.json");
  EXPECT_DOUBLE_EQ(e.temperature, 1.0);
}

TEST_F(GenerationDefaultsTest, MtpDepthFromRuntimeFile) {
  EXPECT_EQ(Load().mtp_depth, 2);
  Write("mtplx_runtime.json", {{"recommended_mtp_depth", 3}});
  EXPECT_EQ(Load().mtp_depth, 3);
  Write("mtplx_runtime.json", {{"recommended_mtp_depth", 3}, {"mtp_depth_default", 1}});
  EXPECT_EQ(Load().mtp_depth, 1);  // mtp_depth_default is read last
  Write("mtplx_runtime.json", {{"mtp_depth_default", 9}});
  EXPECT_EQ(Load().mtp_depth, kMaxMtpDepth);  // clamped to [1, kMaxMtpDepth]
  EXPECT_EQ(Load().mtp_depth_max, kMaxMtpDepth);
  Write("mtplx_runtime.json", {{"mtp_depth_default", -2}});
  EXPECT_EQ(Load().mtp_depth, 1);
  Write("mtplx_runtime.json", {{"mtp_depth_default", "3"}, {"recommended_mtp_depth", 2.5}});
  EXPECT_EQ(Load().mtp_depth, 2);        // mistyped: ignored
  EXPECT_EQ(Load().source, "built-in");  // no sampler object
}

// mtp_depth_max is a ceiling: on the default depth here, on every depth a run uses (engine).
TEST_F(GenerationDefaultsTest, MtpDepthMaxCapsTheDefaultDepth) {
  Write("mtplx_runtime.json", {{"mtp_depth_max", 3}, {"mtp_depth_default", 3}});
  EXPECT_EQ(Load().mtp_depth_max, 3);
  EXPECT_EQ(Load().mtp_depth, 3);
  Write("mtplx_runtime.json", {{"mtp_depth_max", 1}});
  EXPECT_EQ(Load().mtp_depth_max, 1);
  EXPECT_EQ(Load().mtp_depth, 1);  // the built-in default 2, capped
  Write("mtplx_runtime.json", {{"mtp_depth_max", 2}, {"recommended_mtp_depth", 4}});
  EXPECT_EQ(Load().mtp_depth, 2);
  Write("mtplx_runtime.json", {{"mtp_depth_max", 16}});
  EXPECT_EQ(Load().mtp_depth_max, kMaxMtpDepth);  // more than the engine runs
  Write("mtplx_runtime.json", {{"mtp_depth_max", 0}});
  EXPECT_EQ(Load().mtp_depth_max, 1);
  Write("mtplx_runtime.json", {{"mtp_depth_max", "3"}});
  EXPECT_EQ(Load().mtp_depth_max, kMaxMtpDepth);  // mistyped: ignored
}

TEST_F(GenerationDefaultsTest, RecommendedDraftSamplerFromRuntimeFile) {
  GenerationDefaults d = Load();
  EXPECT_FALSE(d.draft.temperature || d.draft.top_p || d.draft.top_k);
  Write("mtplx_runtime.json",
        {{"sampler", {{"temperature", 0.6}}},
         {"recommended_draft_sampler", {{"temperature", 0.7}, {"top_p", 0.9}, {"top_k", 8}}}});
  d = Load();
  EXPECT_EQ(d.draft.temperature, 0.7);
  EXPECT_EQ(d.draft.top_p, 0.9);
  EXPECT_EQ(d.draft.top_k, 8);
  EXPECT_DOUBLE_EQ(d.temperature, 0.6);  // the target's sampler is untouched
  // Out of range or mistyped values are left to the request's own.
  Write("mtplx_runtime.json",
        {{"recommended_draft_sampler", {{"temperature", -1}, {"top_p", 0}, {"top_k", "20"}}}});
  d = Load();
  EXPECT_FALSE(d.draft.temperature || d.draft.top_p || d.draft.top_k);
}

TEST_F(GenerationDefaultsTest, MistypedSamplerValuesAreIgnored) {
  Write("generation_config.json", {{"temperature", "hot"}, {"top_k", 2.5}, {"top_p", nullptr}});
  const GenerationDefaults d = Load();
  EXPECT_DOUBLE_EQ(d.temperature, 0.6);
  EXPECT_EQ(d.top_k, 20);
  EXPECT_DOUBLE_EQ(d.top_p, 0.95);
}

TEST_F(GenerationDefaultsTest, FallsBackToConfigEos) {
  Write("config.json", Nested());
  EXPECT_EQ(Load().stop_ids, (std::vector<int32_t>{960}));  // text_config.eos_token_id
  Write("config.json", {{"eos_token_id", {1, 2}}});         // flat
  EXPECT_EQ(Load().stop_ids, (std::vector<int32_t>{1, 2}));
  // generation_config.json without eos: still falls back; with eos: config.json is not used.
  Write("generation_config.json", {{"temperature", 0.7}});
  EXPECT_EQ(Load().stop_ids, (std::vector<int32_t>{1, 2}));
  Write("generation_config.json", {{"eos_token_id", 9}});
  EXPECT_EQ(Load().stop_ids, (std::vector<int32_t>{9}));
}

TEST_F(GenerationDefaultsTest, RejectsMalformedFilesByName) {
  for (const char* name : {"generation_config.json", "mtplx_runtime.json", "config.json"}) {
    SCOPED_TRACE(name);
    const std::string sub = JoinPath(dir_, std::string("case-") + name);
    ASSERT_TRUE(MakeDirectories(sub).ok());
    ASSERT_TRUE(WriteTextFile(JoinPath(sub, name), "{not json").ok());
    auto d = LoadGenerationDefaults(sub);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(d.status().message(), JoinPath(sub, name))) << d.status().message();
  }
}

}  // namespace
}  // namespace mtplx::io
