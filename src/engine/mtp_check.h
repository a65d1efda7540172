// The silent-failure guard of speculative decoding. A wrong norm convention, the wrong hidden
// variant or a missing / mis-quantised MTP tensor does not crash: it drafts garbage, acceptance
// falls to about 0, and speculation runs slower than plain decoding. So before speculating we
// measure greedy acceptance on a short probe and decline to speculate when it is near zero.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/model.h"

namespace mtplx::engine {

struct MtpCheck {
  bool usable = false;
  double acceptance = 0.0;  // depth-1 greedy acceptance on the probe
  std::string reason;       // why speculation is off, for the user
};

inline constexpr double kMinUsableAcceptance = 0.10;

// Whether a head with this depth-1 greedy acceptance is worth speculating with, and why not.
MtpCheck JudgeMtpAcceptance(const model::Model& model, double acceptance);

// Runs `probe` (token ids) greedily with depth 1 for `tokens` new tokens.
Result<MtpCheck> CheckMtp(const model::Model& model, const std::vector<int32_t>& probe,
                          int tokens = 24);

}  // namespace mtplx::engine
