// Synthetic checkpoints for tests, written once per build tree and reused.
#pragma once

#include <string>

namespace mtplx::testing {

// Folder of a synthetic checkpoint (written on first use under the build directory).
// format: "hf" or "mlx"; bits 0 = bf16.
std::string SyntheticModel(const std::string& preset, const std::string& format = "hf",
                           int bits = 0, int group_size = 64, unsigned long long seed = 0);

// "dense-tiny" -> "dense_tiny": a GoogleTest parameter name for a preset.
template <typename Info>
std::string PresetTestName(const Info& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

}  // namespace mtplx::testing
