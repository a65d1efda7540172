#include "cli/tuning.h"

#include <thread>

#include "base/process_stats.h"
#include "base/strings.h"
#include "pack/runtime_manifest.h"

namespace mtplx::cli {

int ResolvedThreads(int threads) {
  return threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

Result<io::TuningKey> TuningKeyFor(const std::string& model_dir, int threads) {
  io::TuningKey key;
  MTPLX_ASSIGN_OR_RETURN(key.model, io::TuningModelId(model_dir));
  key.cpu = CpuModelName();
  key.threads = ResolvedThreads(threads);
  key.engine_version = pack::MtplxVersion();
  return key;
}

std::string ApplyTunedDepth(engine::EngineOptions& options) {
  if (options.depth > 0 || options.no_mtp) return "";
  auto key = TuningKeyFor(options.model_dir, options.load.threads);
  if (!key.ok()) return "";
  const auto record = io::LoadTuning(io::TuningStorePath(), *key);
  if (!record) return "";
  if (record->best_depth == 0) {
    options.no_mtp = true;
    return "tuned: plain decoding (no draft depth beat it in `mtplx tune` on this machine; "
           "--depth D speculates anyway)";
  }
  options.depth = record->best_depth;
  return StrFormat("tuned: MTP depth %d (`mtplx tune` on this machine; --depth overrides)",
                   record->best_depth);
}

}  // namespace mtplx::cli
