#include "engine/speculative.h"

#include "engine/sequence.h"

namespace mtplx::engine {
std::vector<double> SpeculativeStats::AcceptanceByDepth() const {
  std::vector<double> out;
  for (int d = 1; d <= depth; ++d)
    out.push_back(proposed_by_depth[d] ? static_cast<double>(accepted_by_depth[d]) /
                                             static_cast<double>(proposed_by_depth[d])
                                       : 0.0);
  return out;
}

std::vector<double> SpeculativeStats::AcceptanceUnconditional() const {
  std::vector<double> out;
  for (int d = 1; d <= depth; ++d)
    out.push_back(cycles ? static_cast<double>(accepted_by_depth[d]) / static_cast<double>(cycles)
                         : 0.0);
  return out;
}

double SpeculativeStats::MeanDepth() const {
  int64_t total = 0, cycles_seen = 0;
  for (size_t d = 0; d < cycles_by_depth.size(); ++d) {
    total += static_cast<int64_t>(d) * cycles_by_depth[d];
    cycles_seen += cycles_by_depth[d];
  }
  return cycles_seen ? static_cast<double>(total) / static_cast<double>(cycles_seen) : 0.0;
}

double SpeculativeStats::MeanTokensPerCycle() const {
  int64_t total = 0;
  for (size_t n = 0; n < tokens_per_cycle.size(); ++n)
    total += static_cast<int64_t>(n) * tokens_per_cycle[n];
  return cycles ? static_cast<double>(total) / static_cast<double>(cycles) : 0.0;
}

Result<SpeculativeResult> RunAlone(const model::Model& model, Sequence& sequence) {
  Sequence* const one[] = {&sequence};
  while (!sequence.finished()) MTPLX_RETURN_IF_ERROR(Step(model, one));
  return sequence.TakeResult();
}

Result<SpeculativeResult> GenerateSpeculative(const model::Model& model,
                                              const GenerateRequest& request,
                                              const SpeculativeOptions& options,
                                              const TokenCallback& on_token) {
  MTPLX_ASSIGN_OR_RETURN(auto sequence, Sequence::Speculative(model, request, options, on_token));
  return RunAlone(model, *sequence);
}

}  // namespace mtplx::engine
