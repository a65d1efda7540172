#include "sample/speculative_accept.h"

#include <algorithm>
#include <numeric>

namespace mtplx::sample {

double Probability(const SparseDistribution& dist, int32_t id) {
  for (size_t i = 0; i < dist.ids.size(); ++i)
    if (dist.ids[i] == id) return dist.probs[i];
  return 0.0;
}

bool AcceptDraft(const SparseDistribution& p, const SparseDistribution& q, int32_t draft,
                 double uniform) {
  return uniform * Probability(q, draft) < Probability(p, draft);
}

SparseDistribution Residual(const SparseDistribution& p, const SparseDistribution& q) {
  // Tokens outside p's support have p = 0, so (p - q)+ = 0 there: only p's support matters.
  SparseDistribution residual;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    const double r = p.probs[i] - Probability(q, p.ids[i]);
    if (r > 0.0) {
      residual.ids.push_back(p.ids[i]);
      residual.probs.push_back(r);
    }
  }
  const double mass = std::accumulate(residual.probs.begin(), residual.probs.end(), 0.0);
  if (residual.ids.empty() || !(mass > 0.0)) return p;
  for (double& r : residual.probs) r /= mass;
  return residual;
}

SparseDistribution PointMass(int32_t id) { return SparseDistribution{{id}, {1.0}}; }

}  // namespace mtplx::sample
