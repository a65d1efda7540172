// The draft depth of each speculative cycle, from the conditional acceptance this run observes
// at each depth (decayed counts, so a change of text shows up within a few dozen drafts) and the
// relative cost of a cycle of each depth. A cycle of depth d yields E(d) = 1 + a1 + a1 a2 + ... +
// a1 ... ad tokens in expectation and costs T(d) = v(d + 1) + d c plain steps; the controller
// picks the d in 0..max with the most tokens per step. Depth 0 is plain decoding (one trunk row,
// no draft), so a run whose drafts stop paying for themselves falls back to plain decoding; every
// few cycles it retries the next depth so that acceptance that recovers is noticed. A deeper
// depth's estimate leans on the one before it where its own counts have faded, so a stretch of
// hard text does not leave it at its low point once the text is easy again.
//
// The costs are fixed for the run (measured by `mtplx tune`, else estimated from the model's
// shape), never timed on the fly: the schedule of depths then depends only on the seed and the
// text, so a seeded sampled request gives the same output every time. Exactness does not depend
// on the depth: any schedule samples from the target distribution.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace mtplx::engine {

class DepthController {
 public:
  static constexpr int kMaxDepth = 8;

  // `cycle_costs[d]`: T(d) in plain steps for d = 0..max_depth (missing entries are
  // extrapolated from the last ones).
  DepthController(int max_depth, int start_depth, const std::vector<double>& cycle_costs);

  // The depth of the next cycle.
  int Next();
  // A finished cycle: its depth and how many of its drafts were accepted (0..depth).
  void Observe(int depth, int accepted);

  // Within a cycle, how sure the head was of a draft (a sampled draft's probability under the
  // draft distribution, a greedy draft's softmax maximum) says how likely the verify is to keep
  // it (a draft the head was unsure of is rejected more often), so the depth the cycle started
  // with can end early: after each draft, one more is worth its cost only if the chance that it
  // and every draft before it survive, times the tokens a step of cost yields now, covers what
  // the extra draft and verify row cost. The drafts alone decide where a cycle stops, never the
  // target, so the output still follows the target exactly.
  //
  // A verified draft of this probability: kept or not.
  void ObserveDraft(double draft_probability, bool kept);
  // The estimated chance that the verify keeps a draft of this probability, once every draft
  // before it was kept.
  double DraftKeepChance(double draft_probability) const;
  // Whether a cycle that has drafted `drafted` drafts, all kept with chance `chain`, should
  // draft one more.
  bool WorthAnotherDraft(int drafted, double chain) const;

  // Estimates, for tests and reports.
  double acceptance(int depth) const;       // conditional, depth 1..max
  double expected_tokens(int depth) const;  // E(d)
  double odds(int depth) const;             // a1 ... ad: draft d accepted with all before it
  double cycle_cost(int depth) const { return costs_[depth]; }
  int max_depth() const { return max_depth_; }
  // The depth with the most expected tokens per unit of cost under what is known now.
  int Best() const;

 private:
  // Conditional acceptance of depths 1..max (index 0 unused), all in one pass.
  std::array<double, kMaxDepth + 1> Acceptances() const;

  int max_depth_;
  int current_;
  int64_t cycles_ = 0;
  int64_t since_probe_ = 0;
  // Decayed counts per depth (index d - 1).
  std::array<double, kMaxDepth> proposed_{}, accepted_{};
  // Decayed counts of verified drafts by their draft probability, in tenths.
  static constexpr int kProbabilityBins = 10;
  std::array<double, kProbabilityBins> bin_seen_{}, bin_kept_{};
  std::array<double, kMaxDepth + 1> costs_{};
};

// The depth to start adapting from when neither `--depth` nor `mtplx tune` names one: the best
// under the prior acceptance and these costs, at least 1 so that the first cycles learn what the
// drafts are worth.
int PriorBestDepth(int max_depth, const std::vector<double>& cycle_costs);

// Where a step's time goes, which sets what one more verify row costs.
enum class CostRegime {
  kStreamed,            // weights stream from memory; the kernel has an int8 dot product
  kStreamedArithmetic,  // weights stream, but arithmetic without a dot product keeps pace
  kStreamedHalfWidth,   // weights stream, and that arithmetic runs on 128-bit halves
  kCached,              // weights sit in cache: arithmetic dominates
};

// The regime of a model from whether its decode step streams its weights from memory, whether
// this machine's int8 kernel has a dot-product instruction and, without one, whether the CPU
// splits each 256-bit instruction into two 128-bit halves.
CostRegime CostRegimeOf(bool weights_stream, bool kernel_has_dot_product, bool splits_wide_vectors);

// T(d) for d = 0..max_depth from a model's shape: a verify row beyond the first costs a little
// of a step when the weights stream and the kernel has a dot product (they are read once for all
// rows), an eighth without one (more for each row beyond the third, as measured), half a step
// where that arithmetic runs on 128-bit halves, and about a third when the weights sit in cache;
// a draft step costs its share of the weight bytes a step reads.
std::vector<double> EstimateCycleCosts(double draft_bytes_ratio, CostRegime regime, int max_depth);

}  // namespace mtplx::engine
