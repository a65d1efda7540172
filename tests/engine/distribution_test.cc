// End-to-end sampled exactness of speculative decoding, quick version (label model): see
// distribution_check.h. 2,000 samples per arm (about 50 CPU-seconds here) are enough to reject
// obviously wrong acceptance / residual / bonus rules; distribution_slow_test.cc runs 20,000.
#include <filesystem>

#include "engine/distribution_check.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer.h"

namespace mtplx::engine::distribution {
namespace {

TEST(DistributionTest, SpeculativeMatchesPlainJointDistribution) {
  CheckScenarios(2000, {{"mtp-head", 2, false, 3},
                        {"oracle", 2, true, 4},
                        {"oracle", 1, true, 3, /*penalties=*/true},
                        {"oracle cold", 2, true, 4, /*penalties=*/false, /*adaptive=*/false,
                         /*cold=*/true}});
}

// On the trained model the MTP head drafts inside p's support and its sampled q really matters
// (acceptance min(1, p/q), residual (p - q)+): the errors a random synthetic head cannot reveal.
// Depth 2, drafts from the 4-bit draft head, a code prompt, int8 activations as the CLI and server
// run them; adaptive depth, where a cycle's own drafts decide whether its second draft runs
// (three tokens leave room for two); and depth 2 after a cold prefill of the whole prompt, where
// the MTP head's history comes from the prefill's rows rather than a restored snapshot.
TEST(DistributionTest, TrainedModelSampledDraftsMatchPlain) {
  const std::string dir = testing::TrainedModelDir();
  if (!std::filesystem::exists(dir + "/config.json")) GTEST_SKIP() << "no trained model";
  auto tokenizer = tokenizer::Tokenizer::FromJsonFile(dir + "/tokenizer.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  ModelUnderTest setup;
  setup.model_dir = dir;
  setup.prompt = tokenizer->Encode("import os\nimport sys\n\n\ndef main():\n    ", false);
  setup.draft_head_bits = 4;
  setup.activations = kernels::Activations::kInt8;  // as `run` and `serve` decode
  CheckScenarios(
      2000,
      {{"trained mtp-head", 2, false, 3},
       {"trained mtp-head adaptive", 3, false, 3, /*penalties=*/false, /*adaptive=*/true},
       {"trained mtp-head cold", 2, false, 3, /*penalties=*/false, /*adaptive=*/false,
        /*cold=*/true}},
      setup);
}

}  // namespace
}  // namespace mtplx::engine::distribution
