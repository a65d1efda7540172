// Batched forwards: several sequences in one pass give each of them exactly (bit for bit) what it
// gets alone — logits, hidden states and the state it leaves behind — whatever else is in the
// batch: a long prefill chunk (chunked DeltaNet), a verify pass with its capture, a single decode
// row, a history-only feed. The trunk and the MTP head, every preset, exact and int8 kernels.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "state/verify_capture.h"
#include "support/synthetic_model.h"
#include "support/test_support.h"

namespace mtplx::model {
namespace {

struct Setup {
  std::string preset;
  bool int8 = false;  // 8-bit MLX weights, int8 activations, panels: what the CLI runs
};

std::string SetupName(const ::testing::TestParamInfo<Setup>& info) {
  std::string name = info.param.preset + (info.param.int8 ? "_int8" : "_exact");
  for (char& ch : name)
    if (ch == '-') ch = '_';
  return name;
}

std::unique_ptr<Model> Load(const Setup& setup) {
  LoadOptions options;
  options.show_progress = false;
  options.threads = 2;
  std::string dir;
  if (setup.preset == "trained") {
    dir = testing::TrainedModelDir();
  } else {
    dir = setup.int8 ? testing::SyntheticModel(setup.preset, "mlx", 8)
                     : testing::SyntheticModel(setup.preset);
  }
  if (setup.int8) {
    options.activations = kernels::Activations::kInt8;
    options.draft_head_bits = 4;
    options.draft_layer_bits = 4;
  }
  auto m = Model::Load(dir, options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::vector<int32_t> Tokens(int n, int salt) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = (i * 37 + 11 + salt * 101) % 960;
  return t;
}

// What one sequence does in the batch: its prompt so far, then the rows of the batched step.
struct Job {
  int history = 0;  // tokens run before the step
  int rows = 0;
  bool capture = false;
  bool no_logits = false;
  bool all_logits = true;
  int salt = 0;
};

void ExpectSameBits(const std::vector<float>& a, const std::vector<float>& b, const char* what,
                    size_t job) {
  ASSERT_EQ(a.size(), b.size()) << what << " of job " << job;
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
      << what << " of job " << job << " differs from the job run alone";
}

void ExpectSameOutput(const ForwardOutput& a, const ForwardOutput& b, size_t job) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.logit_rows, b.logit_rows);
  EXPECT_EQ(a.vocab, b.vocab);
  ExpectSameBits(a.logits, b.logits, "logits", job);
  ExpectSameBits(a.hidden, b.hidden, "hidden", job);
  ExpectSameBits(a.pre_norm_hidden, b.pre_norm_hidden, "pre-norm hidden", job);
}

class BatchTest : public ::testing::TestWithParam<Setup> {};

TEST_P(BatchTest, EverySequenceGetsWhatItGetsAlone) {
  auto m = Load(GetParam());
  ASSERT_TRUE(m);
  const std::vector<Job> jobs = {
      {0, 70, false, false, false, 1},  // a prefill chunk (chunked DeltaNet), last-row logits
      {21, 4, true, false, true, 2},    // a verify pass with its capture
      {9, 1, false, false, true, 3},    // a decode step
      {5, 3, false, true, true, 4},     // history only, no logits
      {33, 9, true, false, true, 5},    // a long verify (the AMX path where it exists)
  };
  const size_t n = jobs.size();
  std::vector<std::unique_ptr<state::SequenceState>> alone(n), batched(n);
  std::vector<std::vector<int32_t>> steps(n);
  std::vector<state::VerifyCapture> alone_capture(n), batched_capture(n);
  std::vector<ForwardOutput> alone_out(n), batched_out(n);
  std::vector<ForwardItem> items(n);
  for (size_t j = 0; j < n; ++j) {
    const Job& job = jobs[j];
    const auto prompt = Tokens(job.history, job.salt);
    steps[j] = Tokens(job.rows, job.salt + 50);
    for (auto* st : {&alone[j], &batched[j]}) {
      *st = m->NewState();
      if (!prompt.empty()) {
        ForwardOutput ignored;
        ASSERT_TRUE(m->Forward(**st, prompt, ForwardOptions{}, &ignored).ok());
      }
    }
    ForwardOptions options;
    options.all_logits = job.all_logits;
    options.no_logits = job.no_logits;
    options.capture = job.capture ? &alone_capture[j] : nullptr;
    ASSERT_TRUE(m->Forward(*alone[j], steps[j], options, &alone_out[j]).ok());
    options.capture = job.capture ? &batched_capture[j] : nullptr;
    items[j] = ForwardItem{batched[j].get(), steps[j], options, &batched_out[j], nullptr};
  }
  ASSERT_TRUE(m->ForwardBatch(items).ok());
  for (size_t j = 0; j < n; ++j) ExpectSameOutput(batched_out[j], alone_out[j], j);
  // The states too: keep part of each verify, then one more decode row must agree.
  for (size_t j = 0; j < n; ++j) {
    if (jobs[j].capture) {
      ASSERT_TRUE(m->CommitVerify(*alone[j], alone_capture[j], 2).ok());
      ASSERT_TRUE(m->CommitVerify(*batched[j], batched_capture[j], 2).ok());
    }
    ASSERT_EQ(alone[j]->position(), batched[j]->position());
    const int32_t next = 7 + static_cast<int32_t>(j);
    ForwardOutput a, b;
    ASSERT_TRUE(m->Forward(*alone[j], std::span<const int32_t>(&next, 1), {}, &a).ok());
    ASSERT_TRUE(m->Forward(*batched[j], std::span<const int32_t>(&next, 1), {}, &b).ok());
    ExpectSameOutput(b, a, j);
  }
}

TEST_P(BatchTest, MtpHeadsOfSeveralSequencesInOnePass) {
  auto m = Load(GetParam());
  ASSERT_TRUE(m);
  if (!m->has_mtp()) GTEST_SKIP() << "no MTP head";
  const int64_t h = m->config().hidden_size;
  // (rows fed, output rows, draft head): a history catch-up with one draft row, a draft step, a
  // history-only feed.
  struct MtpJob {
    int history;
    int rows;
    int64_t output_rows;
    bool draft_head;
  };
  const std::vector<MtpJob> jobs = {{6, 4, 1, true}, {3, 1, -1, true}, {0, 5, 0, false}};
  const size_t n = jobs.size();
  std::vector<std::unique_ptr<state::SequenceState>> alone(n), batched(n);
  std::vector<std::vector<int32_t>> tokens(n);
  std::vector<std::vector<float>> hidden(n);
  std::vector<ForwardOutput> alone_out(n), batched_out(n);
  std::vector<ForwardItem> items(n);
  for (size_t j = 0; j < n; ++j) {
    const MtpJob& job = jobs[j];
    const auto history = Tokens(job.history, static_cast<int>(j));
    std::vector<float> history_hidden(job.history * h);
    for (size_t i = 0; i < history_hidden.size(); ++i) history_hidden[i] = 0.01f * (i % 97) - 0.4f;
    tokens[j] = Tokens(job.rows, static_cast<int>(j) + 20);
    hidden[j].resize(job.rows * h);
    for (size_t i = 0; i < hidden[j].size(); ++i) hidden[j][i] = 0.02f * ((i + j) % 53) - 0.5f;
    ForwardOptions feed;
    feed.no_logits = true;
    for (auto* st : {&alone[j], &batched[j]}) {
      *st = m->NewMtpState();
      if (job.history > 0) {
        ForwardOutput ignored;
        ASSERT_TRUE(m->ForwardMtp(**st, history, history_hidden.data(), feed, &ignored).ok());
      }
    }
    ForwardOptions options;
    options.mtp_output_rows = job.output_rows;
    options.draft_head = job.draft_head;
    options.all_logits = false;
    ASSERT_TRUE(m->ForwardMtp(*alone[j], tokens[j], hidden[j].data(), options, &alone_out[j]).ok());
    items[j] = ForwardItem{batched[j].get(), tokens[j], options, &batched_out[j], hidden[j].data()};
  }
  ASSERT_TRUE(m->ForwardMtpBatch(items).ok());
  for (size_t j = 0; j < n; ++j) ExpectSameOutput(batched_out[j], alone_out[j], j);
}

TEST(BatchTest, InvalidItemsRunNothing) {
  auto m = Load({"dense-tiny", false});
  ASSERT_TRUE(m);
  auto a = m->NewState(), b = m->NewState();
  const std::vector<int32_t> good = {1, 2, 3}, bad = {1, 1 << 30};
  ForwardOutput oa, ob;
  std::vector<ForwardItem> items = {{a.get(), good, {}, &oa, nullptr},
                                    {b.get(), bad, {}, &ob, nullptr}};
  const Status s = m->ForwardBatch(items);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("outside the vocabulary"), std::string::npos) << s.message();
  EXPECT_EQ(a->position(), 0);
  EXPECT_EQ(b->position(), 0);
  EXPECT_FALSE(m->ForwardBatch({}).ok());
}

INSTANTIATE_TEST_SUITE_P(Presets, BatchTest,
                         ::testing::Values(Setup{"dense-tiny", false}, Setup{"moe-tiny", false},
                                           Setup{"next-tiny", false}, Setup{"dense-tiny", true},
                                           Setup{"moe-tiny", true}, Setup{"trained", true}),
                         SetupName);

}  // namespace
}  // namespace mtplx::model
