// How many drafts a batched step carries. One sequence alone drafts what its depth controller
// chose. Several sequences share each forward: the weights are read once for all their rows, so
// rows are nearly free while the weights stream from memory, until the rows' arithmetic outgrows
// the weight stream and each row costs its full share. Past that point a low-odds draft of one
// sequence costs the whole batch more time than the tokens it is expected to add. The plan cuts
// the least likely drafts while the step's expected tokens per unit of time improve, priced by
// the verify costs `mtplx tune` measured on this machine (without them, only a row cap applies).
//
// Only drafts of sequences whose output does not depend on their depth are cut (greedy, or
// sampled without a seed to reproduce): the plan depends on the batch.
#pragma once

#include <cstdint>
#include <vector>

namespace mtplx::engine {

// What steps cost, in plain decode steps (one row, no drafts).
struct StepCosts {
  std::vector<double> verify;  // [R - 1] = v(R): a trunk forward of R rows
  double draft = 0.0;          // one MTP round (the batch's drafts at one depth, together)

  bool known() const { return verify.size() >= 2; }
  // v(rows); past the measured range, linear from the last two entries.
  double Verify(int64_t rows) const;
  double Step(int64_t rows, int draft_rounds) const { return Verify(rows) + draft * draft_rounds; }
};

// One sequence's part of a step, as the plan sees it.
struct PlanSlot {
  int64_t rows = 0;  // trunk rows (a verify of depth + 1, or a prefill chunk)
  int depth = 0;     // drafts this cycle
  bool cuttable = false;
  // Expected tokens of the cycle: 1 + the odds of each draft (0 while prefilling).
  double expected_tokens = 0.0;
  // The odds that the last draft is accepted along with every draft before it: the tokens it
  // adds in expectation.
  double last_draft_odds = 0.0;
};

// The slot whose last draft should go next, or -1 to keep the step as it is: a draft goes while
// the rows exceed max_rows (> 0), or when the step's expected tokens per unit of cost improve
// without it (known costs and at least two sequences in the step). Among cuttable slots, the
// least likely last draft goes first (ties: the deepest, then the first).
int NextCut(const std::vector<PlanSlot>& slots, const StepCosts& costs, int max_rows);

}  // namespace mtplx::engine
