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
  // q by id, for lookups in O(log |q|): untruncated distributions span the whole vocabulary.
  std::vector<std::pair<int32_t, double>> q_by_id(q.ids.size());
  for (size_t j = 0; j < q.ids.size(); ++j) q_by_id[j] = {q.ids[j], q.probs[j]};
  std::sort(q_by_id.begin(), q_by_id.end());
  auto q_of = [&](int32_t id) {
    const auto it =
        std::lower_bound(q_by_id.begin(), q_by_id.end(), std::pair<int32_t, double>(id, -1.0));
    return it != q_by_id.end() && it->first == id ? it->second : 0.0;
  };
  SparseDistribution residual;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    const double r = p.probs[i] - q_of(p.ids[i]);
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
