// `mtplx convert` round trips: a synthetic Hugging Face checkpoint becomes a pack that loads and
// gives the source's logits (bit-identical at --bits 0), whose quantized tensors are exactly what
// the MLX synth writer stores for the same values, and bad inputs leave nothing behind.
#include "pack/convert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/float16.h"
#include "io/generation_config.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/model.h"
#include "pack/quant_policy.h"
#include "support/synthetic_model.h"
#include "support/test_support.h"
#include "synth/synth.h"

namespace mtplx::pack {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const std::vector<int32_t> kTokens = {3, 500, 77, 12, 901, 45, 260, 8};

ConvertOptions Options(const std::string& src, int bits, int group_size = 64) {
  ConvertOptions o;
  o.src_dir = src;
  o.out_dir = testing::MakeTempDir("mtplx-convert") + "/pack";
  o.bits = bits;
  o.group_size = group_size;
  o.show_progress = false;
  o.threads = 1;
  return o;
}

std::unique_ptr<model::Model> Load(const std::string& dir) {
  model::LoadOptions options;
  options.show_progress = false;
  options.threads = 1;
  options.lock_memory = false;
  auto m = model::Model::Load(dir, options);
  EXPECT_TRUE(m.ok()) << dir << ": " << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

struct Outputs {
  std::vector<float> logits, hidden, mtp_logits, mtp_hidden;
};

// Trunk logits for kTokens, then the MTP head over the (hidden, next token) pairs.
Outputs RunTokens(const model::Model& m) {
  Outputs o;
  auto state = m.NewState();
  model::ForwardOutput out;
  EXPECT_TRUE(m.Forward(*state, kTokens, {}, &out).ok());
  o.logits = out.logits;
  o.hidden = out.hidden;
  if (!m.has_mtp()) return o;
  auto mtp_state = m.NewMtpState();
  model::ForwardOutput mtp;
  EXPECT_TRUE(
      m.ForwardMtp(*mtp_state, std::span(kTokens).subspan(1), out.hidden.data(), {}, &mtp).ok());
  o.mtp_logits = mtp.logits;
  o.mtp_hidden = mtp.hidden;
  return o;
}

Json ReadJson(const std::string& path) {
  auto text = ReadTextFile(path);
  EXPECT_TRUE(text.ok()) << path;
  return Json::parse(text.ok() ? *text : "{}");
}

int Entries(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

std::string CopyModel(const std::string& src) {
  const std::string dst = testing::MakeTempDir("mtplx-convert-src");
  fs::copy(src, dst, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  return dst;
}

// Rewrites a safetensors file through `edit`, which may drop a tensor (false) or change its bytes.
using Edit = std::function<bool(const std::string& name, TensorView view, std::vector<uint8_t>&)>;
void RewriteFile(const std::string& path, const Edit& edit) {
  auto file = io::SafetensorsFile::Open(path, nullptr);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::vector<std::pair<std::string, std::vector<uint8_t>>> kept;
  io::SafetensorsWriter writer(path + ".tmp");
  for (const auto& [name, entry] : (*file)->header().tensors) {
    const TensorView view = *(*file)->Get(name);
    const auto* data = static_cast<const uint8_t*>(view.data);
    std::vector<uint8_t> bytes(data, data + view.NumBytes());
    if (!edit(name, view, bytes)) continue;
    writer.Declare(name, view.dtype, view.shape);
    kept.emplace_back(name, std::move(bytes));
  }
  ASSERT_TRUE(writer.Begin().ok());
  for (const auto& [name, bytes] : kept)
    ASSERT_TRUE(writer.Append(bytes.data(), bytes.size()).ok());
  ASSERT_TRUE(writer.Finish().ok());
  fs::rename(path + ".tmp", path);
}

class ConvertPresetTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvertPresetTest, Bf16PackGivesBitIdenticalLogitsAndMtpLogits) {
  const std::string src = testing::SyntheticModel(GetParam(), "hf");
  const ConvertOptions o = Options(src, 0);
  auto summary = ConvertCheckpoint(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->quantized, 0);
  EXPECT_GT(summary->mtp_tensors, 0);
  EXPECT_TRUE(FileExists(o.out_dir + "/mtp.safetensors"));
  EXPECT_TRUE(FileExists(o.out_dir + "/model.safetensors.index.json"));
  auto source = Load(src);
  auto pack = Load(o.out_dir);
  ASSERT_TRUE(source && pack);
  EXPECT_TRUE(pack->weights().mlx_origin);
  ASSERT_TRUE(pack->has_mtp());
  const Outputs a = RunTokens(*source), b = RunTokens(*pack);
  EXPECT_EQ(a.logits, b.logits);
  EXPECT_EQ(a.hidden, b.hidden);
  ASSERT_FALSE(a.mtp_logits.empty());
  EXPECT_EQ(a.mtp_logits, b.mtp_logits);
  EXPECT_EQ(a.mtp_hidden, b.mtp_hidden);
}

// Name of a synth-MLX tensor in the pack: the MTP head lives in the sidecar under mtp.*.
std::string PackName(const std::string& synth_name) {
  const std::string wrapped = "language_model.mtp.";
  if (synth_name.rfind(wrapped, 0) == 0) return "mtp." + synth_name.substr(wrapped.size());
  return synth_name;
}

// The MTP head's 1-D tensors are all zero-centred norms.
bool IsMtpNorm(const std::string& pack_name, const TensorView& t) {
  return pack_name.rfind("mtp.", 0) == 0 && t.rank() == 1;
}

TEST_P(ConvertPresetTest, QuantizedTensorsEqualTheMlxSynthWriter) {
  const ConvertOptions o = Options(testing::SyntheticModel(GetParam(), "hf"), 4, 64);
  auto summary = ConvertCheckpoint(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_GT(summary->quantized, 0);
  const std::string mlx = testing::SyntheticModel(GetParam(), "mlx", 4, 64);
  auto synth = io::SafetensorsFile::Open(mlx + "/model.safetensors", nullptr);
  auto trunk = io::SafetensorsFile::Open(o.out_dir + "/model.safetensors", nullptr);
  auto sidecar = io::SafetensorsFile::Open(o.out_dir + "/mtp.safetensors", nullptr);
  ASSERT_TRUE(synth.ok() && trunk.ok() && sidecar.ok());
  size_t compared = 0;
  for (const auto& [name, entry] : (*synth)->header().tensors) {
    const std::string pack_name = PackName(name);
    const auto& file = (*trunk)->Has(pack_name) ? **trunk : **sidecar;
    ASSERT_TRUE(file.Has(pack_name)) << pack_name;
    const TensorView want = *(*synth)->Get(name), got = *file.Get(pack_name);
    ASSERT_EQ(got.shape, want.shape) << pack_name;
    if (IsMtpNorm(pack_name, got)) {  // raw zero-centred in the sidecar, 1 + w in the synth file
      for (int64_t i = 0; i < want.NumElements(); ++i)
        EXPECT_EQ(RoundToBf16(1.0f + got.GetFloat(i)), want.GetFloat(i)) << pack_name;
    } else {
      ASSERT_EQ(got.dtype, want.dtype) << pack_name;
      EXPECT_EQ(std::memcmp(got.data, want.data, want.NumBytes()), 0) << pack_name;
    }
    ++compared;
  }
  EXPECT_EQ(compared, (*trunk)->header().tensors.size() + (*sidecar)->header().tensors.size());
  // The quantization table says the same, modulo the sidecar's names.
  const Json want = ReadJson(mlx + "/config.json")["quantization"];
  const Json got = ReadJson(o.out_dir + "/config.json")["quantization"];
  for (const auto& [key, value] : want.items()) EXPECT_EQ(got[PackName(key)], value) << key;
  // Same bytes, same model: the pack gives the synth MLX checkpoint's logits exactly.
  auto pack = Load(o.out_dir);
  auto reference = Load(mlx);
  ASSERT_TRUE(pack && reference);
  const Outputs a = RunTokens(*pack), b = RunTokens(*reference);
  EXPECT_EQ(a.logits, b.logits);
  EXPECT_EQ(a.mtp_logits, b.mtp_logits);
}

INSTANTIATE_TEST_SUITE_P(Presets, ConvertPresetTest,
                         ::testing::Values("dense-tiny", "moe-tiny", "next-tiny"),
                         testing::PresetTestName<::testing::TestParamInfo<std::string>>);

struct Closeness {
  int rows = 0;
  int top1_agree = 0;
  double min_cos = 1, mean_cos = 0;
};

Closeness Compare(const std::vector<float>& a, const std::vector<float>& b, int64_t vocab) {
  Closeness c;
  c.rows = static_cast<int>(a.size() / vocab);
  for (int r = 0; r < c.rows; ++r) {
    const float* x = a.data() + r * vocab;
    const float* y = b.data() + r * vocab;
    double xy = 0, xx = 0, yy = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      xy += static_cast<double>(x[v]) * y[v];
      xx += static_cast<double>(x[v]) * x[v];
      yy += static_cast<double>(y[v]) * y[v];
    }
    const double cos = xy / std::sqrt(xx * yy);
    c.min_cos = std::min(c.min_cos, cos);
    c.mean_cos += cos / c.rows;
    c.top1_agree += std::max_element(x, x + vocab) - x == std::max_element(y, y + vocab) - y;
  }
  return c;
}

Closeness ConvertAndCompare(const std::string& src, int bits, int group_size) {
  const ConvertOptions o = Options(src, bits, group_size);
  auto summary = ConvertCheckpoint(o);
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  auto source = Load(src);
  auto pack = Load(o.out_dir);
  if (!source || !pack) return {};
  const Outputs a = RunTokens(*source), b = RunTokens(*pack);
  for (float v : b.logits) EXPECT_TRUE(std::isfinite(v));
  const Closeness c = Compare(a.logits, b.logits, source->config().vocab_size);
  std::printf("bits %d g%d: top-1 %d of %d, cosine min %.4f mean %.4f\n", bits, group_size,
              c.top1_agree, c.rows, c.min_cos, c.mean_cos);
  return c;
}

// The synthetic presets have uniform random weights and no training, and such a network
// amplifies weight noise layer after layer: 8 bits keep the logits close, 4 bits keep them
// correlated but reorder the flat top of the distribution. (A trained model is far more robust:
// see TrainedExportStaysCloseAtFourBits.) What 4 bits must produce exactly is checked by
// QuantizedTensorsEqualTheMlxSynthWriter.
TEST(ConvertTest, QuantizedPacksStayCloseToTheSource) {
  const std::string src = testing::SyntheticModel("dense-tiny", "hf");
  const Closeness q8 = ConvertAndCompare(src, 8, 64);
  EXPECT_GE(q8.top1_agree, q8.rows * 3 / 4);
  EXPECT_GT(q8.min_cos, 0.98);
  const Closeness q6 = ConvertAndCompare(src, 6, 64);
  EXPECT_GT(q6.mean_cos, 0.8);
  const Closeness q4 = ConvertAndCompare(src, 4, 64);
  EXPECT_GT(q4.mean_cos, 0.2);
}

// The trained export of tools/train, when a training run left one in this checkout.
TEST(ConvertTest, TrainedExportStaysCloseAtFourBits) {
  const std::string src = testing::SourceDir() + "/tools/train/runs/v1/mid_hf";
  if (!FileExists(src + "/model.safetensors")) GTEST_SKIP() << "no trained export at " << src;
  const Closeness q4 = ConvertAndCompare(src, 4, 64);
  EXPECT_GE(q4.top1_agree, q4.rows - 1);
  EXPECT_GT(q4.min_cos, 0.99);
}

TEST(ConvertTest, RuntimeManifestHasTheRequiredKeysAndFeedsTheDefaults) {
  ConvertOptions o = Options(testing::SyntheticModel("dense-tiny", "hf"), 0);
  o.mtp_depth = 3;
  o.sampler = SamplerDefaults{0.7, 0.8, 11};
  o.verify = [](const std::string& dir) -> Result<std::string> {
    auto m = Load(dir);
    if (!m) return Internal("did not load");
    return std::string("loaded in test");
  };
  auto summary = ConvertCheckpoint(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  const Json m = ReadJson(o.out_dir + "/mtplx_runtime.json");
  for (const char* key :
       {"mtplx_version", "arch_id", "mtp_depth_max", "recommended_profile", "exactness_baseline",
        "verified_on", "mtp_depth_default", "sampler", "mtp_contract", "capabilities",
        "mtp_tensor_count", "precision_variant", "forge_provenance"})
    EXPECT_TRUE(m.contains(key)) << key;
  EXPECT_EQ(m["arch_id"], "qwen3_5-mtp");
  EXPECT_EQ(m["verified_on"], "loaded in test");
  EXPECT_EQ(m["mtp_tensor_count"], summary->mtp_tensors);
  EXPECT_EQ(m["mtp_tensor_count"], 15);  // the dense Qwen 3.5 MTP head, unquantized
  EXPECT_EQ(m["precision_variant"], "bf16");
  EXPECT_EQ(m["mtp_contract"]["concat_order"], "embedding_hidden");
  EXPECT_EQ(m["forge_provenance"]["source_sha256"]["model.safetensors"].get<std::string>().size(),
            64u);
  auto defaults = io::LoadGenerationDefaults(o.out_dir);
  ASSERT_TRUE(defaults.ok());
  EXPECT_DOUBLE_EQ(defaults->temperature, 0.7);
  EXPECT_DOUBLE_EQ(defaults->top_p, 0.8);
  EXPECT_EQ(defaults->top_k, 11);
  EXPECT_EQ(defaults->mtp_depth, 3);
  EXPECT_FALSE(defaults->stop_ids.empty());
  // Tokenizer, template and generation files travel with the pack.
  for (const char* file : {"config.json", "tokenizer.json", "tokenizer_config.json",
                           "chat_template.jinja", "generation_config.json"})
    EXPECT_TRUE(FileExists(o.out_dir + "/" + file)) << file;
  const Json config = ReadJson(o.out_dir + "/config.json");
  EXPECT_FALSE(config.contains("vision_config"));
  EXPECT_FALSE(config.contains("quantization"));
  EXPECT_EQ(config["mlx_lm_extra_tensors"]["mtp_file"], "mtp.safetensors");
  EXPECT_EQ(config["mtplx_mtp_norm_encoding"], "delta");
}

TEST(ConvertTest, SamplerDefaultsComeFromTheSourceGenerationConfig) {
  const std::string src = testing::SyntheticModel("dense-tiny", "hf");
  const ConvertOptions o = Options(src, 0);
  ASSERT_TRUE(ConvertCheckpoint(o).ok());
  auto want = io::LoadGenerationDefaults(src);
  const Json sampler = ReadJson(o.out_dir + "/mtplx_runtime.json")["sampler"];
  ASSERT_TRUE(want.ok());
  EXPECT_DOUBLE_EQ(sampler["temperature"].get<double>(), want->temperature);
  EXPECT_DOUBLE_EQ(sampler["top_p"].get<double>(), want->top_p);
  EXPECT_EQ(sampler["top_k"].get<int>(), want->top_k);
}

TEST(ConvertTest, MtpBitsMayDifferFromTheTrunk) {
  for (const auto& [bits, mtp_bits] : {std::pair{4, 8}, std::pair{0, 4}, std::pair{4, 0}}) {
    ConvertOptions o = Options(testing::SyntheticModel("moe-tiny", "hf"), bits);
    o.mtp_bits = mtp_bits;
    auto summary = ConvertCheckpoint(o);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    auto pack = Load(o.out_dir);
    ASSERT_TRUE(pack) << bits << "/" << mtp_bits;
    ASSERT_TRUE(pack->has_mtp());
    const Matrix& fc = pack->weights().mtp.fc;
    EXPECT_EQ(fc.quantized, mtp_bits > 0);
    if (mtp_bits) {
      EXPECT_EQ(fc.quant.bits, mtp_bits);
    }
    EXPECT_EQ(pack->weights().embed.quantized, bits > 0);
    const Json runtime = ReadJson(o.out_dir + "/mtplx_runtime.json");
    EXPECT_EQ(runtime["mtp_contract"]["mtp_quant_bits"], mtp_bits);
    const Outputs out = RunTokens(*pack);
    for (float v : out.mtp_logits) ASSERT_TRUE(std::isfinite(v));
  }
}

// `convert --preset`: the settings of the reference packs, on synthetic checkpoints of their
// kind: the layout each one promises, the contract's defaults, and logits near the source's.
TEST(ConvertTest, PresetsReproduceTheReferencePacks) {
  for (const auto& [preset_name, model_preset] :
       {std::pair{"optimized-speed", "dense-tiny"}, std::pair{"moe-a3b", "moe-tiny"}}) {
    SCOPED_TRACE(preset_name);
    auto preset = FindConvertPreset(preset_name);
    ASSERT_TRUE(preset.ok());
    const std::string src = testing::SyntheticModel(model_preset, "hf");
    ConvertOptions o = Options(src, preset->bits, preset->group_size);
    o.mtp_bits = preset->mtp_bits;
    o.mtp_group_size = preset->mtp_group_size;
    o.mtp_depth = preset->mtp_depth;
    o.sampler = preset->sampler;
    auto summary = ConvertCheckpoint(o);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    auto source = Load(src);
    auto pack = Load(o.out_dir);
    ASSERT_TRUE(source && pack && pack->has_mtp());
    const model::ModelWeights& w = pack->weights();
    EXPECT_EQ(w.embed.quant.bits, preset->bits);
    EXPECT_EQ(w.embed.quant.group_size, 64);
    const Matrix& fc = w.mtp.fc;
    EXPECT_EQ(fc.quantized, preset->mtp_bits > 0);
    if (preset->mtp_bits > 0) {
      EXPECT_EQ(fc.quant.bits, preset->mtp_bits);
      EXPECT_EQ(fc.quant.group_size, preset->mtp_group_size);
    }
    for (const model::LayerWeights& layer : w.layers) {
      if (!layer.is_moe) continue;
      EXPECT_EQ(layer.moe.router.quant.bits, kGateBits);  // routing keeps 8 bits
      EXPECT_EQ(layer.moe.experts[0].gate.quant.bits, preset->bits);
    }
    if (w.mtp.layer.is_moe) {
      EXPECT_EQ(w.mtp.layer.moe.router.quant.bits, kGateBits);
      EXPECT_EQ(w.mtp.layer.moe.experts[0].gate.quant.group_size, preset->mtp_group_size);
    }
    const Json runtime = ReadJson(o.out_dir + "/mtplx_runtime.json");
    EXPECT_EQ(runtime["mtp_depth_default"], 2);
    EXPECT_EQ(runtime["sampler"]["temperature"], 0.6);
    EXPECT_EQ(runtime["sampler"]["top_k"], 20);
    EXPECT_EQ(runtime["mtp_contract"]["mtp_quant_bits"], preset->mtp_bits);
    const Outputs a = RunTokens(*source), b = RunTokens(*pack);
    for (float v : b.mtp_logits) ASSERT_TRUE(std::isfinite(v));
    // Uniform random weights amplify rounding layer after layer (see
    // QuantizedPacksStayCloseToTheSource): 6 bits stay close, 4 bits correlated.
    const Closeness c = Compare(a.logits, b.logits, source->config().vocab_size);
    EXPECT_GT(c.mean_cos, preset->bits >= 6 ? 0.8 : 0.2);
  }
}

// Qwen 3.6 stores the MTP experts fused like the trunk; the pack splits them into switch_mlp.
TEST(ConvertTest, FusedMtpExpertsBecomeSwitchStacks) {
  synth::SynthOptions synth;
  synth.preset = "moe-tiny";
  synth.fused_mtp_experts = true;
  synth.out_dir = testing::MakeTempDir("mtplx-convert-fused");
  synth.progress = false;
  synth.threads = 1;
  ASSERT_TRUE(synth::WriteSyntheticCheckpoint(synth).ok());
  const ConvertOptions o = Options(synth.out_dir, 0);
  ASSERT_TRUE(ConvertCheckpoint(o).ok());
  auto sidecar = io::SafetensorsFile::Open(o.out_dir + "/mtp.safetensors", nullptr);
  ASSERT_TRUE(sidecar.ok());
  EXPECT_TRUE((*sidecar)->Has("mtp.layers.0.mlp.switch_mlp.gate_proj.weight"));
  EXPECT_FALSE((*sidecar)->Has("mtp.layers.0.mlp.experts.gate_up_proj"));
  auto source = Load(synth.out_dir);
  auto pack = Load(o.out_dir);
  ASSERT_TRUE(source && pack);
  const Outputs a = RunTokens(*source), b = RunTokens(*pack);
  EXPECT_EQ(a.logits, b.logits);
  EXPECT_EQ(a.mtp_logits, b.mtp_logits);
}

TEST(ConvertTest, NormGainsThatBf16CannotHoldAreStoredInF32) {
  const std::string src = CopyModel(testing::SyntheticModel("dense-tiny", "hf"));
  const std::string norm = "model.language_model.layers.0.input_layernorm.weight";
  // A trained-looking delta: 1 + 0.01171875 needs more mantissa than bf16 has near 1.
  RewriteFile(src + "/model.safetensors",
              [&](const std::string& name, TensorView view, std::vector<uint8_t>& bytes) {
                if (name == norm) {
                  const uint16_t w = F32ToBf16(0.01171875f);
                  for (int64_t i = 0; i < view.NumElements(); i += 3)
                    std::memcpy(bytes.data() + 2 * i, &w, 2);
                }
                return true;
              });
  const ConvertOptions o = Options(src, 0);
  ASSERT_TRUE(ConvertCheckpoint(o).ok());
  auto file = io::SafetensorsFile::Open(o.out_dir + "/model.safetensors", nullptr);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file.value()->Get("language_model.model.layers.0.input_layernorm.weight")->dtype,
            DType::kF32);
  EXPECT_EQ(file.value()->Get("language_model.model.layers.1.input_layernorm.weight")->dtype,
            DType::kBF16);
  auto source = Load(src);
  auto pack = Load(o.out_dir);
  ASSERT_TRUE(source && pack);
  EXPECT_EQ(RunTokens(*source).logits, RunTokens(*pack).logits);
}

TEST(ConvertTest, LargePacksAreShardedWithAnIndex) {
  const std::string src = testing::SyntheticModel("dense-tiny", "hf");
  ConvertOptions o = Options(src, 0);
  o.shard_bytes = 600 << 10;
  auto summary = ConvertCheckpoint(o);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_FALSE(FileExists(o.out_dir + "/model.safetensors"));
  int shards = 0;
  for (const std::string& file : summary->files)
    if (file.rfind("model-0000", 0) == 0) {
      ++shards;
      EXPECT_TRUE(FileExists(o.out_dir + "/" + file)) << file;
    }
  EXPECT_GE(shards, 2) << Json(summary->files).dump();
  const Json index = ReadJson(o.out_dir + "/model.safetensors.index.json");
  EXPECT_FALSE(index["weight_map"].contains("mtp.fc.weight"));  // the sidecar is separate
  auto source = Load(src);
  auto pack = Load(o.out_dir);
  ASSERT_TRUE(source && pack);
  EXPECT_EQ(RunTokens(*source).logits, RunTokens(*pack).logits);
}

// ---- Bad inputs: a clear error and no output ------------------------------------------------

void ExpectFailsCleanly(const ConvertOptions& o, const std::string& needle) {
  auto summary = ConvertCheckpoint(o);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find(needle), std::string::npos)
      << summary.status().message();
  const std::string parent = fs::path(o.out_dir).parent_path();
  if (!fs::exists(o.out_dir)) {
    EXPECT_EQ(Entries(parent), 0) << "staging folder left behind";
  }
}

TEST(ConvertErrorsTest, MissingConfigIsNamed) {
  const std::string src = CopyModel(testing::SyntheticModel("dense-tiny", "hf"));
  fs::remove(src + "/config.json");
  ExpectFailsCleanly(Options(src, 0), "config.json: missing");
}

TEST(ConvertErrorsTest, MissingSourceFolderIsNamed) {
  ExpectFailsCleanly(Options("/nonexistent/mtplx-src", 0), "/nonexistent/mtplx-src");
}

TEST(ConvertErrorsTest, MissingTensorIsNamedAndNothingIsWritten) {
  const std::string src = CopyModel(testing::SyntheticModel("dense-tiny", "hf"));
  const std::string gone = "model.language_model.layers.2.linear_attn.in_proj_z.weight";
  RewriteFile(src + "/model.safetensors", [&](const std::string& name, TensorView,
                                              std::vector<uint8_t>&) { return name != gone; });
  const ConvertOptions o = Options(src, 4);
  ExpectFailsCleanly(o, "missing tensor '" + gone + "'");
  EXPECT_FALSE(fs::exists(o.out_dir));
}

TEST(ConvertErrorsTest, MissingMtpTensorIsNamed) {
  const std::string src = CopyModel(testing::SyntheticModel("dense-tiny", "hf"));
  RewriteFile(src + "/model.safetensors",
              [&](const std::string& name, TensorView, std::vector<uint8_t>&) {
                return name != "mtp.fc.weight";
              });
  ExpectFailsCleanly(Options(src, 0), "missing tensor 'mtp.fc.weight'");
}

TEST(ConvertErrorsTest, WrongShapeAndUnexpectedTensorsAreNamed) {
  const std::string src = CopyModel(testing::SyntheticModel("dense-tiny", "hf"));
  const std::string k_proj = "model.language_model.layers.3.self_attn.k_proj.weight";
  auto config = ReadTextFile(src + "/config.json");
  ASSERT_TRUE(config.ok());
  std::string text = *config;
  text.replace(text.find("\"num_key_value_heads\": 2"), 24, "\"num_key_value_heads\": 1");
  ASSERT_TRUE(WriteTextFile(src + "/config.json", text).ok());
  ExpectFailsCleanly(Options(src, 0), "'" + k_proj + "' has shape [64, 128], expected [32, 128]");

  // An extra tensor the layout does not know would be lost: refuse.
  const std::string src2 = CopyModel(testing::SyntheticModel("dense-tiny", "hf"));
  io::SafetensorsWriter extra(src2 + "/extra.safetensors");
  extra.Declare("model.language_model.layers.0.mlp.bias", DType::kBF16, {4});
  ASSERT_TRUE(extra.Begin().ok());
  const uint16_t zeros[4] = {};
  ASSERT_TRUE(extra.Append(zeros, sizeof(zeros)).ok());
  ASSERT_TRUE(extra.Finish().ok());
  ExpectFailsCleanly(Options(src2, 0),
                     "unexpected tensor 'model.language_model.layers.0.mlp.bias'");
}

TEST(ConvertErrorsTest, MlxOrQuantizedSourcesAreRefused) {
  ExpectFailsCleanly(Options(testing::SyntheticModel("dense-tiny", "mlx", 4, 64), 0),
                     "has a quantization table");
  ExpectFailsCleanly(Options(testing::SyntheticModel("dense-tiny", "mlx", 0, 64), 0), "MLX naming");
}

TEST(ConvertErrorsTest, ExistingOutputNeedsForce) {
  const std::string src = testing::SyntheticModel("dense-tiny", "hf");
  ConvertOptions o = Options(src, 0);
  ASSERT_TRUE(MakeDirectories(o.out_dir).ok());
  ASSERT_TRUE(WriteTextFile(o.out_dir + "/keep.txt", "mine").ok());
  auto refused = ConvertCheckpoint(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--force"), std::string::npos);
  EXPECT_TRUE(FileExists(o.out_dir + "/keep.txt"));
  EXPECT_EQ(Entries(fs::path(o.out_dir).parent_path()), 1);
  o.force = true;
  ASSERT_TRUE(ConvertCheckpoint(o).ok());
  EXPECT_FALSE(FileExists(o.out_dir + "/keep.txt"));
  EXPECT_TRUE(FileExists(o.out_dir + "/mtplx_runtime.json"));
  EXPECT_EQ(Entries(fs::path(o.out_dir).parent_path()), 1);
}

TEST(ConvertErrorsTest, TheSourceIsNeverTheOutput) {
  const std::string src = CopyModel(testing::SyntheticModel("dense-tiny", "hf"));
  ConvertOptions o = Options(src, 0);
  o.out_dir = src;
  o.force = true;
  ASSERT_FALSE(ConvertCheckpoint(o).ok());
  o.out_dir = fs::path(src).parent_path().string();
  auto r = ConvertCheckpoint(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("holds) the source"), std::string::npos);
  EXPECT_TRUE(FileExists(src + "/model.safetensors"));
}

TEST(ConvertErrorsTest, AFailingVerifierLeavesNoPack) {
  ConvertOptions o = Options(testing::SyntheticModel("dense-tiny", "hf"), 0);
  o.verify = [](const std::string&) -> Result<std::string> {
    return DataLoss("self-check: broken on purpose");
  };
  ExpectFailsCleanly(o, "broken on purpose");
  EXPECT_FALSE(fs::exists(o.out_dir));
}

TEST(ConvertErrorsTest, BadOptionsAreRefused) {
  const std::string src = testing::SyntheticModel("dense-tiny", "hf");
  ConvertOptions o = Options(src, 7);
  ExpectFailsCleanly(o, "--bits 7");
  o = Options(src, 4, 48);
  ExpectFailsCleanly(o, "--group-size 48");
  o = Options(src, 4);
  o.mtp_depth = 9;
  ExpectFailsCleanly(o, "--mtp-depth 9");
}

}  // namespace
}  // namespace mtplx::pack
