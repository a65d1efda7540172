// The FP16 sibling of the bundled pack: every bf16 tensor rounded to fp16 exactly as the
// reference rounding does, every other tensor byte for byte, the manifest complete and
// consistent with the files, the contract patched, the logits close to the bf16 pack's; a
// value beyond fp16's range fails the conversion (naming the tensor) and leaves nothing behind.
#include "pack/fp16.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/float16.h"
#include "base/sha256.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/model.h"
#include "support/test_support.h"

namespace mtplx::pack {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

std::unique_ptr<io::SafetensorsFile> Open(const std::string& path) {
  auto f = io::SafetensorsFile::Open(path, nullptr);
  EXPECT_TRUE(f.ok()) << f.status().message();
  return std::move(f).value();
}

std::string Convert(const std::string& from) {
  const std::string out = testing::MakeTempDir("mtplx-fp16-") + "/fp16";
  Fp16Options o;
  o.source_dir = from;
  o.output_dir = out;
  o.progress = false;
  auto summary = MakeFp16Sibling(o);
  EXPECT_TRUE(summary.ok()) << summary.status().message();
  return out;
}

TEST(Fp16Test, TheBundledPackConvertsExactlyAndRecordsIt) {
  const std::string from = testing::TrainedModelDir();
  if (!fs::exists(from + "/config.json")) GTEST_SKIP() << "no bundled model";
  const std::string out = Convert(from);
  const Json manifest = ReadJson(out + "/MTPLX_FP16_CONVERSION_MANIFEST.json");
  for (const char* key : {"created_at", "policy", "files_copied", "safetensors", "summary"})
    EXPECT_TRUE(manifest.contains(key)) << key;
  int64_t total = 0, converted = 0, preserved = 0;
  for (const Json& shard : manifest["safetensors"]) {
    const std::string name = shard["name"];
    auto a = Open(from + "/" + name);
    auto b = Open(out + "/" + name);
    EXPECT_EQ(shard["source_sha256"], *Sha256File(from + "/" + name));
    EXPECT_EQ(shard["output_sha256"], *Sha256File(out + "/" + name));
    EXPECT_EQ(shard["tensor_count"].get<size_t>(), a->header().tensors.size());
    for (const Json& t : shard["tensors"]) {
      const std::string tensor = t["name"];
      const io::TensorEntry& ea = a->header().tensors.at(tensor);
      const io::TensorEntry& eb = b->header().tensors.at(tensor);
      EXPECT_EQ(ea.shape, eb.shape) << tensor;
      const uint8_t* pa = a->buffer().data() + ea.begin;
      const uint8_t* pb = b->buffer().data() + eb.begin;
      if (ea.dtype == DType::kBF16) {
        ASSERT_EQ(eb.dtype, DType::kF16) << tensor;
        ASSERT_TRUE(t["converted"].get<bool>());
        const size_t n = (ea.end - ea.begin) / 2;
        for (size_t i = 0; i < n; ++i) {
          uint16_t va, vb;
          std::memcpy(&va, pa + 2 * i, 2);
          std::memcpy(&vb, pb + 2 * i, 2);
          ASSERT_EQ(vb, F32ToF16(Bf16ToF32(va))) << tensor << "[" << i << "]";
        }
        ++converted;
      } else {
        ASSERT_EQ(eb.dtype, ea.dtype) << tensor;
        ASSERT_EQ(ea.end - ea.begin, eb.end - eb.begin);
        EXPECT_EQ(std::memcmp(pa, pb, ea.end - ea.begin), 0) << tensor << " is not byte-identical";
        ++preserved;
      }
      ++total;
    }
  }
  EXPECT_EQ(manifest["summary"]["tensors_total"], total);
  EXPECT_EQ(manifest["summary"]["converted_bf16_to_fp16"], converted);
  EXPECT_EQ(manifest["summary"]["preserved"], preserved);
  EXPECT_GT(converted, 0);
  EXPECT_GT(preserved, 0);  // the packed 8-bit codes
  const Json contract = ReadJson(out + "/mtplx_runtime.json");
  EXPECT_EQ(contract["precision_variant"], "fp16");
  EXPECT_EQ(contract["precision_policy"]["variant"], "fp16");
  // No absolute path of this machine in the pack.
  std::ifstream in(out + "/MTPLX_FP16_CONVERSION_MANIFEST.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str().find(from), std::string::npos);

  // The fp16 pack computes what the bf16 one does, within fp16's rounding of norms and scales.
  model::LoadOptions options;
  options.show_progress = false;
  auto bf16 = model::Model::Load(from, options);
  auto fp16 = model::Model::Load(out, options);
  ASSERT_TRUE(bf16.ok() && fp16.ok()) << fp16.status().message();
  const std::vector<int32_t> tokens = {1, 17, 400, 23, 99, 512, 7, 3000};
  model::ForwardOutput oa, ob;
  auto sa = (*bf16)->NewState();
  auto sb = (*fp16)->NewState();
  ASSERT_TRUE((*bf16)->Forward(*sa, tokens, {}, &oa).ok());
  ASSERT_TRUE((*fp16)->Forward(*sb, tokens, {}, &ob).ok());
  double max_diff = 0.0, max_abs = 0.0;
  for (size_t i = 0; i < oa.logits.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(oa.logits[i] - ob.logits[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(oa.logits[i])));
  }
  EXPECT_LT(max_diff, 0.02 * max_abs) << "max |logit diff| " << max_diff << " of " << max_abs;
}

TEST(Fp16Test, ValuesBeyondTheRangeAreRefusedNotClamped) {
  const std::string dir = testing::MakeTempDir("mtplx-fp16-overflow-");
  std::ofstream(dir + "/config.json") << "{}";
  io::SafetensorsWriter w(dir + "/model.safetensors");
  w.Declare("fine.weight", DType::kBF16, {2});
  w.Declare("huge.weight", DType::kBF16, {2});
  ASSERT_TRUE(w.Begin().ok());
  const uint16_t fine[2] = {F32ToBf16(1.5f), F32ToBf16(-2.0f)};
  const uint16_t huge[2] = {F32ToBf16(1.0f), F32ToBf16(1.0e6f)};
  ASSERT_TRUE(w.Append(fine, sizeof fine).ok());
  ASSERT_TRUE(w.Append(huge, sizeof huge).ok());
  ASSERT_TRUE(w.Finish().ok());
  Fp16Options o;
  o.source_dir = dir;
  o.output_dir = dir + "-fp16";
  o.progress = false;
  auto summary = MakeFp16Sibling(o);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("model.safetensors:huge.weight (1 values"),
            std::string::npos)
      << summary.status().message();
  EXPECT_EQ(summary.status().message().find("fine.weight"), std::string::npos);
  EXPECT_FALSE(fs::exists(o.output_dir));
  o.source_dir = dir + "/nope";
  EXPECT_FALSE(MakeFp16Sibling(o).ok());
}

}  // namespace
}  // namespace mtplx::pack
