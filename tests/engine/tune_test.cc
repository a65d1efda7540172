// `mtplx tune`'s decision rule on injected timings, and the store it writes.
#include "engine/tune.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "base/file.h"
#include "base/strings.h"
#include "io/tuning_store.h"
#include "support/test_support.h"

namespace mtplx::engine {
namespace {

// The decision tests' plain decoding runs at 100 tok/s on every prompt, and each mode at
// `tok_s` on every prompt: its paired speedup is tok_s / 100.
TuneMeasurement M(int depth, double tok_s, std::vector<double> acceptance = {}) {
  TuneMeasurement m;
  m.depth = depth;
  m.tok_s = tok_s;
  m.speedup = tok_s / 100.0;
  m.acceptance_by_depth = std::move(acceptance);
  return m;
}

TEST(TuneDecisionTest, ADepthMustBeatPlainDecoding) {
  std::string verdict;
  EXPECT_EQ(ChooseDepth({M(0, 100), M(1, 95, {0.8}), M(2, 99.9, {0.8, 0.7})}, &verdict), 0);
  EXPECT_NE(verdict.find("No MTP depth beat plain decoding"), std::string::npos) << verdict;
  EXPECT_EQ(ChooseDepth({M(0, 100), M(1, 101, {0.8})}, &verdict), 1);
  EXPECT_NE(verdict.find("D1, 1.01x"), std::string::npos) << verdict;
}

TEST(TuneDecisionTest, TheFastestWinsAndNearTiesGoToTheDeeperDepth) {
  EXPECT_EQ(
      ChooseDepth({M(0, 100), M(1, 150, {0.8}), M(2, 180, {0.8, 0.7}), M(3, 170, {0.8, 0.7, 0.6})},
                  nullptr),
      2);
  // D3 within 2 % of D2: the deeper one.
  EXPECT_EQ(
      ChooseDepth({M(0, 100), M(1, 150, {0.8}), M(2, 180, {0.8, 0.7}), M(3, 177, {0.8, 0.7, 0.6})},
                  nullptr),
      3);
  // Just outside 2 %: the faster one.
  EXPECT_EQ(ChooseDepth({M(0, 100), M(2, 180, {0.8, 0.7}), M(3, 176, {0.8, 0.7, 0.6})}, nullptr),
            2);
}

TEST(TuneDecisionTest, ACollapsedDepthNeverWins) {
  // Acceptance of its deepest draft at 5 % or less: never chosen, however fast it measured.
  EXPECT_EQ(ChooseDepth({M(0, 100), M(1, 120, {0.8}), M(2, 300, {0.8, 0.05})}, nullptr), 1);
  EXPECT_EQ(ChooseDepth({M(0, 100), M(1, 300, {0.01})}, nullptr), 0);
  EXPECT_EQ(ChooseDepth({M(1, 300, {0.9})}, nullptr), 0);  // no plain measurement: no winner
}

TEST(TuneDecisionTest, TheSearchClimbsWhileTheDeepestDepthWins) {
  const std::vector<TuneMeasurement> d3_wins = {M(0, 100), M(1, 150, {0.8}), M(2, 180, {0.8, 0.7}),
                                                M(3, 190, {0.8, 0.7, 0.6})};
  EXPECT_EQ(NextClimbDepth(d3_wins, ChooseDepth(d3_wins, nullptr), 5), 4);
  EXPECT_EQ(NextClimbDepth(d3_wins, 3, 3), 0);  // at the ceiling
  EXPECT_EQ(NextClimbDepth(d3_wins, 3, 0), 0);  // no climbing asked for
  // D4 measured (in its own round) and a near-tie with D3: it wins, so D5 is next.
  std::vector<TuneMeasurement> d4_ties = d3_wins;
  d4_ties.push_back(M(4, 187, {0.8, 0.7, 0.6, 0.5}));
  EXPECT_EQ(ChooseDepth(d4_ties, nullptr), 4);
  EXPECT_EQ(NextClimbDepth(d4_ties, 4, 5), 5);
  // D5 loses: the search stops and D4 stays.
  d4_ties.push_back(M(5, 170, {0.8, 0.7, 0.6, 0.5, 0.4}));
  EXPECT_EQ(ChooseDepth(d4_ties, nullptr), 4);
  EXPECT_EQ(NextClimbDepth(d4_ties, 4, 5), 0);
  // A shallower winner, or plain decoding, stops it at once.
  const std::vector<TuneMeasurement> d2_wins = {M(0, 100), M(1, 150, {0.8}), M(2, 180, {0.8, 0.7}),
                                                M(3, 160, {0.8, 0.7, 0.6})};
  EXPECT_EQ(NextClimbDepth(d2_wins, ChooseDepth(d2_wins, nullptr), 5), 0);
  EXPECT_EQ(NextClimbDepth({M(0, 100), M(1, 90, {0.8})}, 0, 5), 0);
}

TEST(TuneDecisionTest, PairedSpeedupIsTheMedianOfPerPromptRatios) {
  EXPECT_DOUBLE_EQ(MedianPairedSpeedup({150, 200, 120}, {100, 100, 100}), 1.5);
  EXPECT_DOUBLE_EQ(MedianPairedSpeedup({110, 120, 130, 300}, {100, 100, 100, 100}), 1.25);
  EXPECT_DOUBLE_EQ(MedianPairedSpeedup({60}, {50}), 1.2);
  // Nothing to pair, or a run that measured nothing: no speedup.
  EXPECT_EQ(MedianPairedSpeedup({}, {}), 0.0);
  EXPECT_EQ(MedianPairedSpeedup({100, 100}, {100}), 0.0);
  EXPECT_EQ(MedianPairedSpeedup({100, 0}, {100, 100}), 0.0);
}

// The machine's memory rate moves in spells: plain decoding on one prompt ran in a slow spell
// and the depth's run beside it in a fast one. Summed over the prompts the depth looks 12 %
// faster; paired per prompt, it loses on three prompts of four and is not kept.
TEST(TuneDecisionTest, OneSpellDoesNotMakeALosingDepthWin) {
  TuneMeasurement plain, d1;
  plain.depth = 0;
  plain.prompt_tok_s = {100, 100, 60, 100};
  d1.depth = 1;
  d1.prompt_tok_s = {97, 96, 130, 98};
  d1.acceptance_by_depth = {0.5};
  for (TuneMeasurement* m : {&plain, &d1}) {
    for (double v : m->prompt_tok_s) m->tok_s += v / 4;  // equal token counts per prompt
    m->speedup = MedianPairedSpeedup(m->prompt_tok_s, plain.prompt_tok_s);
  }
  EXPECT_GT(d1.tok_s, 1.1 * plain.tok_s);
  EXPECT_LT(d1.speedup, 1.0);
  EXPECT_EQ(ChooseDepth({plain, d1}, nullptr), 0);
}

TEST(TuneThreadsTest, CandidatesAreAllThreeQuartersAndHalfOfTheCores) {
  EXPECT_EQ(ThreadCandidates(1), std::vector<int>({1}));
  EXPECT_EQ(ThreadCandidates(2), std::vector<int>({2, 1}));
  EXPECT_EQ(ThreadCandidates(4), std::vector<int>({4, 3, 2}));
  EXPECT_EQ(ThreadCandidates(16), std::vector<int>({16, 12, 8}));
}

TEST(TuneThreadsTest, TheFastestWinsAndNearTiesGoToFewerThreads) {
  EXPECT_EQ(ChooseThreads({{2, 80}, {1, 60}}), 2);
  EXPECT_EQ(ChooseThreads({{2, 60}, {1, 80}}), 1);               // a busy second core
  EXPECT_EQ(ChooseThreads({{16, 100}, {12, 99}, {8, 90}}), 12);  // within 2 %: fewer
  EXPECT_EQ(ChooseThreads({{16, 100}, {12, 97.9}}), 16);
  EXPECT_EQ(ChooseThreads({}), 0);
}

TEST(TuningStoreTest, RoundTripsPerKeyAndKeepsOtherEntries) {
  const std::string path = testing::MakeTempDir("mtplx-tune") + "/sub/tuning.json";
  io::TuningKey a{"model@1", "CPU X", 2, "0.1.0"}, b = a;
  b.threads = 1;
  EXPECT_FALSE(io::LoadTuning(path, a));  // no file: nothing stored
  io::TuningRecord r;
  r.best_depth = 2;
  r.verdict = "Best for this machine: D2";
  r.results = {{0, 100, 0}, {2, 180, 0.7, 2.9, 1.75}};
  r.threads = 1;
  r.thread_results = {{2, 60.5}, {1, 80.25}};
  r.step_verify_costs = {1.0, 1.05, 1.5};
  r.step_draft_cost = 0.07;
  r.measured_at = "2026-01-01T00:00:00Z";
  ASSERT_TRUE(io::StoreTuning(path, a, r).ok());
  r.best_depth = 0;
  ASSERT_TRUE(io::StoreTuning(path, b, r).ok());
  const auto got = io::LoadTuning(path, a);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->best_depth, 2);
  EXPECT_EQ(got->verdict, "Best for this machine: D2");
  ASSERT_EQ(got->results.size(), 2u);
  EXPECT_DOUBLE_EQ(got->results[1].tok_s, 180);
  EXPECT_DOUBLE_EQ(got->results[1].tokens_per_cycle, 2.9);
  EXPECT_DOUBLE_EQ(got->results[1].speedup, 1.75);
  EXPECT_EQ(got->threads, 1);
  ASSERT_EQ(got->thread_results.size(), 2u);
  EXPECT_EQ(got->thread_results[1].threads, 1);
  EXPECT_DOUBLE_EQ(got->thread_results[1].tok_s, 80.25);
  EXPECT_EQ(got->step_verify_costs, std::vector<double>({1.0, 1.05, 1.5}));
  EXPECT_DOUBLE_EQ(got->step_draft_cost, 0.07);
  EXPECT_EQ(io::LoadTuning(path, b)->best_depth, 0);
  io::TuningKey other = a;
  other.engine_version = "0.2.0";  // another engine version: measure again
  EXPECT_FALSE(io::LoadTuning(path, other));
  // A broken file is advice lost, not an error.
  ASSERT_TRUE(WriteTextFile(path, "{broken").ok());
  EXPECT_FALSE(io::LoadTuning(path, a));
  ASSERT_TRUE(io::StoreTuning(path, a, r).ok());
  EXPECT_TRUE(io::LoadTuning(path, a));
}

TEST(TuningStoreTest, CycleCostsAreTokensPerCycleOverTheSpeedup) {
  io::TuningRecord r;
  // Depth 1 paired at 1.6x, depth 2 from a record written before pairing (tok_s over plain's).
  r.results = {{0, 100, 0, 1.0, 1.0}, {1, 150, 0.8, 1.8, 1.6}, {2, 200, 0.7, 2.5, 0.0}};
  const std::vector<double> costs = io::MeasuredCycleCosts(r);
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_DOUBLE_EQ(costs[0], 1.0);
  EXPECT_DOUBLE_EQ(costs[1], 1.8 / 1.6);
  EXPECT_DOUBLE_EQ(costs[2], 2.5 / 2.0);
  // Depths stop at the first one not measured; one depth alone is no curve.
  r.results = {{0, 100, 0}, {2, 200, 0.7, 2.5, 1.9}};
  EXPECT_TRUE(io::MeasuredCycleCosts(r).empty());
  r.results = {{1, 150, 0.8, 1.8, 1.6}};  // no plain decoding
  EXPECT_TRUE(io::MeasuredCycleCosts(r).empty());
}

TEST(TuningStoreTest, MtpChecksRoundTripBesideTheTuningEntries) {
  const std::string path = testing::MakeTempDir("mtplx-tune") + "/tuning.json";
  EXPECT_FALSE(io::LoadMtpCheck(path, "m@1 | head"));
  io::TuningRecord r;
  r.best_depth = 1;
  const io::TuningKey key{"m@1", "CPU X", 2, "0.1.0"};
  ASSERT_TRUE(io::StoreTuning(path, key, r).ok());
  ASSERT_TRUE(io::StoreMtpCheck(path, "m@1 | head", 0.75).ok());
  ASSERT_TRUE(io::StoreMtpCheck(path, "m@2 | head", 0.0).ok());
  EXPECT_DOUBLE_EQ(*io::LoadMtpCheck(path, "m@1 | head"), 0.75);
  EXPECT_DOUBLE_EQ(*io::LoadMtpCheck(path, "m@2 | head"), 0.0);
  EXPECT_FALSE(io::LoadMtpCheck(path, "m@3 | head"));
  EXPECT_EQ(io::LoadTuning(path, key)->best_depth, 1);  // the tuning entry survives
  // An out-of-range value is not trusted.
  ASSERT_TRUE(WriteTextFile(path, R"({"mtp_checks": {"m@1 | head": {"acceptance": 7}}})").ok());
  EXPECT_FALSE(io::LoadMtpCheck(path, "m@1 | head"));
}

// The store is locked while one process reads, changes and writes it: writers that meet lose
// nothing (before the lock, each wrote back the file it had read and dropped the others' entries).
TEST(TuningStoreTest, ConcurrentWritersLoseNothing) {
  const std::string path = testing::MakeTempDir("mtplx-tune") + "/tuning.json";
  constexpr int kWriters = 8;
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i)
    threads.emplace_back([&, i] {
      for (int j = 0; j < 4; ++j) {
        EXPECT_TRUE(io::StoreMtpCheck(path, StrCat("m@", i, " | ", j), 0.5).ok());
        io::TuningRecord r;
        r.best_depth = j;
        EXPECT_TRUE(io::StoreTuning(path, {StrCat("m@", i), "CPU X", j + 1, "0.1.0"}, r).ok());
      }
    });
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kWriters; ++i)
    for (int j = 0; j < 4; ++j) {
      EXPECT_TRUE(io::LoadMtpCheck(path, StrCat("m@", i, " | ", j))) << i << " " << j;
      const auto tuned = io::LoadTuning(path, {StrCat("m@", i), "CPU X", j + 1, "0.1.0"});
      ASSERT_TRUE(tuned) << i << " " << j;
      EXPECT_EQ(tuned->best_depth, j);
    }
}

TEST(TuningStoreTest, TheModelIdChangesWithTheWeights) {
  const std::string dir = testing::MakeTempDir("mtplx-tune");
  ASSERT_TRUE(WriteTextFile(dir + "/config.json", "{}").ok());
  ASSERT_TRUE(WriteTextFile(dir + "/model.safetensors", "12345678").ok());
  const auto first = io::TuningModelId(dir);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(WriteTextFile(dir + "/model.safetensors", "123456789").ok());
  EXPECT_NE(*io::TuningModelId(dir), *first);
  EXPECT_FALSE(io::TuningModelId("/nonexistent").ok());
  // The files' stamp also sees a rewrite at the same size (the check cache keys on it).
  const auto stamp = io::WeightFilesStamp(dir);
  ASSERT_TRUE(stamp.ok());
  const std::string file = dir + "/model.safetensors";
  std::filesystem::last_write_time(
      file, std::filesystem::last_write_time(file) + std::chrono::seconds(5));
  EXPECT_NE(*io::WeightFilesStamp(dir), *stamp);
  EXPECT_EQ(*io::TuningModelId(dir), *io::TuningModelId(dir));
  EXPECT_FALSE(io::WeightFilesStamp("/nonexistent").ok());
}

}  // namespace
}  // namespace mtplx::engine
