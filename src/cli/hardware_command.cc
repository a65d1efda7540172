// `mtplx hardware`: what this machine offers (CPU, SIMD features, cores, caches, memory) and
// which kernels mtplx runs on it; `--json` for scripts.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "base/strings.h"
#include "cli/commands.h"
#include "kernels/hardware.h"

namespace mtplx::cli {
namespace {

nlohmann::json ToJson(const kernels::HardwareInfo& h) {
  nlohmann::json features = nlohmann::json::object();
  for (const auto& [name, present] : h.features) features[name] = present;
  return {
      {"arch", h.arch},
      {"cpu_model", h.cpu_model},
      {"logical_cpus", h.logical_cpus},
      {"usable_cpus", h.usable_cpus},
      {"features", features},
      {"caches", {{"l1d_bytes", h.l1d_bytes}, {"l2_bytes", h.l2_bytes}, {"l3_bytes", h.l3_bytes}}},
      {"memory",
       {{"total_bytes", h.memory_total_bytes}, {"available_bytes", h.memory_available_bytes}}},
      {"kernels",
       {{"quantized_matmul", h.matmul_kernel},
        {"avx512_kernels", h.avx512_kernels},
        {"mtplx_kernels_cap", h.kernel_cap}}},
      {"splits_wide_vectors", h.splits_wide_vectors},
      {"fast_bf16", h.fast_bf16}};
}

void Print(const kernels::HardwareInfo& h) {
  std::printf("CPU:      %s (%s), %d of %d logical CPUs usable\n", h.cpu_model.c_str(),
              h.arch.c_str(), h.usable_cpus, h.logical_cpus);
  std::string have, lack;
  for (const auto& [name, present] : h.features) (present ? have : lack) += " " + name;
  std::printf("Features:%s\n", have.empty() ? " none detected" : have.c_str());
  if (!lack.empty()) std::printf("Missing: %s\n", lack.c_str());
  auto size = [](uint64_t bytes) { return bytes ? HumanBytes(bytes) : std::string("?"); };
  std::printf("Caches:   L1d %s, L2 %s, L3 %s (as cpu0 sees them)\n", size(h.l1d_bytes).c_str(),
              size(h.l2_bytes).c_str(), size(h.l3_bytes).c_str());
  std::printf("Memory:   %s total, %s available\n", size(h.memory_total_bytes).c_str(),
              size(h.memory_available_bytes).c_str());
  std::printf("Kernels:  quantized matmul %s; attention, DeltaNet and sampler scans %s",
              h.matmul_kernel.c_str(), h.avx512_kernels ? "avx512" : "portable/auto-vectorized");
  if (h.kernel_cap != "none") std::printf(" (capped by MTPLX_KERNELS=%s)", h.kernel_cap.c_str());
  if (h.splits_wide_vectors)
    std::printf("\nVectors:  256-bit instructions run as two 128-bit halves on this core");
  std::printf("\nbf16:     %s\n", h.fast_bf16 ? "native instructions"
                                              : "converted in software (fp16 packs run the same)");
}

}  // namespace

Runner AddHardwareCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("hardware", "What this machine offers and which kernels run");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print it as JSON");
  return [json] {
    const kernels::HardwareInfo h = kernels::DetectHardware();
    if (*json)
      std::printf("%s\n", ToJson(h).dump(2).c_str());
    else
      Print(h);
    return 0;
  };
}

}  // namespace mtplx::cli
