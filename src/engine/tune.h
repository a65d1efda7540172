// `mtplx tune`: on this machine, plain decoding against each draft depth, measured on fixed
// coding prompts at the pack's sampler (decode tokens per second only). Each prompt runs every
// mode back to back, in reverse order on every other prompt, and a depth is judged by the median
// over prompts of its speed over plain decoding's on the same prompt: a shared machine's memory
// rate moves in spells of seconds to minutes, and a spell then shifts one prompt's ratios, not the
// verdict. A depth is kept only if it beats plain decoding. Past the depths given, the search can
// climb: while the deepest depth measured is the one kept, the next deeper one is measured (beside
// plain decoding again, paired the same way), so a model whose acceptance holds deep is not capped
// at 3 and one whose deep drafts lose costs no extra runs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"

namespace mtplx::engine {

struct TuneOptions {
  std::vector<int> depths = {1, 2, 3};
  // While the deepest depth measured wins, measure the next deeper one, up to this depth (at most
  // the engine's max_depth()); 0 or no deeper than the depths given: the given depths only.
  int climb_to = 0;
  int max_tokens = 512;  // generated per prompt and mode (end tokens ignored: fixed lengths)
  uint64_t seed = 0;
  std::vector<std::string> prompts;  // empty: the built-in coding prompts
};

struct TuneMeasurement {
  int depth = 0;  // 0: plain decoding
  int64_t tokens = 0;
  double seconds = 0.0;              // decode time only
  double tok_s = 0.0;                // over all prompts
  std::vector<double> prompt_tok_s;  // per prompt, in prompt order
  // The median over prompts of tok/s over plain decoding's on the same prompt (1 for plain).
  double speedup = 0.0;
  std::vector<double> acceptance_by_depth;  // conditional
  double tokens_per_cycle = 0.0;
  // The conditional acceptance of the deepest draft (0 for plain decoding).
  double deepest_acceptance() const {
    return acceptance_by_depth.empty() ? 0.0 : acceptance_by_depth.back();
  }
};

struct TuneReport {
  // Plain decoding first (its tok_s over every round), then each depth in the order measured.
  std::vector<TuneMeasurement> results;
  int best_depth = 0;
  std::string verdict;
};

// The coding prompts tune measures on.
const std::vector<std::string>& TunePrompts();

// Measures plain decoding and each depth on `engine`'s model (idle: nothing else may run on it).
// `progress(done, total)` is called after each run; `total` grows when the search climbs.
Result<TuneReport> RunTune(const Engine& engine, const TuneOptions& options,
                           const std::function<void(int, int)>& progress = nullptr);

// Worker thread counts worth trying on `hardware` cores: all of them, three quarters and half
// (distinct, at least 1), most first. Decoding is memory-bound, so fewer threads than cores can
// stream the weights as fast and leave a core to the rest of the machine.
std::vector<int> ThreadCandidates(int hardware);

struct ThreadMeasurement {
  int threads = 0;
  double tok_s = 0.0;  // plain decoding
};

// The fastest thread count; among counts within 2 % of it, the fewest.
int ChooseThreads(const std::vector<ThreadMeasurement>& results);

// The median over prompts of mode_tok_s[p] / plain_tok_s[p]; 0 when the lists differ in length,
// are empty or hold a zero.
double MedianPairedSpeedup(const std::vector<double>& mode_tok_s,
                           const std::vector<double>& plain_tok_s);

// The decision rule, on each measurement's `speedup`. A depth wins only if it is faster than
// plain decoding; among depths within 2 % of the fastest, the deepest wins (near-ties go to the
// deeper depth); a depth whose deepest draft was accepted 5 % of the time or less never wins.
// Returns 0 when plain decoding wins. `results` must hold plain decoding (depth 0).
int ChooseDepth(const std::vector<TuneMeasurement>& results, std::string* verdict);

// The depth to climb to next: one past the deepest measured when that depth is `best_depth` and
// below `climb_to`; 0 when the search stops.
int NextClimbDepth(const std::vector<TuneMeasurement>& results, int best_depth, int climb_to);

}  // namespace mtplx::engine
