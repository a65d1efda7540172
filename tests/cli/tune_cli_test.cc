// `mtplx tune` end to end: it measures and stores a verdict, reuses it until --retune, and run
// applies the stored depth for the same model, CPU and thread count (--depth still wins).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/thread_pool.h"
#include "engine/tune.h"
#include "support/test_support.h"

namespace mtplx {
namespace {

using Json = nlohmann::json;

struct Home {
  std::string dir = testing::MakeTempDir("mtplx-home");
  testing::CommandOutcome Run(const std::string& args, bool merge = false) const {
    return testing::RunMtplxWithEnv("MTPLX_HOME=" + dir, args, merge);
  }
  std::string store() const { return dir + "/tuning.json"; }
};

// Rewrites every stored entry's best depth.
void SetStoredDepth(const Home& home, int depth) {
  Json store = Json::parse(*ReadTextFile(home.store()));
  for (auto& [key, entry] : store["entries"].items()) entry["best_depth"] = depth;
  ASSERT_TRUE(WriteTextFile(home.store(), store.dump()).ok());
}

int RunDepth(const Home& home, const std::string& extra, std::string* log = nullptr) {
  const auto o = home.Run("run hi --max-tokens 4 --json --threads 1 " + extra);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  if (log) *log = home.Run("run hi --max-tokens 4 --threads 1 " + extra, true).output;
  return Json::parse(o.output)["stats"]["depth"].get<int>();
}

TEST(TuneCliTest, MeasuresStoresAndRunAppliesTheStoredDepth) {
  Home home;
  const auto tune = home.Run("tune --json --max-tokens 16 --threads 1 --depths 1,2");
  ASSERT_EQ(tune.exit_code, 0) << tune.output;
  const Json j = Json::parse(tune.output);
  EXPECT_EQ(j["from_store"], false);
  ASSERT_EQ(j["results"].size(), 3u);  // AR, D1, D2
  EXPECT_EQ(j["results"][0]["depth"], 0);
  for (const Json& r : j["results"]) {
    EXPECT_GT(r["tok_s"].get<double>(), 0.0);
    EXPECT_GT(r["speedup"].get<double>(), 0.0);  // over plain decoding, paired per prompt
  }
  EXPECT_DOUBLE_EQ(j["results"][0]["speedup"].get<double>(), 1.0);
  EXPECT_TRUE(j["verdict"].is_string());
  EXPECT_GE(j["best_depth"].get<int>(), 0);
  EXPECT_TRUE(FileExists(home.store()));
  // Stored: the next tune reports it instead of measuring, until --retune.
  EXPECT_EQ(Json::parse(home.Run("tune --json --threads 1").output)["from_store"], true);
  EXPECT_EQ(Json::parse(home.Run("tune --json --max-tokens 16 --retune --threads 1 --depths 1")
                            .output)["from_store"],
            false);

  std::string log;
  SetStoredDepth(home, 2);
  EXPECT_EQ(RunDepth(home, "", &log), 2);
  EXPECT_NE(log.find("tuned: MTP depth 2"), std::string::npos) << log;
  SetStoredDepth(home, 0);  // a loss: plain decoding
  EXPECT_EQ(RunDepth(home, "", &log), 0);
  EXPECT_NE(log.find("tuned: plain decoding"), std::string::npos) << log;
  EXPECT_EQ(RunDepth(home, "--depth 1"), 1);  // --depth pins it
  // Another thread count is another machine setup: the pack's default applies.
  const auto two = home.Run("run hi --max-tokens 4 --json --threads 2");
  EXPECT_EQ(Json::parse(two.output)["stats"]["depth"], 1);
}

// The MTP load check runs on the first start only; a stored result is trusted, so a head stored
// as collapsed stays off until the store is cleared.
TEST(TuneCliTest, TheMtpLoadCheckIsMeasuredOnceAndRemembered) {
  Home home;
  EXPECT_EQ(RunDepth(home, "--no-mtp"), 0);
  EXPECT_FALSE(FileExists(home.store()));  // no check ran
  EXPECT_EQ(RunDepth(home, ""), 1);
  Json store = Json::parse(*ReadTextFile(home.store()));
  ASSERT_EQ(store["mtp_checks"].size(), 1u) << store.dump();
  for (auto& [key, check] : store["mtp_checks"].items()) {
    EXPECT_GT(check["acceptance"].get<double>(), 0.5) << key;
    check["acceptance"] = 0.01;
  }
  ASSERT_TRUE(WriteTextFile(home.store(), store.dump()).ok());
  std::string log;
  EXPECT_EQ(RunDepth(home, "", &log), 0);
  EXPECT_NE(log.find("accepted 1% of greedy drafts"), std::string::npos) << log;
  EXPECT_EQ(RunDepth(home, "--skip-mtp-check"), 1);
  // Another draft head is another check.
  EXPECT_EQ(RunDepth(home, "--draft-head-bits 8"), 1);
}

// Without --threads, tune measures plain decoding at each candidate thread count, measures the
// depths at the fastest, and a run that leaves the count to the machine uses it.
TEST(TuneCliTest, ChoosesTheThreadCountAndRunUsesIt) {
  Home home;
  const auto tune = home.Run("tune --json --max-tokens 16 --depths 1");
  ASSERT_EQ(tune.exit_code, 0) << tune.output;
  Json j = Json::parse(tune.output);
  const std::vector<int> candidates = engine::ThreadCandidates(ThreadPool::HardwareThreads());
  const int threads = j["threads"].get<int>();
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), threads), candidates.end()) << threads;
  ASSERT_EQ(j["thread_results"].size(), candidates.size() > 1 ? candidates.size() : 0u);
  for (const Json& t : j["thread_results"]) EXPECT_GT(t["tok_s"].get<double>(), 0.0);
  // The server's batched steps were priced: v(1..16), never falling, and a draft round.
  const std::vector<double> v = j["step_verify_costs"].get<std::vector<double>>();
  ASSERT_EQ(v.size(), 16u);
  EXPECT_DOUBLE_EQ(v[0], 1.0);
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  EXPECT_GT(j["step_draft_cost"].get<double>(), 0.0);
  // Pretend one thread won, so the run's notice shows the count it applied.
  Json store = Json::parse(*ReadTextFile(home.store()));
  for (auto& [key, entry] : store["entries"].items()) entry["run_threads"] = 1;
  ASSERT_TRUE(WriteTextFile(home.store(), store.dump()).ok());
  const std::string log = home.Run("run hi --max-tokens 4", true).output;
  EXPECT_NE(log.find(", 1 thread ("), std::string::npos) << log;
}

TEST(TuneCliTest, BadDepthsAreRefused) {
  Home home;
  for (const char* bad : {"0", "6", "1,x", ""}) {
    const auto o = home.Run(std::string("tune --depths '") + bad + "'", true);
    EXPECT_NE(o.exit_code, 0) << bad;
    EXPECT_NE(o.output.find("--depths"), std::string::npos) << bad << o.output;
  }
}

// A pack's mtp_depth_max caps tune's depths (asked for: refused; the default 1,2,3: cut) and
// run's --depth (capped, with a notice).
TEST(TuneCliTest, ThePacksMtpDepthMaxCapsTuneAndRun) {
  Home home;
  const std::string pack = testing::TrainedModelCopy("mtplx-depth-max", R"({"mtp_depth_max": 2})");
  ASSERT_FALSE(pack.empty());
  const auto refused = home.Run("tune --model " + pack + " --depths 1,3", true);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("--depths: 3 is above this pack's mtp_depth_max (2"),
            std::string::npos)
      << refused.output;
  const auto tuned = home.Run("tune --json --max-tokens 16 --threads 1 --model " + pack);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_EQ(Json::parse(tuned.output)["results"].size(), 3u);  // AR, D1, D2
  std::string log;
  EXPECT_EQ(RunDepth(home, "--model " + pack + " --depth 4", &log), 2);
  EXPECT_NE(log.find("MTP depth 4 capped at 2"), std::string::npos) << log;
}

}  // namespace
}  // namespace mtplx
