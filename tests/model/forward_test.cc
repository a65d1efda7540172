// Forward-pass invariants on every synthetic preset: chunked prefill equals token-by-token
// decode, verify rows are bit-identical to single-row decode, snapshots restore exactly, and
// the Hugging Face and MLX copies of a model give the same logits.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "model/model.h"
#include "support/synthetic_model.h"

namespace mtplx::model {
namespace {

std::unique_ptr<Model> LoadPreset(const std::string& preset, const std::string& format = "hf",
                                  int bits = 0) {
  LoadOptions options;
  options.show_progress = false;
  options.threads = 2;
  auto model = Model::Load(testing::SyntheticModel(preset, format, bits), options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

std::vector<int32_t> Tokens(int n, int vocab_limit = 960, int salt = 0) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = (i * 37 + 11 + salt * 101) % vocab_limit;
  return t;
}

ForwardOutput RunRows(const Model& m, state::SequenceState& st, std::span<const int32_t> tokens,
                      DeltaNetPath path = DeltaNetPath::kAuto) {
  ForwardOptions options;
  options.delta_path = path;
  ForwardOutput out;
  const Status s = m.Forward(st, tokens, options, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// Logits of running `tokens` one at a time.
std::vector<float> DecodeOneByOne(const Model& m, std::span<const int32_t> tokens) {
  auto st = m.NewState();
  std::vector<float> logits;
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto out = RunRows(m, *st, tokens.subspan(i, 1));
    logits.insert(logits.end(), out.logits.begin(), out.logits.end());
  }
  return logits;
}

double MaxRelativeError(const std::vector<float>& got, const std::vector<float>& want) {
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_err = std::max(max_err, static_cast<double>(std::fabs(got[i] - want[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(want[i])));
  }
  return max_err / std::max(max_ref, 1e-30);
}

class PresetTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PresetTest, ChunkedPrefillEqualsTokenByTokenDecode) {
  auto m = LoadPreset(GetParam());
  ASSERT_TRUE(m);
  for (int length : {1, 63, 64, 65, 130}) {
    const auto tokens = Tokens(length);
    auto st = m->NewState();
    const auto prefill = RunRows(*m, *st, tokens, DeltaNetPath::kChunked);
    const auto decode = DecodeOneByOne(*m, tokens);
    ASSERT_EQ(prefill.logits.size(), decode.size());
    EXPECT_LT(MaxRelativeError(prefill.logits, decode), 1e-4) << "length " << length;
  }
}

TEST_P(PresetTest, VerifyRowsAreBitIdenticalToSingleRowDecode) {
  auto m = LoadPreset(GetParam());
  ASSERT_TRUE(m);
  const auto prompt = Tokens(20);
  const auto more = Tokens(8, 960, 1);
  const int64_t vocab = m->config().vocab_size;
  for (int rows = 1; rows <= 8; ++rows) {
    auto batched = m->NewState();
    RunRows(*m, *batched, prompt);
    const auto verify = RunRows(*m, *batched, std::span<const int32_t>(more.data(), rows));
    auto single = m->NewState();
    RunRows(*m, *single, prompt);
    for (int r = 0; r < rows; ++r) {
      const auto one = RunRows(*m, *single, std::span<const int32_t>(more.data() + r, 1));
      for (int64_t v = 0; v < vocab; ++v)
        ASSERT_EQ(verify.logits[r * vocab + v], one.logits[v])
            << "rows " << rows << " row " << r << " vocab " << v;
      for (int64_t i = 0; i < m->config().hidden_size; ++i)
        ASSERT_EQ(verify.hidden[r * m->config().hidden_size + i], one.hidden[i]);
    }
  }
}

// MTP history rows that only extend the head's cache (ForwardOptions::mtp_output_rows): the
// output row and every later step come out bit for bit as after a full forward of all the rows.
TEST_P(PresetTest, MtpHistoryRowsOnlyExtendTheCache) {
  auto m = LoadPreset(GetParam());
  ASSERT_TRUE(m);
  if (!m->has_mtp()) GTEST_SKIP() << "no MTP head";
  const auto prompt = Tokens(20);
  auto trunk = m->NewState();
  const auto out = RunRows(*m, *trunk, prompt);
  const int64_t h = m->config().hidden_size, vocab = m->config().vocab_size;
  const std::span<const int32_t> next(prompt.data() + 1, prompt.size() - 1);
  const int32_t step_token = 5;
  const float* step_hidden = out.hidden.data() + (prompt.size() - 1) * h;
  auto run_mtp = [&](state::SequenceState& st, std::span<const int32_t> tokens, const float* hidden,
                     const ForwardOptions& options) {
    ForwardOutput o;
    const Status s = m->ForwardMtp(st, tokens, hidden, options, &o);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return o;
  };
  auto full_state = m->NewMtpState();
  const auto full = run_mtp(*full_state, next, out.hidden.data(), {});
  const auto full_step =
      run_mtp(*full_state, std::span<const int32_t>(&step_token, 1), step_hidden, {});
  for (const int64_t output_rows : {0, 1, 3}) {
    ForwardOptions history;
    history.mtp_output_rows = output_rows;
    history.no_logits = output_rows == 0;
    auto st = m->NewMtpState();
    const auto part = run_mtp(*st, next, out.hidden.data(), history);
    ASSERT_EQ(part.rows, output_rows);
    for (int64_t r = 0; r < output_rows; ++r)
      for (int64_t v = 0; v < vocab; ++v)
        ASSERT_EQ(part.logits[r * vocab + v],
                  full.logits[(full.rows - output_rows + r) * vocab + v])
            << "output rows " << output_rows << " row " << r;
    const auto step = run_mtp(*st, std::span<const int32_t>(&step_token, 1), step_hidden, {});
    EXPECT_EQ(step.logits, full_step.logits) << "output rows " << output_rows;
  }
}

TEST_P(PresetTest, SnapshotRestoreIsExact) {
  auto m = LoadPreset(GetParam());
  ASSERT_TRUE(m);
  auto st = m->NewState();
  RunRows(*m, *st, Tokens(17));
  const auto snapshot = st->Snapshot();
  const auto next = Tokens(5, 960, 2);
  const auto first = RunRows(*m, *st, next);
  RunRows(*m, *st, Tokens(9, 960, 3));  // wander off
  st->Restore(snapshot);
  EXPECT_EQ(st->position(), 17);
  const auto again = RunRows(*m, *st, next);
  EXPECT_EQ(first.logits, again.logits);
}

TEST_P(PresetTest, HuggingFaceAndMlxCopiesGiveTheSameLogits) {
  auto hf = LoadPreset(GetParam(), "hf");
  auto mlx = LoadPreset(GetParam(), "mlx");
  ASSERT_TRUE(hf && mlx);
  EXPECT_FALSE(hf->weights().mlx_origin);
  EXPECT_TRUE(mlx->weights().mlx_origin);
  const auto tokens = Tokens(70);
  auto a = hf->NewState();
  auto b = mlx->NewState();
  EXPECT_EQ(RunRows(*hf, *a, tokens).logits, RunRows(*mlx, *b, tokens).logits);
}

// Only the dense preset: in the MoE presets an 8-bit router flips expert choices, which a random
// network turns into large logit jumps; quantization itself is proven bit-exact against MLX in
// kernels/affine_quant_test.
TEST(QuantizedTest, QuantizedCopiesTrackTheBf16Model) {
  const std::string preset = "dense-tiny";
  auto ref = LoadPreset(preset);
  ASSERT_TRUE(ref);
  const auto tokens = Tokens(12);
  auto st = ref->NewState();
  const auto want = RunRows(*ref, *st, tokens);
  for (int bits : {8}) {
    auto q = LoadPreset(preset, "mlx", bits);
    ASSERT_TRUE(q);
    auto qs = q->NewState();
    const auto got = RunRows(*q, *qs, tokens);
    // Same argmax at most positions; a random network amplifies quantization noise, so this is a
    // sanity bound, not an accuracy claim.
    int agree = 0;
    const int64_t vocab = ref->config().vocab_size;
    for (size_t r = 0; r < tokens.size(); ++r) {
      auto arg = [&](const std::vector<float>& l) {
        return std::max_element(l.begin() + r * vocab, l.begin() + (r + 1) * vocab) -
               (l.begin() + r * vocab);
      };
      agree += arg(want.logits) == arg(got.logits);
    }
    EXPECT_GE(agree, static_cast<int>(tokens.size()) / 2) << bits << "-bit";
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, PresetTest,
                         ::testing::Values("dense-tiny", "moe-tiny", "next-tiny"),
                         testing::PresetTestName<::testing::TestParamInfo<std::string>>);

TEST(ForwardTest, RejectsTokensOutsideTheVocabulary) {
  auto m = LoadPreset("dense-tiny");
  ASSERT_TRUE(m);
  auto st = m->NewState();
  ForwardOutput out;
  const std::vector<int32_t> bad = {5, 1024};
  const Status s = m->Forward(*st, bad, {}, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("1024"), std::string::npos);
  EXPECT_EQ(st->position(), 0);
}

TEST(ForwardTest, LastRowLogitsOnly) {
  auto m = LoadPreset("dense-tiny");
  ASSERT_TRUE(m);
  const auto tokens = Tokens(10);
  auto a = m->NewState();
  auto b = m->NewState();
  ForwardOptions last;
  last.all_logits = false;
  ForwardOutput one, all;
  ASSERT_TRUE(m->Forward(*a, tokens, last, &one).ok());
  ASSERT_TRUE(m->Forward(*b, tokens, {}, &all).ok());
  const int64_t vocab = m->config().vocab_size;
  ASSERT_EQ(one.logits.size(), static_cast<size_t>(vocab));
  EXPECT_TRUE(std::equal(one.logits.begin(), one.logits.end(), all.logits.end() - vocab));
}

}  // namespace
}  // namespace mtplx::model

namespace mtplx::model {
namespace {

// Every MLX affine format loads and runs; the 8-bit copy stays close to bf16 (dense preset).
TEST(QuantizedTest, EveryBitWidthAndGroupSizeLoadsAndRuns) {
  const std::vector<int32_t> tokens = {5, 200, 31, 944};
  for (int bits : {2, 3, 4, 5, 6, 8}) {
    for (int group : {32, 64, 128}) {
      LoadOptions options;
      options.show_progress = false;
      options.threads = 1;
      auto m = Model::Load(testing::SyntheticModel("dense-tiny", "mlx", bits, group), options);
      ASSERT_TRUE(m.ok()) << bits << "/" << group << ": " << m.status().ToString();
      const Matrix& q = (*m)->weights().layers[0].delta.in_qkv;
      EXPECT_TRUE(q.quantized);
      EXPECT_EQ(q.quant.bits, bits);
      EXPECT_EQ(q.quant.group_size, group);
      auto st = (*m)->NewState();
      ForwardOutput out;
      ASSERT_TRUE((*m)->Forward(*st, tokens, {}, &out).ok());
      for (float v : out.logits) ASSERT_TRUE(std::isfinite(v));
    }
  }
}

}  // namespace
}  // namespace mtplx::model
