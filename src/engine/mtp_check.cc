#include "engine/mtp_check.h"

#include "base/strings.h"
#include "engine/speculative.h"

namespace mtplx::engine {

Result<MtpCheck> CheckMtp(const model::Model& model, const std::vector<int32_t>& probe,
                          int tokens) {
  MtpCheck check;
  if (!model.has_mtp()) {
    check.reason = "the checkpoint has no MTP head";
    return check;
  }
  GenerateRequest request;
  request.prompt = probe;
  request.sampling.temperature = 0.0;
  request.max_tokens = tokens;
  SpeculativeOptions options;
  options.depth = 1;
  MTPLX_ASSIGN_OR_RETURN(SpeculativeResult run,
                         GenerateSpeculative(model, request, options, nullptr));
  const auto acceptance = run.speculative.AcceptanceByDepth();
  return JudgeMtpAcceptance(model, acceptance.empty() ? 0.0 : acceptance[0]);
}

MtpCheck JudgeMtpAcceptance(const model::Model& model, double acceptance) {
  MtpCheck check;
  check.acceptance = acceptance;
  check.usable = check.acceptance >= kMinUsableAcceptance;
  if (!check.usable) {
    check.reason = StrFormat(
        "the MTP head accepted %.0f%% of greedy drafts in the load check (a healthy head accepts "
        "50-90%%): its weights, norm convention or hidden variant look wrong",
        100.0 * check.acceptance);
    if (model.draft_vocab() < model.config().vocab_size)
      check.reason += StrFormat(", or its draft vocabulary (%lld of %lld ids) is too small",
                                static_cast<long long>(model.draft_vocab()),
                                static_cast<long long>(model.config().vocab_size));
  }
  return check;
}

}  // namespace mtplx::engine
