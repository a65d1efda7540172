// `mtplx bench`: what one decode step costs on this machine, measured the way the engine drives
// the model, and what speculation would buy at a given acceptance profile.
//
// Every ratio is taken between samples measured next to each other (1 row, then m rows; an AR
// step, then a draft step), and the median over rounds is reported, so drift and noise from
// other work on the machine cancel instead of biasing one side.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/memory_bandwidth.h"
#include "base/status.h"
#include "engine/step_plan.h"
#include "model/model.h"

namespace mtplx::engine {

struct BenchOptions {
  int64_t context = 64;  // tokens in the state when decode, verify and draft run
  // Zero KV rows stand for the first context - 1 tokens instead of a prefill of them: a step's
  // time does not depend on the cached values, and a 32k context on a 9B model is ready in
  // seconds rather than half an hour. Only the last context token is run.
  bool synthetic_context = false;
  int max_verify_rows = 8;           // v(m) for m = 1 .. max_verify_rows
  int rounds = 5;                    // interleaved samples per quantity; the median is reported
  double min_sample_seconds = 0.05;  // a sample repeats its call until this much time passed
  // A decode sample runs steps for at least this long (the state rewinds to `context` every 256
  // steps). A memory bus shared with other tenants swings within a second; a sample of a few
  // steps catches one swing, the median step of a second's worth does not follow it.
  double decode_sample_seconds = 1.0;
  std::vector<int64_t> prefill_sizes = {512, 2048};
  uint64_t bandwidth_bytes = uint64_t{512} << 20;
  bool show_progress = false;  // a progress bar on stderr
  // Decode, verify and draft steps only: no bandwidth probe, matmul arithmetic or prefill.
  bool steps_only = false;
};

struct BenchReport {
  int threads = 0;
  int64_t context = 0;
  bool synthetic_context = false;  // zero KV rows stood in for the context (BenchOptions)
  MemoryBandwidth bandwidth;
  // The read probe again once the step samples are taken (0: not run, as with steps_only). A
  // virtual machine's memory rate can move for seconds at a time while others share the host;
  // when the two probes disagree, the step samples may mix both rates (a notice says so).
  double read_gbs_after_steps = 0.0;
  double decode_tok_s = 0.0;
  uint64_t weight_bytes_per_token = 0;  // Model::DecodeWeightBytes()
  uint64_t state_bytes_per_token = 0;   // KV rows and DeltaNet state one step reads at `context`
  std::vector<double> verify_cost;      // [m - 1] = v(m) = time(verify m rows) / time(1 row)
  // The roofline of a verify: [m - 1] = max(S, A(m)) / max(S, A(1)), where S streams the decode
  // weights once at the read bandwidth and A(m) is the matmul arithmetic of m rows with the
  // weights in cache (the median call on a slice of one of the model's matrices at its bits and
  // group size, as large as the caches hold, scaled to all decode weights). Empty for
  // unquantized models.
  std::vector<double> verify_bound;
  std::vector<double> arithmetic_seconds;  // [m - 1] = A(m)
  // time(one MTP draft step) / time(one AR step); nullopt when the model has no MTP head.
  std::optional<double> draft_cost_ratio;
  std::vector<std::pair<int64_t, double>> prefill_tok_s;  // (prompt tokens, tok/s)
  uint64_t resident_bytes = 0;                            // process RSS with the model loaded
  std::vector<std::string> notices;  // what was skipped and why, what makes a number doubtful

  uint64_t bytes_per_token() const { return weight_bytes_per_token + state_bytes_per_token; }
  // bytes_per_token x decode_tok_s / read bandwidth: the fraction of the machine's bandwidth
  // plain decoding uses.
  double bandwidth_utilization() const;
};

Result<BenchReport> RunBench(const model::Model& model, const BenchOptions& options);

// What a trunk pass of R = 1..max_rows rows and one draft round cost at the model's thread count,
// in plain steps: bench's step samples alone, in `rounds` interleaved rounds (the median), with
// v(R) made non-decreasing (a noisy sample must not make rows look free). `decode_seconds`: how
// long the plain steps the draft is compared with are sampled each round.
Result<StepCosts> MeasureStepCosts(const model::Model& model, int max_rows, int rounds,
                                   double decode_seconds);

// BenchReport::verify_bound from its bandwidth, decode weight bytes and arithmetic_seconds.
std::vector<double> VerifyBound(const BenchReport& report);

// The notice for read probes before and after the step samples that differ by more than
// kBandwidthMovedFraction of the first (a probe's own passes agree within a few percent), or
// nullopt.
constexpr double kBandwidthMovedFraction = 0.15;
std::optional<std::string> BandwidthMovedNotice(double before_gbs, double after_gbs);

// Speedup of depth-D speculation over plain decoding, in AR-step units:
//   E = 1 + a1 + a1 a2 + ... + a1 ... aD   (expected tokens per cycle)
//   speedup = E / (v(D + 1) + D c)
// acceptance[i] is the conditional acceptance at depth i + 1; depths past its end reuse its last
// entry. nullopt when v(D + 1) was not measured or the inputs are empty.
std::optional<double> ProjectedSpeedup(std::span<const double> acceptance,
                                       std::span<const double> verify_cost, double draft_cost_ratio,
                                       int depth);

}  // namespace mtplx::engine
