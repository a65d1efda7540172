// ~/.mtplx/tuning.json: what `mtplx tune` measured, keyed by what the result depends on (the
// model, the CPU, the thread count, the engine version), so `run`, `chat`, `serve` and `start`
// can apply the winning draft depth on the machine that measured it and nowhere else.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace mtplx::io {

struct TuningKey {
  std::string model;  // TuningModelId() of the model folder
  std::string cpu;    // CpuModelName()
  int threads = 0;    // worker threads the measurement ran with
  std::string engine_version;

  std::string ToString() const;  // the entry's name in the file
};

struct TuningResult {
  int depth = 0;  // 0: plain decoding
  double tok_s = 0.0;
  double acceptance = 0.0;  // conditional acceptance at the deepest draft (0 for plain)
  double tokens_per_cycle = 1.0;
  // The median over tune's prompts of tok/s over plain decoding's on the same prompt; 0 in
  // records written before tune paired them (then tok_s over plain decoding's stands in).
  double speedup = 0.0;
};

struct TuningThreadResult {
  int threads = 0;
  double tok_s = 0.0;  // plain decoding
};

struct TuningRecord {
  int best_depth = 0;  // 0: no depth beat plain decoding
  // Worker threads the depths were measured with and runs should use; 0 in records written
  // before tune chose threads (then the run's own count applies).
  int threads = 0;
  std::vector<TuningThreadResult> thread_results;  // empty when the count was given
  // Batched steps at the key's thread count (a server's): v(R) of a trunk forward of R rows
  // for R = 1.., and one MTP round, in plain steps. Empty when not measured.
  std::vector<double> step_verify_costs;
  double step_draft_cost = 0.0;
  std::string verdict;
  std::vector<TuningResult> results;
  std::string measured_at;  // UTC ISO-8601
  int max_tokens = 0;
};

// What a cycle of each depth cost in plain steps, from tune's measurements: tokens per cycle over
// the speedup (the paired one where the record has it, else tok_s over plain decoding's), for
// depths 0, 1, ... up to the first one not measured; empty when fewer than two are.
std::vector<double> MeasuredCycleCosts(const TuningRecord& record);

// The file: $MTPLX_HOME/tuning.json, else ~/.mtplx/tuning.json.
std::string TuningStorePath();

// A model folder's identity: its name, and a digest of config.json and the names and sizes of
// its weight files (a re-converted or different model gets another key).
Result<std::string> TuningModelId(const std::string& model_dir);

// The stored record for `key`; nullopt when none (or the file is missing or unreadable: tuning
// is advice, never a reason to fail).
std::optional<TuningRecord> LoadTuning(const std::string& path, const TuningKey& key);

// Stores (or replaces) the record for `key`, keeping every other entry; written atomically.
Status StoreTuning(const std::string& path, const TuningKey& key, const TuningRecord& record);

// A digest of the model folder's weight files' names, sizes and modification times: changes when
// a file is rewritten even at the same size (a re-converted pack).
Result<std::string> WeightFilesStamp(const std::string& model_dir);

// The load check's greedy depth-1 acceptance (engine/mtp_check.h) for a model and draft-head
// setup, under "mtp_checks". It depends on the weights and the engine, not on the CPU (every
// kernel family gives the same logits), so it is measured once and later starts skip it.
std::optional<double> LoadMtpCheck(const std::string& path, const std::string& key);
Status StoreMtpCheck(const std::string& path, const std::string& key, double acceptance);

}  // namespace mtplx::io
