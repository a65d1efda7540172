// Loading checkpoints: layouts the loader must accept and bad files it must reject clearly.
#include "model/loader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "base/file.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/model.h"
#include "support/synthetic_model.h"
#include "support/test_support.h"
#include "synth/synth.h"

namespace mtplx::model {
namespace {

namespace fs = std::filesystem;

std::string CopyModel(const std::string& preset, const std::string& format = "hf") {
  const std::string src = testing::SyntheticModel(preset, format);
  const std::string dst = testing::MakeTempDir("mtplx-loader");
  fs::copy(src, dst, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  return dst;
}

Result<std::unique_ptr<Model>> Load(const std::string& dir) {
  LoadOptions options;
  options.show_progress = false;
  options.threads = 1;
  return Model::Load(dir, options);
}

// Rewrites a safetensors file through `edit`, which may drop or change tensors.
using Edit = std::function<bool(const std::string& name, TensorView& view)>;
void RewriteFile(const std::string& path, const Edit& edit) {
  auto file = io::SafetensorsFile::Open(path, nullptr);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const std::string tmp = path + ".tmp";
  io::SafetensorsWriter writer(tmp);
  std::vector<std::pair<std::string, TensorView>> kept;
  for (const auto& [name, entry] : (*file)->header().tensors) {
    TensorView view = *(*file)->Get(name);
    if (!edit(name, view)) continue;
    writer.Declare(name, view.dtype, view.shape);
    kept.emplace_back(name, view);
  }
  ASSERT_TRUE(writer.Begin().ok());
  for (auto& [name, view] : kept) {
    std::vector<uint8_t> bytes(view.NumBytes(), 0);
    const TensorView orig = *(*file)->Get(name);
    std::memcpy(bytes.data(), orig.data,
                std::min(bytes.size(), static_cast<size_t>(orig.NumBytes())));
    ASSERT_TRUE(writer.Append(bytes.data(), bytes.size()).ok());
  }
  ASSERT_TRUE(writer.Finish().ok());
  fs::rename(tmp, path);
}

void ExpectLoadError(const std::string& dir, const std::string& needle) {
  auto model = Load(dir);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find(needle), std::string::npos) << model.status().message();
}

TEST(NormalizeTensorNameTest, MapsEveryLayoutToOneScheme) {
  EXPECT_EQ(NormalizeTensorName("model.language_model.layers.0.mlp.up_proj.weight"),
            "layers.0.mlp.up_proj.weight");
  EXPECT_EQ(NormalizeTensorName("language_model.model.norm.weight"), "norm.weight");
  EXPECT_EQ(NormalizeTensorName("language_model.lm_head.weight"), "lm_head.weight");
  EXPECT_EQ(NormalizeTensorName("language_model.mtp.fc.weight"), "mtp.fc.weight");
  EXPECT_EQ(NormalizeTensorName("model.embed_tokens.weight"), "embed_tokens.weight");
  EXPECT_EQ(NormalizeTensorName("mtp.norm.weight"), "mtp.norm.weight");
  EXPECT_EQ(NormalizeTensorName("model.visual.blocks.0.attn.qkv.weight"), "");
}

TEST(LoaderTest, LoadsEveryPresetInEveryFormat) {
  for (const char* preset : {"dense-tiny", "moe-tiny", "next-tiny"}) {
    for (const char* format : {"hf", "mlx"}) {
      auto model = Load(testing::SyntheticModel(preset, format));
      ASSERT_TRUE(model.ok()) << preset << " " << format << ": " << model.status().ToString();
      EXPECT_TRUE((*model)->weights().mtp.present) << preset << " " << format;
    }
  }
}

TEST(LoaderTest, MtpNormConventionIsResolvedPerOrigin) {
  auto hf = Load(testing::SyntheticModel("dense-tiny", "hf"));
  auto mlx = Load(testing::SyntheticModel("dense-tiny", "mlx"));
  ASSERT_TRUE(hf.ok() && mlx.ok());
  EXPECT_EQ((*hf)->weights().mtp.norm, (*mlx)->weights().mtp.norm);
  EXPECT_EQ((*hf)->weights().mtp.layer.attention.q_norm,
            (*mlx)->weights().mtp.layer.attention.q_norm);
  EXPECT_EQ((*hf)->weights().final_norm, (*mlx)->weights().final_norm);
}

TEST(LoaderTest, MtpSidecarIsFound) {
  const std::string dir = CopyModel("dense-tiny");
  const std::string main_file = dir + "/model.safetensors";
  // Move the mtp.* tensors into mtp.safetensors.
  auto file = io::SafetensorsFile::Open(main_file, nullptr);
  ASSERT_TRUE(file.ok());
  io::SafetensorsWriter sidecar(dir + "/mtp.safetensors");
  std::vector<TensorView> views;
  for (const auto& [name, entry] : (*file)->header().tensors)
    if (name.rfind("mtp.", 0) == 0) {
      sidecar.Declare(name, entry.dtype, entry.shape);
      views.push_back(*(*file)->Get(name));
    }
  ASSERT_TRUE(sidecar.Begin().ok());
  for (const auto& v : views) ASSERT_TRUE(sidecar.Append(v.data, v.NumBytes()).ok());
  ASSERT_TRUE(sidecar.Finish().ok());
  file->reset();
  RewriteFile(main_file,
              [](const std::string& name, TensorView&) { return name.rfind("mtp.", 0) != 0; });
  auto model = Load(dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_TRUE((*model)->weights().mtp.present);
}

TEST(LoaderTest, ShardedCheckpointWithIndexGivesTheSameModel) {
  synth::SynthOptions options;
  options.preset = "dense-tiny";
  options.out_dir = testing::MakeTempDir("mtplx-shards");
  options.progress = false;
  options.shard_bytes = 600 << 10;
  ASSERT_TRUE(synth::WriteSyntheticCheckpoint(options).ok());
  ASSERT_TRUE(FileExists(options.out_dir + "/model.safetensors.index.json"));
  ASSERT_TRUE(FileExists(options.out_dir + "/model-00002-of-00006.safetensors") ||
              FileExists(options.out_dir + "/model-00002-of-00005.safetensors") ||
              FileExists(options.out_dir + "/model-00002-of-00007.safetensors"));
  auto sharded = Load(options.out_dir);
  auto single = Load(testing::SyntheticModel("dense-tiny"));
  ASSERT_TRUE(sharded.ok()) << sharded.status().ToString();
  ASSERT_TRUE(single.ok());
  const std::vector<int32_t> tokens = {3, 500, 77, 12};
  ForwardOutput a, b;
  auto sa = (*sharded)->NewState();
  auto sb = (*single)->NewState();
  ASSERT_TRUE((*sharded)->Forward(*sa, tokens, {}, &a).ok());
  ASSERT_TRUE((*single)->Forward(*sb, tokens, {}, &b).ok());
  EXPECT_EQ(a.logits, b.logits);
}

TEST(LoaderTest, IndexNamingAMissingShardIsReported) {
  const std::string dir = CopyModel("dense-tiny");
  ASSERT_TRUE(
      WriteTextFile(dir + "/model.safetensors.index.json",
                    R"({"weight_map": {"lm_head.weight": "model-00009-of-00009.safetensors"}})")
          .ok());
  ExpectLoadError(dir, "model-00009-of-00009.safetensors");
}

TEST(LoaderTest, MissingTensorIsNamed) {
  const std::string dir = CopyModel("dense-tiny");
  RewriteFile(dir + "/model.safetensors", [](const std::string& name, TensorView&) {
    return name != "model.language_model.layers.2.linear_attn.in_proj_z.weight";
  });
  ExpectLoadError(dir, "layers.2.linear_attn.in_proj_z.weight");
}

TEST(LoaderTest, WrongShapeIsNamed) {
  const std::string dir = CopyModel("dense-tiny");
  RewriteFile(dir + "/model.safetensors", [](const std::string& name, TensorView& v) {
    if (name == "model.language_model.layers.3.self_attn.k_proj.weight") v.shape = {32, 128};
    return true;
  });
  ExpectLoadError(dir, "k_proj.weight' has shape [32, 128]");
}

TEST(LoaderTest, TruncatedFileIsReported) {
  const std::string dir = CopyModel("dense-tiny");
  const std::string path = dir + "/model.safetensors";
  fs::resize_file(path, fs::file_size(path) / 2);
  ExpectLoadError(dir, "model.safetensors");
}

TEST(LoaderTest, CorruptHeaderIsReported) {
  const std::string dir = CopyModel("dense-tiny");
  const std::string path = dir + "/model.safetensors";
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(8);
  f.write("{{{{", 4);
  f.close();
  ExpectLoadError(dir, "not valid JSON");
}

TEST(LoaderTest, UnknownArchitectureIsReported) {
  const std::string dir = CopyModel("dense-tiny");
  auto text = ReadTextFile(dir + "/config.json");
  ASSERT_TRUE(text.ok());
  std::string s = *text;
  s.replace(s.find("Qwen3_5ForConditionalGeneration"), 31, "LlamaForCausalLM");
  ASSERT_TRUE(WriteTextFile(dir + "/config.json", s).ok());
  ExpectLoadError(dir, "unsupported architecture 'LlamaForCausalLM'");
}

TEST(LoaderTest, MissingFolderIsReported) {
  ExpectLoadError("/nonexistent/model", "the model folder '/nonexistent/model' does not exist");
  ExpectLoadError("/tmp", "has no config.json");
}

}  // namespace
}  // namespace mtplx::model
