#include "engine/step_plan.h"

#include <algorithm>

namespace mtplx::engine {

double StepCosts::Verify(int64_t rows) const {
  if (verify.empty()) return static_cast<double>(rows);
  const int64_t n = static_cast<int64_t>(verify.size());
  if (rows <= n) return verify[std::max<int64_t>(rows, 1) - 1];
  const double slope = n >= 2 ? std::max(verify[n - 1] - verify[n - 2], 0.0) : 1.0;
  return verify[n - 1] + slope * static_cast<double>(rows - n);
}

namespace {

struct Totals {
  int64_t rows = 0;
  int rounds = 0;  // the deepest draft: MTP rounds run for the batch together
  double tokens = 0.0;
  int sequences = 0;
};

Totals Sum(const std::vector<PlanSlot>& slots) {
  Totals t;
  for (const PlanSlot& s : slots) {
    t.rows += s.rows;
    t.rounds = std::max(t.rounds, s.depth);
    t.tokens += s.expected_tokens;
    t.sequences += s.rows > 0 ? 1 : 0;
  }
  return t;
}

// The cuttable slot with the least likely last draft, or -1.
int LeastLikely(const std::vector<PlanSlot>& slots) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(slots.size()); ++i) {
    const PlanSlot& s = slots[i];
    if (!s.cuttable || s.depth == 0) continue;
    if (best < 0 || s.last_draft_odds < slots[best].last_draft_odds ||
        (s.last_draft_odds == slots[best].last_draft_odds && s.depth > slots[best].depth))
      best = i;
  }
  return best;
}

}  // namespace

int NextCut(const std::vector<PlanSlot>& slots, const StepCosts& costs, int max_rows) {
  const int cut = LeastLikely(slots);
  if (cut < 0) return -1;
  const Totals now = Sum(slots);
  if (max_rows > 0 && now.rows > max_rows) return cut;
  if (!costs.known() || now.sequences < 2) return -1;
  std::vector<PlanSlot> after = slots;
  PlanSlot& s = after[cut];
  s.rows -= 1;
  s.depth -= 1;
  s.expected_tokens -= s.last_draft_odds;
  const Totals then = Sum(after);
  const double rate_now = now.tokens / costs.Step(now.rows, now.rounds);
  const double rate_then = then.tokens / costs.Step(then.rows, then.rounds);
  return rate_then > rate_now ? cut : -1;
}

}  // namespace mtplx::engine
