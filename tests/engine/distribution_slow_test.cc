// End-to-end sampled exactness of speculative decoding, full version (label slow): 20,000
// samples per arm; see distribution_check.h. About 10 CPU-minutes on the synthetic model, whose
// forward pass dominates; distribution_test.cc is the quick variant.
#include "engine/distribution_check.h"

namespace mtplx::engine::distribution {
namespace {

TEST(DistributionSlowTest, SpeculativeMatchesPlainJointDistribution) {
  CheckScenarios(20000, {{"mtp-head", 2, false, 3},
                         {"oracle", 2, true, 4},
                         {"oracle", 1, true, 3},
                         {"oracle", 2, true, 4, /*penalties=*/true}});
}

}  // namespace
}  // namespace mtplx::engine::distribution
