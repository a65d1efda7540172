#include "engine/depth_controller.h"

#include <algorithm>

namespace mtplx::engine {
namespace {

constexpr int kWarmupCycles = 4;    // at the starting depth, before acceptance is known
constexpr int kProbeInterval = 16;  // cycles between probes of the next depth
constexpr double kDecay = 0.97;     // a window of about 33 drafts (first depth) or cycles
// How a draft's probability maps to its chance of being kept belongs to the model more than to
// the text of the moment, and ten bins share the counts: a longer window of about 100 drafts.
constexpr double kProbabilityDecay = 0.99;
constexpr double kPriorAcceptance = 0.7;
constexpr double kPriorWeight = 2.0;  // pseudo-drafts behind the prior

}  // namespace

DepthController::DepthController(int max_depth, int start_depth,
                                 const std::vector<double>& cycle_costs)
    : max_depth_(std::clamp(max_depth, 0, kMaxDepth)),
      current_(std::clamp(start_depth, 0, max_depth_)) {
  for (int d = 0; d <= max_depth_; ++d) {
    if (d < static_cast<int>(cycle_costs.size())) {
      costs_[d] = cycle_costs[d];
    } else {  // one more draft costs what the last one did
      const double step = d >= 2 ? costs_[d - 1] - costs_[d - 2] : 0.2;
      costs_[d] = d == 0 ? 1.0 : costs_[d - 1] + std::max(step, 0.05);
    }
  }
}

std::array<double, DepthController::kMaxDepth + 1> DepthController::Acceptances() const {
  // Shrunk toward the depth before it (the first depth toward a fixed prior): a deeper draft is
  // seen only when every draft before it was accepted, so its own counts are few, and where they
  // have faded the depth before it is the best guess of it.
  std::array<double, kMaxDepth + 1> a{};
  double estimate = kPriorAcceptance;
  for (int d = 1; d <= max_depth_; ++d) {
    const int j = d - 1;
    estimate = (accepted_[j] + estimate * kPriorWeight) / (proposed_[j] + kPriorWeight);
    a[d] = estimate;
  }
  return a;
}

double DepthController::acceptance(int depth) const { return Acceptances()[depth]; }

double DepthController::odds(int depth) const {
  const auto a = Acceptances();
  double chain = 1.0;
  for (int d = 1; d <= depth; ++d) chain *= a[d];
  return chain;
}

double DepthController::expected_tokens(int depth) const {
  const auto a = Acceptances();
  double expected = 1.0, chain = 1.0;
  for (int d = 1; d <= depth; ++d) {
    chain *= a[d];
    expected += chain;
  }
  return expected;
}

int DepthController::Best() const {
  // One pass: E(d) = E(d - 1) + a1 ... ad.
  const auto a = Acceptances();
  int best = 0;
  double best_rate = 1.0 / costs_[0], expected = 1.0, chain = 1.0;
  for (int d = 1; d <= max_depth_; ++d) {
    chain *= a[d];
    expected += chain;
    const double rate = expected / costs_[d];
    if (rate > best_rate) {
      best_rate = rate;
      best = d;
    }
  }
  return best;
}

int DepthController::Next() {
  if (cycles_ < kWarmupCycles) return current_;
  current_ = Best();
  if (++since_probe_ >= kProbeInterval && current_ < max_depth_) {
    since_probe_ = 0;
    return current_ + 1;  // learn whether a deeper draft pays now
  }
  return current_;
}

void DepthController::Observe(int depth, int accepted) {
  ++cycles_;
  // Drafts are evaluated in order until the first rejection. The first depth forgets a little
  // per draft it sees: while plain decoding there is nothing new to learn of it, and probes
  // retry it. Deeper depths forget per cycle, seen or not: one cut short by a stretch of hard
  // text then drifts back toward the depth before it within a few dozen cycles instead of
  // staying at its low point until rare probes get past every draft before it.
  for (int d = 1; d <= max_depth_; ++d) {
    const bool seen = d <= depth && d <= accepted + 1;
    if (!seen && d == 1) continue;
    proposed_[d - 1] *= kDecay;
    accepted_[d - 1] *= kDecay;
    if (!seen) continue;
    proposed_[d - 1] += 1.0;
    accepted_[d - 1] += d <= accepted ? 1.0 : 0.0;
  }
}

namespace {

int ProbabilityBin(double draft_probability, int bins) {
  return std::clamp(static_cast<int>(draft_probability * bins), 0, bins - 1);
}

}  // namespace

void DepthController::ObserveDraft(double draft_probability, bool kept) {
  for (int b = 0; b < kProbabilityBins; ++b) {
    bin_seen_[b] *= kProbabilityDecay;
    bin_kept_[b] *= kProbabilityDecay;
  }
  const int b = ProbabilityBin(draft_probability, kProbabilityBins);
  bin_seen_[b] += 1.0;
  bin_kept_[b] += kept ? 1.0 : 0.0;
}

double DepthController::DraftKeepChance(double draft_probability) const {
  // Shrunk, where this bin has few counts, toward the first depth's acceptance shaped by the
  // probability as the x8 model shows it at T 0.6 (kept 51 % of the time under 0.1, 91-98 % over
  // 0.7, against 75 % overall): a cycle's first drafts already stop early on unsure drafts.
  const int b = ProbabilityBin(draft_probability, kProbabilityBins);
  const double prior = std::min(1.0, acceptance(1) * (0.7 + 0.55 * draft_probability));
  return (bin_kept_[b] + prior * kPriorWeight) / (bin_seen_[b] + kPriorWeight);
}

bool DepthController::WorthAnotherDraft(int drafted, double chain) const {
  if (drafted < 1 || drafted >= max_depth_) return false;
  // The rate a cycle of the current depth yields: tokens per step of cost.
  const int depth = std::max(current_, 1);
  const double rate = expected_tokens(depth) / costs_[depth];
  const double gain = chain * acceptance(drafted + 1);
  return gain >= rate * (costs_[drafted + 1] - costs_[drafted]);
}

int PriorBestDepth(int max_depth, const std::vector<double>& cycle_costs) {
  return std::max(1, DepthController(max_depth, 1, cycle_costs).Best());
}

CostRegime CostRegimeOf(bool weights_stream, bool kernel_has_dot_product,
                        bool splits_wide_vectors) {
  if (!weights_stream) return CostRegime::kCached;
  if (kernel_has_dot_product) return CostRegime::kStreamed;
  return splits_wide_vectors ? CostRegime::kStreamedHalfWidth : CostRegime::kStreamedArithmetic;
}

namespace {

struct RowCosts {
  double first_row;  // the second row of a verify, and the per-row work outside the matrices
  double row;        // the third row
  double growth;     // how much more each row after the third costs than the one before it
  double draft;      // a draft step per unit of its bytes' share of a step
};

RowCosts RowCostsOf(CostRegime regime) {
  switch (regime) {
    // Fitted on the x8 widened model, 2 threads (docs/performance.md): T(1..4) measured 1.17,
    // 1.24-1.32, 1.30-1.32, 1.33-1.47 against 1.16, 1.26, 1.37, 1.47 here.
    case CostRegime::kStreamed:
      return {0.06, 0.01, 0.0, 1.0};
    // AVX2 without VNNI (Zen 3, x8 widened model, 2 threads): v(2..6) measured 1.10-1.17,
    // 1.19-1.32, 1.30-1.45, 1.49-1.66, 1.86-2.05 against 1.12, 1.25, 1.43, 1.66, 1.94 here (rows
    // beyond four no longer keep their sums in registers); c 0.075-0.091.
    case CostRegime::kStreamedArithmetic:
      return {0.12, 0.13, 0.05, 1.2};
    // AVX2 on Zen 1 (one 128-bit integer multiply pipe; x8 widened model at 4, 6 and 8 bits, 2
    // threads): v(2..5) measured 1.13-1.37, 1.57-1.87, 1.94-2.54, 2.30-3.02 against 1.20, 1.70,
    // 2.22, 2.76 here: the second row hides under the weight stream, each later one costs its
    // arithmetic, about half a step; c 0.077-0.155.
    case CostRegime::kStreamedHalfWidth:
      return {0.2, 0.5, 0.02, 1.2};
    case CostRegime::kCached:
      return {0.3, 0.3, 0.0, 1.2};
  }
  return {0.3, 0.3, 0.0, 1.2};
}

}  // namespace

std::vector<double> EstimateCycleCosts(double draft_bytes_ratio, CostRegime regime, int max_depth) {
  const RowCosts r = RowCostsOf(regime);
  const double draft = draft_bytes_ratio * r.draft + 0.01;
  std::vector<double> costs;
  for (int d = 0; d <= max_depth; ++d) {
    const int later_rows = d - 1;  // a verify of d + 1 rows: rows 3 .. d + 1
    const double rows = later_rows * r.row + r.growth * later_rows * (later_rows - 1) / 2;
    costs.push_back(d == 0 ? 1.0 : 1.0 + r.first_row + rows + d * draft);
  }
  return costs;
}

}  // namespace mtplx::engine
