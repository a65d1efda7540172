// End-to-end sampled exactness of speculative decoding, quick version (label model): see
// distribution_check.h. 2,000 samples per arm (about 50 CPU-seconds here) are enough to reject
// obviously wrong acceptance / residual / bonus rules; distribution_slow_test.cc runs 20,000.
#include "engine/distribution_check.h"

namespace mtplx::engine::distribution {
namespace {

TEST(DistributionTest, SpeculativeMatchesPlainJointDistribution) {
  CheckScenarios(2000, {{"mtp-head", 2, false, 3},
                        {"oracle", 2, true, 4},
                        {"oracle", 1, true, 3, /*penalties=*/true}});
}

}  // namespace
}  // namespace mtplx::engine::distribution
