// Proof against an independent reference: the logits of every synthetic preset agree, at every
// position, with those of Hugging Face transformers' own Qwen3.5 / Qwen3.5-MoE / Qwen3-Next
// implementations (float32), within 1e-4 relative per position:
//   max_v |ours[i, v] - ref[i, v]| / max_v |ref[i, v]| <= 1e-4   for every position i.
// The goldens (tests/data/reference/<preset>.bin + .json) come from
// tools/reference/make_reference_goldens.py, run by hand; no Python runs here.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/file.h"
#include "model/model.h"
#include "support/synthetic_model.h"
#include "support/test_support.h"

namespace mtplx::model {
namespace {

static_assert(std::endian::native == std::endian::little, "goldens are little-endian f32");

constexpr double kTolerance = 1e-4;

struct Golden {
  std::vector<int32_t> tokens;
  int64_t rows = 0;
  int64_t vocab = 0;
  std::vector<float> logits;  // [rows, vocab]
};

// The sidecar is written by our own script with json.dump(indent=1); a key is found by its
// first occurrence (rows, vocab and tokens are top-level and unique).
const char* FindValue(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return nullptr;
  return json.c_str() + at + key.size() + 3;
}

bool ReadGolden(const std::string& preset, Golden* golden) {
  const auto json = ReadTextFile(testing::TestDataPath("reference/" + preset + ".json"));
  EXPECT_TRUE(json.ok()) << json.status().ToString();
  if (!json.ok()) return false;
  const char* rows = FindValue(*json, "rows");
  const char* vocab = FindValue(*json, "vocab");
  const char* tokens = FindValue(*json, "tokens");
  EXPECT_TRUE(rows && vocab && tokens) << preset << ".json lacks rows / vocab / tokens";
  if (!rows || !vocab || !tokens) return false;
  golden->rows = std::strtoll(rows, nullptr, 10);
  golden->vocab = std::strtoll(vocab, nullptr, 10);
  const char* p = std::strchr(tokens, '[');
  EXPECT_NE(p, nullptr);
  if (!p) return false;
  ++p;
  while (true) {
    while (*p == ' ' || *p == '\n' || *p == ',' || *p == '\r' || *p == '\t') ++p;
    if (*p == ']' || *p == '\0') break;
    char* end = nullptr;
    golden->tokens.push_back(static_cast<int32_t>(std::strtol(p, &end, 10)));
    EXPECT_NE(end, p) << "bad token list in " << preset << ".json";
    if (end == p) return false;
    p = end;
  }
  EXPECT_EQ(static_cast<int64_t>(golden->tokens.size()), golden->rows);

  const std::string bin = testing::TestDataPath("reference/" + preset + ".bin");
  std::FILE* f = std::fopen(bin.c_str(), "rb");
  EXPECT_NE(f, nullptr) << bin;
  if (!f) return false;
  golden->logits.resize(golden->rows * golden->vocab);
  const size_t got = std::fread(golden->logits.data(), sizeof(float), golden->logits.size(), f);
  const bool at_end = std::fgetc(f) == EOF;
  std::fclose(f);
  EXPECT_EQ(got, golden->logits.size()) << bin << " is shorter than [rows, vocab]";
  EXPECT_TRUE(at_end) << bin << " is longer than [rows, vocab]";
  return got == golden->logits.size() && at_end &&
         static_cast<int64_t>(golden->tokens.size()) == golden->rows;
}

std::unique_ptr<Model> LoadPreset(const std::string& preset) {
  LoadOptions options;
  options.show_progress = false;
  options.threads = 2;
  auto model = Model::Load(testing::SyntheticModel(preset, "hf", 0, 64, 0), options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

// Checks `logits` ([n, vocab]) against golden rows [first, first + n); returns the worst
// per-position relative error.
double ExpectMatchesReference(const std::vector<float>& logits, const Golden& golden, int64_t first,
                              int64_t n, const std::string& label) {
  EXPECT_EQ(static_cast<int64_t>(logits.size()), n * golden.vocab) << label;
  if (static_cast<int64_t>(logits.size()) != n * golden.vocab) return INFINITY;
  double worst = 0;
  for (int64_t r = 0; r < n; ++r) {
    const float* ours = logits.data() + r * golden.vocab;
    const float* ref = golden.logits.data() + (first + r) * golden.vocab;
    double max_diff = 0, max_ref = 0;
    for (int64_t v = 0; v < golden.vocab; ++v) {
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(ours[v]) - ref[v]));
      max_ref = std::max(max_ref, std::fabs(static_cast<double>(ref[v])));
    }
    const double rel = max_diff / std::max(max_ref, 1e-30);
    EXPECT_LE(rel, kTolerance) << label << ": position " << first + r << " (token "
                               << golden.tokens[first + r] << "), max |diff| " << max_diff
                               << ", max |ref| " << max_ref;
    if (!(rel <= worst)) worst = rel;  // NaN propagates
  }
  std::printf("[ reference] %-44s max relative error %.3e over %lld positions\n", label.c_str(),
              worst, static_cast<long long>(n));
  return worst;
}

class ReferenceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(ReadGolden(GetParam(), &golden_));
    model_ = LoadPreset(GetParam());
    ASSERT_TRUE(model_);
    ASSERT_EQ(model_->config().vocab_size, golden_.vocab);
  }

  std::vector<float> Run(state::SequenceState& st, int64_t first, int64_t n, DeltaNetPath path) {
    ForwardOptions options;
    options.delta_path = path;
    ForwardOutput out;
    const Status s = model_->Forward(st, std::span<const int32_t>(golden_.tokens.data() + first, n),
                                     options, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return std::move(out.logits);
  }

  std::string Label(const std::string& what) const { return GetParam() + " " + what; }

  Golden golden_;
  std::unique_ptr<Model> model_;
};

TEST_P(ReferenceTest, GoldenIsSane) {
  // Crosses the 64-row chunk of the chunked delta rule, tokens are ordinary (non-special) ids.
  EXPECT_GT(golden_.rows, 64);
  for (int32_t t : golden_.tokens) EXPECT_TRUE(t >= 0 && t < 960) << t;
  for (float x : golden_.logits) ASSERT_TRUE(std::isfinite(x));
}

TEST_P(ReferenceTest, PrefillMatchesTransformersOnEveryDeltaNetPath) {
  const struct {
    DeltaNetPath path;
    const char* name;
  } paths[] = {{DeltaNetPath::kAuto, "prefill (auto)"},
               {DeltaNetPath::kRecurrent, "prefill (recurrent)"},
               {DeltaNetPath::kChunked, "prefill (chunked)"}};
  for (const auto& p : paths) {
    auto st = model_->NewState();
    const auto logits = Run(*st, 0, golden_.rows, p.path);
    ExpectMatchesReference(logits, golden_, 0, golden_.rows, Label(p.name));
  }
}

TEST_P(ReferenceTest, TokenByTokenDecodeMatchesTransformers) {
  auto st = model_->NewState();
  std::vector<float> logits;
  for (int64_t i = 0; i < golden_.rows; ++i) {
    const auto row = Run(*st, i, 1, DeltaNetPath::kAuto);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  ExpectMatchesReference(logits, golden_, 0, golden_.rows, Label("decode (one row per call)"));
}

TEST_P(ReferenceTest, SplitPrefillCarriesStateLikeTransformers) {
  // A short prompt, then the rest in one call on each path: the chunked and recurrent rules must
  // pick up the conv / delta / KV state the first call left.
  const int64_t head = 24;
  for (DeltaNetPath path : {DeltaNetPath::kRecurrent, DeltaNetPath::kChunked}) {
    const std::string name = path == DeltaNetPath::kChunked ? "chunked" : "recurrent";
    auto st = model_->NewState();
    const auto first = Run(*st, 0, head, DeltaNetPath::kAuto);
    ExpectMatchesReference(first, golden_, 0, head, Label("first 24 rows (auto)"));
    const auto rest = Run(*st, head, golden_.rows - head, path);
    ExpectMatchesReference(rest, golden_, head, golden_.rows - head,
                           Label("remaining rows (" + name + ")"));
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, ReferenceTest,
                         ::testing::Values("dense-tiny", "moe-tiny", "next-tiny"),
                         testing::PresetTestName<::testing::TestParamInfo<std::string>>);

}  // namespace
}  // namespace mtplx::model
