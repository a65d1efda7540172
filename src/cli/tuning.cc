#include "cli/tuning.h"

#include <algorithm>
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

namespace {

// What the check's result depends on: the weights, the draft head the engine builds, the hidden
// variant fed to the head, and the engine.
Result<std::string> MtpCheckKey(const engine::EngineOptions& options) {
  MTPLX_ASSIGN_OR_RETURN(std::string model, io::TuningModelId(options.model_dir));
  MTPLX_ASSIGN_OR_RETURN(std::string written, io::WeightFilesStamp(options.model_dir));
  return StrCat(model, " | files ", written, " | draft layer ", options.load.draft_layer_bits,
                " bits | draft head ", options.load.draft_head_bits, " bits, vocab ",
                options.load.draft_vocab, " | draft groups ", options.load.draft_head_group_size,
                options.pre_norm_hidden ? " | pre-norm hidden" : "", " | mtplx ",
                pack::MtplxVersion());
}

}  // namespace

void ApplyKnownMtpCheck(engine::EngineOptions& options) {
  if (options.no_mtp || options.skip_mtp_check) return;
  auto key = MtpCheckKey(options);
  if (!key.ok()) return;
  options.known_mtp_acceptance = io::LoadMtpCheck(io::TuningStorePath(), *key);
}

void RememberMtpCheck(const engine::Engine& engine) {
  const auto acceptance = engine.measured_mtp_acceptance();
  if (!acceptance) return;
  auto key = MtpCheckKey(engine.options());
  if (!key.ok()) return;
  // A cache: failing to write it only costs the next start the probe.
  (void)io::StoreMtpCheck(io::TuningStorePath(), *key, *acceptance);
}

std::string ApplyTunedDepth(engine::EngineOptions& options, bool apply_threads) {
  if (options.depth > 0 || options.no_mtp) return "";
  auto key = TuningKeyFor(options.model_dir, options.load.threads);
  if (!key.ok()) return "";
  const auto record = io::LoadTuning(io::TuningStorePath(), *key);
  if (!record) return "";
  options.step_costs = {record->step_verify_costs, record->step_draft_cost};
  // The thread count tune chose (when the run leaves it to the machine): the depth was measured
  // with it.
  std::string threads;
  if (apply_threads && options.load.threads <= 0 && record->threads > 0) {
    options.load.threads = record->threads;
    threads = StrFormat(", %d thread%s", record->threads, record->threads == 1 ? "" : "s");
  }
  if (record->best_depth == 0) {
    options.no_mtp = true;
    return StrCat("tuned: plain decoding", threads,
                  " (no draft depth beat it in `mtplx tune` on this machine; --depth D "
                  "speculates anyway)");
  }
  options.depth = record->best_depth;
  options.cycle_costs = io::MeasuredCycleCosts(*record);
  return StrFormat("tuned: MTP depth %d%s (`mtplx tune` on this machine; --depth overrides)",
                   record->best_depth, threads.c_str());
}

}  // namespace mtplx::cli
