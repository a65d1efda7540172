// The real Qwen3.5-9B shapes (synthetic weights, MLX 4-bit g64, ~5 GB): one resident copy of the
// weights, no page faults while decoding. Label `slow`: minutes, and 5+ GB of disk and memory.
#include <gtest/gtest.h>

#include "base/process_stats.h"
#include "model/model.h"
#include "support/synthetic_model.h"

namespace mtplx::model {
namespace {

TEST(LargeModelTest, Qwen35NineBStaysResidentWithoutPageFaults) {
  const std::string dir = testing::SyntheticModel("qwen35-9b", "mlx", 4, 64);
  const ProcessStats before_load = ReadProcessStats();
  LoadOptions options;
  options.show_progress = false;
  auto m = Model::Load(dir, options);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto st = (*m)->NewState();
  ForwardOutput out;
  const std::vector<int32_t> prompt = {1000, 2000, 3000};
  ASSERT_TRUE((*m)->Forward(*st, prompt, {}, &out).ok());
  const uint64_t faults = ReadProcessStats().major_faults;
  for (int i = 0; i < 2; ++i) {
    const int32_t next =
        static_cast<int32_t>(std::max_element(out.logits.end() - 248320, out.logits.end()) -
                             (out.logits.end() - 248320));
    ASSERT_TRUE((*m)->Forward(*st, std::span<const int32_t>(&next, 1), {}, &out).ok());
  }
  const ProcessStats after = ReadProcessStats();
  EXPECT_EQ(after.major_faults - faults, 0u);
  const double weights = static_cast<double>((*m)->weight_bytes());
  const double resident = static_cast<double>(after.resident_bytes - before_load.resident_bytes);
  EXPECT_LT(resident, 1.05 * weights + static_cast<double>(st->Bytes()) + 256e6)
      << "resident " << resident << " weights " << weights;
}

}  // namespace
}  // namespace mtplx::model
