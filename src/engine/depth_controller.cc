#include "engine/depth_controller.h"

#include <algorithm>

namespace mtplx::engine {
namespace {

constexpr int kWarmupCycles = 4;    // at the starting depth, to measure it
constexpr int kProbeInterval = 16;  // cycles between probes of the next depth
constexpr double kDecay = 0.97;     // per draft evaluated: a window of about 33 drafts
constexpr double kPriorAcceptance = 0.7;
constexpr double kPriorWeight = 2.0;  // pseudo-drafts behind the prior
constexpr double kTimeSmoothing = 0.2;

double Smooth(double old, double sample) {
  return old < 0 ? sample : old + kTimeSmoothing * (sample - old);
}

}  // namespace

DepthController::DepthController(int max_depth, int start_depth)
    : max_depth_(std::clamp(max_depth, 0, kMaxDepth)),
      current_(std::clamp(start_depth, 0, max_depth_)) {
  verify_.fill(-1.0);
}

double DepthController::acceptance(int depth) const {
  const int j = depth - 1;
  return (accepted_[j] + kPriorAcceptance * kPriorWeight) / (proposed_[j] + kPriorWeight);
}

double DepthController::expected_tokens(int depth) const {
  double expected = 1.0, chain = 1.0;
  for (int d = 1; d <= depth; ++d) {
    chain *= acceptance(d);
    expected += chain;
  }
  return expected;
}

double DepthController::cycle_seconds(int depth) const {
  // A trunk forward of m rows not measured yet: the nearest measured one, plus 10 % a row
  // (between the memory-bound case, where rows are nearly free, and the compute-bound one).
  auto verify = [&](int rows) {
    if (verify_[rows - 1] >= 0) return verify_[rows - 1];
    for (int distance = 1; distance <= kMaxDepth; ++distance)
      for (int m : {rows - distance, rows + distance})
        if (m >= 1 && m <= kMaxDepth + 1 && verify_[m - 1] >= 0)
          return verify_[m - 1] * (1.0 + 0.1 * (rows - m));
    return 1.0 + 0.1 * (rows - 1);  // nothing measured: relative units
  };
  const double draft = draft_ >= 0 ? draft_ : 0.1 * verify(1);
  return verify(depth + 1) + depth * draft;
}

int DepthController::Best() const {
  int best = 0;
  double best_rate = 0.0;
  for (int d = 0; d <= max_depth_; ++d) {
    const double rate = expected_tokens(d) / cycle_seconds(d);
    if (rate > best_rate) {
      best_rate = rate;
      best = d;
    }
  }
  return best;
}

int DepthController::Next() {
  if (cycles_ < kWarmupCycles) return current_;
  // Once each, so that every depth's cost is measured rather than extrapolated.
  for (int d = 0; d <= max_depth_; ++d)
    if (verify_[d] < 0) return d;
  current_ = Best();
  if (++since_probe_ >= kProbeInterval && current_ < max_depth_) {
    since_probe_ = 0;
    return current_ + 1;  // learn whether a deeper draft pays now
  }
  return current_;
}

void DepthController::Observe(int depth, int accepted, double draft_seconds,
                              double verify_seconds) {
  ++cycles_;
  // Drafts are evaluated in order until the first rejection. Only the depths evaluated forget a
  // little: a depth not drafted keeps what was last known of it until a probe.
  for (int d = 1; d <= depth && d <= accepted + 1; ++d) {
    proposed_[d - 1] = proposed_[d - 1] * kDecay + 1.0;
    accepted_[d - 1] = accepted_[d - 1] * kDecay + (d <= accepted ? 1.0 : 0.0);
  }
  verify_[depth] = Smooth(verify_[depth], verify_seconds);
  if (depth > 0) draft_ = Smooth(draft_, draft_seconds / depth);
}

}  // namespace mtplx::engine
