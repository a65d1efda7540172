// Synthetic checkpoints for tests, written once per build tree and reused.
#pragma once

#include <string>

namespace mtplx::testing {

// Folder of a synthetic checkpoint (written on first use under the build directory).
// format: "hf" or "mlx"; bits 0 = bf16.
std::string SyntheticModel(const std::string& preset, const std::string& format = "hf",
                           int bits = 0, int group_size = 64, unsigned long long seed = 0);

}  // namespace mtplx::testing
