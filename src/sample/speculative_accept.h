// The exact acceptance rule of speculative sampling. A draft d proposed from q is accepted with
// probability min(1, p(d) / q(d)); after a rejection the correction is drawn from
// normalise((p - q)+). The emitted token is then distributed exactly as p. Both distributions
// are the sparse float64 outputs of the same Shape() transform.
#pragma once

#include <cstdint>

#include "sample/sampler.h"

namespace mtplx::sample {

// p(id), 0 when id is outside the support.
double Probability(const SparseDistribution& dist, int32_t id);

// One uniform u in [0, 1): accept iff u * q(d) < p(d) (so p(d) = 0 never accepts, p >= q always
// does).
bool AcceptDraft(const SparseDistribution& p, const SparseDistribution& q, int32_t draft,
                 double uniform);

// normalise(max(p - q, 0)) over p's support; p itself when that has no mass.
SparseDistribution Residual(const SparseDistribution& p, const SparseDistribution& q);

// A point mass on `id` (the draft distribution of a greedy drafter).
SparseDistribution PointMass(int32_t id);

}  // namespace mtplx::sample
