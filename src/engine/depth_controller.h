// The draft depth of each speculative cycle, chosen from what this run measures as it goes: the
// conditional acceptance at each depth (decayed counts, so a change of text shows up within a
// few dozen drafts) and the cost of a cycle (trunk forwards of m rows, draft steps). A cycle of
// depth d yields E(d) = 1 + a1 + a1 a2 + ... + a1 ... ad tokens in expectation and costs
// T(d) = t_verify(d + 1) + d t_draft; the controller picks the d in 0..max with the most tokens
// per second. Depth 0 is plain decoding (one trunk row, no draft), so a run whose drafts stop
// paying for themselves falls back to plain decoding; after a warm-up at the starting depth each
// depth runs once so that its cost is measured, and every few cycles the next depth is retried
// so that acceptance that recovers is noticed. Exactness does not depend on the depth: any
// schedule of depths samples from the target distribution.
#pragma once

#include <array>
#include <cstdint>

namespace mtplx::engine {

class DepthController {
 public:
  static constexpr int kMaxDepth = 8;

  DepthController(int max_depth, int start_depth);

  // The depth of the next cycle.
  int Next();
  // A finished cycle: its depth, how many of its drafts were accepted (0..depth), and the time
  // of its draft steps and of its trunk forward over depth + 1 rows.
  void Observe(int depth, int accepted, double draft_seconds, double verify_seconds);

  // Estimates, for tests and reports.
  double acceptance(int depth) const;       // conditional, depth 1..max
  double expected_tokens(int depth) const;  // E(d)
  double cycle_seconds(int depth) const;    // T(d) from what was measured
  int max_depth() const { return max_depth_; }

 private:
  int Best() const;

  int max_depth_;
  int current_;
  int64_t cycles_ = 0;
  int64_t since_probe_ = 0;
  // Decayed counts per depth (index d - 1).
  std::array<double, kMaxDepth> proposed_{}, accepted_{};
  // Seconds of a trunk forward over m rows (index m - 1) and of one draft step; < 0: not
  // measured yet.
  std::array<double, kMaxDepth + 1> verify_{};
  double draft_ = -1.0;
};

}  // namespace mtplx::engine
